// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj status: a libsmartcols table (or JSON) of chj devices. */
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
       C_JUSED, C_JBLOCKS, C_MODE, NCOLS };

static const struct { const char *name; int num; } cols[NCOLS] = {
	{ "NAME", 0 }, { "ORIGIN", 0 }, { "METADATA", 0 }, { "REGION-SIZE", 1 },
	{ "EPOCH", 1 }, { "OLDEST", 1 }, { "MARKED", 1 }, { "REGIONS", 1 },
	{ "JOURNAL-USED", 1 }, { "JOURNAL-BLOCKS", 1 }, { "MODE", 0 },
};

static void devname(dev_t d, char *buf, size_t len)
{
	if (chj_devnode(d, buf, len, NULL))
		snprintf(buf, len, "%u:%u", major(d), minor(d));
}

static int add_row(struct libscols_table *tb, const struct row *r, int json)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	char v[NCOLS][64];
	int rc = 0;

	if (!ln)
		return -1;
	snprintf(v[C_NAME], 64, "%s", r->name);
	devname(r->t.origin, v[C_ORIGIN], 64);
	devname(r->t.metadata, v[C_META], 64);
	if (json)
		snprintf(v[C_REGION], 64, "%llu", (unsigned long long)r->s.region_sectors << 9);
	else
		chj_human_size((uint64_t)r->s.region_sectors << 9, v[C_REGION], 64);
	snprintf(v[C_EPOCH], 64, "%llu", (unsigned long long)r->s.current_epoch);
	snprintf(v[C_OLDEST], 64, "%llu", (unsigned long long)r->s.oldest_epoch);
	snprintf(v[C_MARKED], 64, "%llu", (unsigned long long)r->s.marked);
	snprintf(v[C_REGIONS], 64, "%llu", (unsigned long long)r->s.nr_regions);
	snprintf(v[C_JUSED], 64, "%llu", (unsigned long long)r->s.journal_used);
	snprintf(v[C_JBLOCKS], 64, "%llu", (unsigned long long)r->s.journal_blocks);
	snprintf(v[C_MODE], 64, "%s", r->s.mode);
	for (int i = 0; i < NCOLS && !rc; i++)
		rc = scols_line_set_data(ln, i, v[i]);
	return rc;
}

static int print_table(const struct row *rows, size_t n, int json)
{
	struct libscols_table *tb = scols_new_table();
	int rc = tb ? 0 : -1;

	if (!rc && json) {
		scols_table_enable_json(tb, 1);
		scols_table_set_name(tb, "chj");
	}
	for (int i = 0; i < NCOLS && !rc; i++) {
		struct libscols_column *cl = scols_table_new_column(tb, cols[i].name, 0,
								     cols[i].num ? SCOLS_FL_RIGHT : 0);

		if (!cl)
			rc = -1;
		else if (cols[i].num)
			scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = add_row(tb, &rows[i], json);
	if (!rc)
		rc = scols_print_table(tb);
	scols_unref_table(tb);
	return rc;
}

/* Warn about an origin mounted directly: its writes bypass the tracker. */
static void warn_direct_mounts(const struct row *r)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	while (f && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		char mnt[2048];

		if (sscanf(line, "%*d %*d %u:%u %*s %2047s", &maj, &min, mnt) == 3 &&
		    makedev(maj, min) == r->t.origin)
			fprintf(stderr, "chj: warning: %s: its origin is mounted directly at %s; writes there are not tracked\n",
				r->name, mnt);
	}
	if (f)
		fclose(f);
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const struct chj_cmd *c = chj_find_cmd("status");
	struct chj_error e = { 0 };
	char **names = NULL;
	size_t n = 0;
	struct row *rows;
	int opt, json = 0, rc, listed = 0;

	while ((opt = cli_getopt(c, argc, argv, "h", lo)) != -1) {
		if (opt == 'j')
			json = 1;
		else
			return opt == 'h' ? cli_finish(EXIT_OK) : c->usage_exit;
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
		warn_direct_mounts(&rows[i]);
	free(rows);
	if (listed)
		chj_free_names(names, n);
	return cli_finish(rc);
}
