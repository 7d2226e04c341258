// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Preparing a metadata device, for chj format and chj create: the region
 * size to use and the check that nothing is overwritten by accident.
 */
#include "cli.h"

uint32_t cli_pick_region(uint64_t origin_sectors, uint32_t given)
{
	int raised;
	uint32_t rs;
	char h[32];

	if (given)
		return given;
	rs = chj_default_region_sectors(origin_sectors, &raised);
	if (raised)
		fprintf(stderr, "chj: region size raised to %s so that the kernel's region bitmaps stay within 64 MiB\n",
			chj_human_size((uint64_t)rs << CHJ_SECTOR_SHIFT, h, sizeof(h)));
	return rs;
}

int cli_check_overwrite(const char *path, int force, int allow_chj)
{
	struct chj_error e = { 0 };
	struct chj_meta *m;
	struct chj_sb sb;
	char what[64];
	int found = 0, is_chj = 0;

	if (chj_meta_open(&m, path, 0, &e))
		return cli_fail(&e);
	is_chj = !chj_sb_read(m, &sb, NULL);
	chj_meta_close(m);
	if (is_chj && !allow_chj && !force) {
		fprintf(stderr, "chj: %s: holds chj metadata (epoch %llu); use --force to format it anew, dropping all history\n",
			path, (unsigned long long)sb.current_epoch);
		return EXIT_ERROR;
	}
	if (is_chj)
		return 0;
	if (chj_probe_signature(path, &found, what, sizeof(what), &e))
		return cli_fail(&e);
	if (found && !force) {
		fprintf(stderr, "chj: %s: holds %s; use --force to overwrite it\n", path, what);
		return EXIT_ERROR;
	}
	if (found && chj_wipe_signatures(path, &e))
		return cli_fail(&e);
	return 0;
}
