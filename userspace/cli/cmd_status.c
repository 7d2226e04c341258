// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj status: a libsmartcols table (or JSON) of chj devices. */
#include <dirent.h>
#include <libsmartcols.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "cli.h"

struct row {
	const char *name;
	struct chj_dm_table t;
	struct chj_dm_status s;
};

enum { C_NAME, C_ORIGIN, C_META, C_REGION, C_EPOCH, C_OLDEST, C_MARKED, C_REGIONS,
       C_JUSED, C_JBLOCKS, C_MODE, C_CHUNK, C_MARK_AHEAD, C_FEATURES, NCOLS };

/*
 * The table's headers, and its JSON keys (docs/json.md: one key style,
 * units in the names); old: the key release 1.0.0 gave it, printed too for
 * one release (scripts may read it), NULL when the key did not change.
 */
static const struct { const char *name, *key, *old; int num; } cols[NCOLS] = {
	{ "NAME", "name", NULL, 0 },
	{ "ORIGIN", "origin", NULL, 0 },
	{ "METADATA", "metadata", NULL, 0 },
	{ "REGION-SIZE", "region_size_bytes", "region-size", 1 },
	{ "EPOCH", "current_epoch", "epoch", 1 },
	{ "OLDEST", "oldest_epoch", "oldest", 1 },
	{ "MARKED", "marked_regions", "marked", 1 },
	{ "REGIONS", "nr_regions", "regions", 1 },
	{ "JOURNAL-USED", "journal_used_blocks", "journal-used", 1 },
	{ "JOURNAL-BLOCKS", "journal_blocks", "journal-blocks", 1 },
	{ "MODE", "mode", NULL, 0 },
	{ "CHUNK-SIZE", "chunk_size_bytes", NULL, 1 },
	{ "MARK-AHEAD", "mark_ahead_regions", "mark-ahead", 1 },
	{ "FEATURES", "features", NULL, 0 },
};

static void devname(dev_t d, char *buf, size_t len)
{
	if (chj_devnode(d, buf, len, NULL))
		snprintf(buf, len, "%u:%u", major(d), minor(d));
}

static int add_row(struct libscols_table *tb, const struct row *r, int json)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	char v[NCOLS][sizeof(r->t.other_features)];
	uint64_t chunk;
	int rc = 0;

	if (!ln)
		return -1;
	snprintf(v[C_NAME], sizeof(v[0]), "%s", r->name);
	devname(r->t.origin, v[C_ORIGIN], sizeof(v[0]));
	devname(r->t.metadata, v[C_META], sizeof(v[0]));
	if (json)
		snprintf(v[C_REGION], sizeof(v[0]), "%llu", (unsigned long long)r->s.region_sectors << 9);
	else
		chj_human_size((uint64_t)r->s.region_sectors << 9, v[C_REGION], sizeof(v[0]));
	snprintf(v[C_EPOCH], sizeof(v[0]), "%llu", (unsigned long long)r->s.current_epoch);
	snprintf(v[C_OLDEST], sizeof(v[0]), "%llu", (unsigned long long)r->s.oldest_epoch);
	snprintf(v[C_MARKED], sizeof(v[0]), "%llu", (unsigned long long)r->s.marked);
	snprintf(v[C_REGIONS], sizeof(v[0]), "%llu", (unsigned long long)r->s.nr_regions);
	snprintf(v[C_JUSED], sizeof(v[0]), "%llu", (unsigned long long)r->s.journal_used);
	snprintf(v[C_JBLOCKS], sizeof(v[0]), "%llu", (unsigned long long)r->s.journal_blocks);
	snprintf(v[C_MODE], sizeof(v[0]), "%s", r->s.mode);
	/* The chunk dm-chj uses: the table's, raised as it raises it. */
	chunk = (uint64_t)r->s.region_sectors << CHJ_SECTOR_SHIFT <<
		chj_chunk_shift(r->s.region_sectors, r->t.chunk_sectors, r->s.nr_regions);
	if (json)
		snprintf(v[C_CHUNK], sizeof(v[0]), "%llu", (unsigned long long)chunk);
	else
		chj_human_size(chunk, v[C_CHUNK], sizeof(v[0]));
	snprintf(v[C_MARK_AHEAD], sizeof(v[0]), "%u", r->t.mark_ahead);
	/* Feature words of the table chj does not know (a newer module). */
	snprintf(v[C_FEATURES], sizeof(v[0]), "%s", r->t.other_features);
	for (int i = 0; i < NCOLS && !rc; i++)
		rc = scols_line_set_data(ln, i, v[i]);
	/* JSON: the old keys' columns after the new ones, in cols' order. */
	for (int i = 0, k = NCOLS; json && i < NCOLS && !rc; i++)
		if (cols[i].old)
			rc = scols_line_set_data(ln, k++, v[i]);
	return rc;
}

static int add_column(struct libscols_table *tb, const char *name, int num)
{
	struct libscols_column *cl = scols_table_new_column(tb, name, 0, num ? SCOLS_FL_RIGHT : 0);

	if (!cl)
		return -1;
	if (num)
		scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
	return 0;
}

static int print_table(const struct row *rows, size_t n, int json)
{
	struct libscols_table *tb = scols_new_table();
	int rc = tb ? 0 : -1;

	if (!rc && json) {
		scols_table_enable_json(tb, 1);
		scols_table_set_name(tb, "chj");
	}
	for (int i = 0; i < NCOLS && !rc; i++)
		rc = add_column(tb, json ? cols[i].key : cols[i].name, cols[i].num);
	for (int i = 0; json && i < NCOLS && !rc; i++)
		if (cols[i].old)
			rc = add_column(tb, cols[i].old, cols[i].num);
	for (size_t i = 0; i < n && !rc; i++)
		rc = add_row(tb, &rows[i], json);
	if (!rc)
		rc = scols_print_table(tb);
	scols_unref_table(tb);
	return rc;
}

/* Where block device dev is mounted (the first mount), or 0 if it is not. */
static int mounted_at(dev_t dev, char *mnt, size_t len)
{
	return chj_mount_point(NULL, dev, mnt, len) == 1;
}

/* The first line of a sysfs file, without its newline; 0 if read. */
static int read_sysfs(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok = f && fgets(buf, (int)len, f);

	if (f)
		fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/*
 * Warn about ways to write the origin that bypass the tracker.  The kernel
 * refuses to mount the origin itself while dm-chj holds it (an exclusive
 * claim), but device-mapper devices share one claim: another dm device over
 * the origin (a leftover dm-linear, kpartx) is allowed and writes past
 * dm-chj.  So: every holder of the origin other than NAME itself, and, in
 * case a kernel lets it happen, a mount of the origin.
 */
static void warn_bypass(const struct row *r)
{
	char dir[96], path[600], name[256], dev[64], shown[300], mnt[2048];
	struct dirent *de;
	DIR *d;

	if (mounted_at(r->t.origin, mnt, sizeof(mnt)))
		fprintf(stderr, "chj: warning: %s: its origin is mounted directly at %s; writes there are not tracked\n",
			r->name, mnt);
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u/holders",
		 major(r->t.origin), minor(r->t.origin));
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		unsigned maj, min;
		int is_dm;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/dm/name", dir, de->d_name);
		is_dm = !read_sysfs(path, name, sizeof(name));
		if (is_dm && !strcmp(name, r->name))
			continue;
		if (is_dm)
			snprintf(shown, sizeof(shown), "/dev/mapper/%s", name);
		else
			snprintf(shown, sizeof(shown), "/dev/%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s/dev", dir, de->d_name);
		mnt[0] = 0;
		if (!read_sysfs(path, dev, sizeof(dev)) && sscanf(dev, "%u:%u", &maj, &min) == 2)
			mounted_at(makedev(maj, min), mnt, sizeof(mnt));
		fprintf(stderr, "chj: warning: %s: %s also uses its origin%s%s; writes through it are not tracked\n",
			r->name, shown, mnt[0] ? " and is mounted at " : "", mnt);
	}
	if (d)
		closedir(d);
}

static int collect(char **names, size_t n, struct row *rows)
{
	struct chj_error e = { 0 };

	for (size_t i = 0; i < n; i++) {
		rows[i].name = names[i];
		if (chj_dm_get_table(names[i], &rows[i].t, &e) ||
		    chj_dm_status(names[i], &rows[i].s, &e))
			return cli_fail(&e);
	}
	return 0;
}

int cmd_status(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	const struct chj_cmd *c = chj_find_cmd("status");
	struct chj_error e = { 0 };
	char **names = NULL;
	size_t n = 0;
	struct row *rows;
	int opt, json = 0, rc, listed = 0;

	while ((opt = cli_getopt(c, argc, argv, "", lo)) != -1) {
		if (opt != 'j')
			return c->usage_exit;
		json = 1;
	}
	if (optind < argc) {
		names = argv + optind;
		n = argc - optind;
	} else {
		if (chj_dm_list(&names, &n, &e))
			return cli_fail(&e);
		listed = 1;
	}
	rows = calloc(n + 1, sizeof(*rows));
	rc = rows ? collect(names, n, rows) : EXIT_ERROR;
	/* Everything is known before anything is printed. */
	if (!rc && print_table(rows, n, json)) {
		fprintf(stderr, "chj: status: cannot print the table\n");
		rc = EXIT_ERROR;
	}
	for (size_t i = 0; !rc && i < n; i++)
		warn_bypass(&rows[i]);
	free(rows);
	if (listed)
		chj_free_names(names, n);
	return cli_finish(rc);
}
