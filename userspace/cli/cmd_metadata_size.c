// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj metadata-size: how big a metadata device an origin needs. */
#include <math.h>
#include <stdlib.h>

#include "cli.h"

struct msize {
	uint64_t origin_sectors, epochs;
	double pct;
	uint32_t rs;
	int numeric;
};

/* Worst-case extents when k of n regions change: none adjacent. */
static uint64_t worst_extents(uint64_t nr, double pct)
{
	uint64_t k = (uint64_t)ceil((double)nr * pct / 100.0);

	if (k > nr)
		k = nr;
	return k < nr - k + 1 ? k : nr - k + 1;
}

static int msize_args(const struct chj_cmd *c, int argc, char **argv, struct msize *s)
{
	static const struct option lo[] = {
		{ "origin-size", required_argument, NULL, 'o' },
		{ "region-size", required_argument, NULL, 'r' },
		{ "epochs", required_argument, NULL, 'e' },
		{ "changed", required_argument, NULL, 'c' },
		{ "numeric", no_argument, NULL, 'n' },
		{ 0 }
	};
	char *end;
	int opt;

	while ((opt = cli_getopt(c, argc, argv, "n", lo)) != -1) {
		switch (opt) {
		case 'o':
			/* What chj format and chj create accept, no more. */
			if (cli_origin_size(c, optarg, &s->origin_sectors))
				return c->usage_exit;
			break;
		case 'r':
			if (cli_region_size(c, optarg, &s->rs))
				return c->usage_exit;
			break;
		case 'e':
			if (chj_parse_u64(optarg, &s->epochs) || s->epochs > 1000000)
				return cli_usage(c, "--epochs %s: not a number up to 1000000", optarg);
			break;
		case 'c':
			s->pct = strtod(optarg, &end);
			if (*end || end == optarg || !(s->pct >= 0 && s->pct <= 100))
				return cli_usage(c, "--changed %s: not a percentage from 0 to 100", optarg);
			break;
		case 'n': s->numeric = 1; break;
		default: return c->usage_exit;
		}
	}
	if (optind != argc)
		return cli_usage(c, "unexpected argument '%s'", argv[optind]);
	if (!s->origin_sectors)
		return cli_usage(c, "--origin-size SIZE is required");
	return 0;
}

int cmd_metadata_size(int argc, char **argv)
{
	const struct chj_cmd *c = chj_find_cmd("metadata-size");
	struct msize s = { .epochs = 8, .pct = 1.0 };
	uint64_t origin, nr, bb, jb, total;
	char h[5][32];
	int rc = msize_args(c, argc, argv, &s);

	if (rc)
		return rc;
	origin = s.origin_sectors;
	s.rs = cli_pick_region(origin, s.rs);
	nr = chj_regions_for(origin, s.rs);
	if (nr > (1ull << 40)) {
		fprintf(stderr, "chj: metadata-size: region size too small for this origin\n");
		return EXIT_ERROR;
	}
	bb = chj_bitmap_blocks_for(nr);
	jb = s.epochs * chj_journal_blocks_for(worst_extents(nr, s.pct));
	total = chj_metadata_blocks_for(origin, s.rs, jb);
	jb = total - CHJ_SB_COPIES - bb;	/* at least the minimum */
	if (s.numeric) {
		printf("%llu\n", (unsigned long long)total * CHJ_BLOCK_SIZE);
		return cli_finish(EXIT_OK);
	}
	printf("metadata size   %s (%llu bytes)\n", chj_human_size(total * CHJ_BLOCK_SIZE, h[0], 32),
	       (unsigned long long)total * CHJ_BLOCK_SIZE);
	printf("  superblocks   %s\n", chj_human_size(CHJ_SB_COPIES * CHJ_BLOCK_SIZE, h[1], 32));
	printf("  bitmap        %s: %llu regions of %s\n", chj_human_size(bb * CHJ_BLOCK_SIZE, h[2], 32),
	       (unsigned long long)nr, chj_human_size((uint64_t)s.rs << 9, h[3], 32));
	printf("  journal       %s: %llu epochs of %g%% of regions changed, worst case\n",
	       chj_human_size(jb * CHJ_BLOCK_SIZE, h[4], 32), (unsigned long long)s.epochs, s.pct);
	return cli_finish(EXIT_OK);
}
