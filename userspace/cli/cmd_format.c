// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj format: empty metadata for an origin, after a signature check. */
#include <string.h>

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
		fprintf(stderr, "chj: region size raised to %s so that the kernel bitmap stays within 64 MiB\n",
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

int cmd_format(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "origin-size", required_argument, NULL, 'o' },
		{ "region-size", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const struct chj_cmd *c = chj_find_cmd("format");
	struct chj_format_opts fo = { 0 };
	struct chj_error e = { 0 };
	struct chj_meta *m = NULL;
	uint64_t bytes = 0;
	int opt, force = 0, rc;
	char h1[32], h2[32];
	const char *path;

	while ((opt = cli_getopt(c, argc, argv, "h", lo)) != -1) {
		switch (opt) {
		case 'o':
			if (chj_parse_size(optarg, &bytes) || !bytes || bytes % 512)
				return cli_usage(c, "--origin-size %s: not a size in whole sectors", optarg);
			break;
		case 'r':
			if (cli_region_size(c, optarg, &fo.region_sectors))
				return c->usage_exit;
			break;
		case 'f': force = 1; break;
		case 'h': return cli_finish(EXIT_OK);
		default: return c->usage_exit;
		}
	}
	if (optind != argc - 1)
		return cli_usage(c, optind == argc ? "METADATA_DEV is required" : "too many arguments");
	if (!bytes)
		return cli_usage(c, "--origin-size SIZE is required");
	path = argv[optind];
	fo.origin_sectors = bytes / 512;
	fo.region_sectors = cli_pick_region(fo.origin_sectors, fo.region_sectors);
	rc = cli_check_overwrite(path, force, 0);
	if (rc)
		return rc;
	rc = chj_meta_open(&m, path, 1, &e);
	if (!rc)
		rc = chj_format(m, &fo, &e);
	if (rc) {
		chj_meta_close(m);
		return cli_fail(&e);
	}
	printf("%s: formatted for %s in regions of %s; journal of %llu blocks\n", path,
	       chj_human_size(bytes, h1, sizeof(h1)),
	       chj_human_size((uint64_t)fo.region_sectors << CHJ_SECTOR_SHIFT, h2, sizeof(h2)),
	       (unsigned long long)(chj_meta_dev_blocks(m) - CHJ_SB_COPIES -
				    chj_bitmap_blocks_for(chj_regions_for(fo.origin_sectors,
									  fo.region_sectors))));
	chj_meta_close(m);
	return cli_finish(EXIT_OK);
}
