// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj create: format the metadata device if it needs it, then create and
 * resume the dm-chj device.  Running it again with the same arguments is a
 * quiet success (boot-time activation relies on that).
 */
#include <string.h>

#include "cli.h"

struct copts {
	const char *name, *meta, *origin;
	uint32_t rs, chunk_sectors, mark_ahead;
	int force;
};

static int create_args(const struct chj_cmd *c, int argc, char **argv, struct copts *o)
{
	static const struct option lo[] = {
		{ "region-size", required_argument, NULL, 'r' },
		{ "chunk-size", required_argument, NULL, 'c' },
		{ "mark-ahead", required_argument, NULL, 'a' },
		{ "force", no_argument, NULL, 'f' },
		{ 0 }
	};
	int opt;

	while ((opt = cli_getopt(c, argc, argv, "", lo)) != -1) {
		switch (opt) {
		case 'r':
			if (cli_region_size(c, optarg, &o->rs))
				return c->usage_exit;
			break;
		case 'c':
			if (cli_chunk_size(c, optarg, &o->chunk_sectors))
				return c->usage_exit;
			break;
		case 'a':
			if (cli_mark_ahead(c, optarg, &o->mark_ahead))
				return c->usage_exit;
			break;
		case 'f': o->force = 1; break;
		default: return c->usage_exit;
		}
	}
	if (argc - optind != 3)
		return cli_usage(c, argc - optind < 3 ? "NAME, METADATA_DEV and ORIGIN_DEV are required" :
				 "too many arguments");
	o->name = argv[optind];
	o->meta = argv[optind + 1];
	o->origin = argv[optind + 2];
	if (!o->name[0] || strchr(o->name, '/'))
		return cli_usage(c, "NAME '%s': must be non-empty, without '/'", o->name);
	return 0;
}

static int block_dev(const char *path, uint64_t *bytes, dev_t *dev)
{
	struct chj_error e = { 0 };

	if (chj_dev_size(path, bytes, dev, &e))
		return cli_fail(&e);
	if (!*dev) {
		fprintf(stderr, "chj: %s: not a block device\n", path);
		return EXIT_ERROR;
	}
	return 0;
}

/* dm-chj refuses a chunk smaller than a region: say so before formatting. */
static int chunk_fits(const struct copts *o, uint32_t rs)
{
	if (!o->chunk_sectors || o->chunk_sectors >= rs)
		return 0;
	fprintf(stderr, "chj: --chunk-size: smaller than the region size (%u sectors)\n", rs);
	return EXIT_ERROR;
}

/*
 * Metadata that is already chj keeps its region size and history; anything
 * else is formatted (after the signature check).  Sets t->region_sectors.
 */
static int prepare_metadata(const struct copts *o, struct chj_dm_table *t)
{
	struct chj_error e = { 0 };
	struct chj_format_opts fo = { .origin_sectors = t->len };
	struct chj_meta *m = NULL;
	struct chj_sb sb;
	int rc = chj_meta_open(&m, o->meta, 0, &e), is_chj;

	if (rc)
		return cli_fail(&e);
	is_chj = !chj_sb_read(m, &sb, NULL);
	chj_meta_close(m);
	if (is_chj) {
		if (o->rs && o->rs != sb.region_sectors) {
			fprintf(stderr, "chj: %s: metadata uses regions of %u sectors, not %u (format it anew to change)\n",
				o->meta, sb.region_sectors, o->rs);
			return EXIT_ERROR;
		}
		if (sb.origin_sectors > t->len) {
			fprintf(stderr, "chj: %s: origin is smaller (%llu sectors) than the metadata tracks (%llu); shrinking is not supported\n",
				o->origin, (unsigned long long)t->len,
				(unsigned long long)sb.origin_sectors);
			return EXIT_ERROR;
		}
		t->region_sectors = sb.region_sectors;
		return chunk_fits(o, sb.region_sectors);
	}
	rc = cli_check_overwrite(o->meta, o->force, 0);
	if (rc)
		return rc;
	fo.region_sectors = t->region_sectors = cli_pick_region(t->len, o->rs);
	rc = chunk_fits(o, t->region_sectors);
	if (rc)
		return rc;
	rc = chj_meta_open(&m, o->meta, 1, &e);
	if (!rc)
		rc = chj_format(m, &fo, &e);
	chj_meta_close(m);
	return rc ? cli_fail(&e) : 0;
}

int cmd_create(int argc, char **argv)
{
	const struct chj_cmd *c = chj_find_cmd("create");
	struct copts o = { 0 };
	struct chj_dm_table t = { 0 }, cur;
	struct chj_error e = { 0 };
	uint64_t obytes, mbytes;
	int existed, rc = create_args(c, argc, argv, &o);

	if (rc)
		return rc;
	t.chunk_sectors = o.chunk_sectors;
	t.mark_ahead = o.mark_ahead;
	if ((rc = block_dev(o.origin, &obytes, &t.origin)) ||
	    (rc = block_dev(o.meta, &mbytes, &t.metadata)))
		return rc;
	if (t.origin == t.metadata) {
		fprintf(stderr, "chj: %s: cannot be both the metadata and the origin\n", o.meta);
		return EXIT_ERROR;
	}
	t.len = obytes >> CHJ_SECTOR_SHIFT;
	if (!t.len) {
		fprintf(stderr, "chj: %s: origin is empty\n", o.origin);
		return EXIT_ERROR;
	}
	/* Already there?  Compare before touching the metadata device. */
	rc = chj_dm_get_table(o.name, &cur, &e);
	if (rc == CHJ_ERR_NOT_FOUND) {
		rc = prepare_metadata(&o, &t);
		if (rc)
			return rc;
	} else {
		t.region_sectors = o.rs;	/* 0 matches the table's */
	}
	rc = chj_dm_create(o.name, &t, &existed, &e);
	if (rc)
		return cli_fail(&e);
	return cli_finish(EXIT_OK);
}
