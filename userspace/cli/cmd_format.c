// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj format: empty metadata for an origin, after a signature check. */
#include "cli.h"

int cmd_format(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "origin-size", required_argument, NULL, 'o' },
		{ "region-size", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ 0 }
	};
	const struct chj_cmd *c = chj_find_cmd("format");
	struct chj_format_opts fo = { 0 };
	struct chj_error e = { 0 };
	struct chj_meta *m = NULL;
	int opt, force = 0, rc;
	char h1[32], h2[32];
	const char *path;

	while ((opt = cli_getopt(c, argc, argv, "", lo)) != -1) {
		switch (opt) {
		case 'o':
			if (cli_origin_size(c, optarg, &fo.origin_sectors))
				return c->usage_exit;
			break;
		case 'r':
			if (cli_region_size(c, optarg, &fo.region_sectors))
				return c->usage_exit;
			break;
		case 'f': force = 1; break;
		default: return c->usage_exit;
		}
	}
	if (optind != argc - 1)
		return cli_usage(c, optind == argc ? "METADATA_DEV is required" : "too many arguments");
	if (!fo.origin_sectors)
		return cli_usage(c, "--origin-size SIZE is required");
	path = argv[optind];
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
	       chj_human_size(fo.origin_sectors << CHJ_SECTOR_SHIFT, h1, sizeof(h1)),
	       chj_human_size((uint64_t)fo.region_sectors << CHJ_SECTOR_SHIFT, h2, sizeof(h2)),
	       (unsigned long long)(chj_meta_dev_blocks(m) - CHJ_SB_COPIES -
				    chj_bitmap_blocks_for(chj_regions_for(fo.origin_sectors,
									  fo.region_sectors))));
	chj_meta_close(m);
	return cli_finish(EXIT_OK);
}
