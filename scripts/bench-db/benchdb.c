// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj-benchdb: the benchmark database of chj (SQLite, schema.sql).
 *
 *   chj-benchdb [--db FILE] init
 *   chj-benchdb [--db FILE] import DIR [--commit C] [--host H] [--label L]
 *   chj-benchdb [--db FILE] runs
 *   chj-benchdb [--db FILE] count RUN
 *   chj-benchdb [--db FILE] compare A B [--threshold PCT] [--alpha P] [--holm]
 *                                       [--all] [--target G] [--job G] [--metric G]
 *   chj-benchdb [--db FILE] ratio RUN BASE CAND [--all] [--job G] [--metric G] [--tsv]
 *   chj-benchdb [--db FILE] targets [--run RUN] [--resolve-run RUN] [--markdown]
 *
 * RUN, A and B are run ids, "latest", or a git commit (prefix): the latest
 * run of that commit.  The database is $CHJ_BENCH_DB, else build/bench.db.
 * import reads DIR/run.tsv, DIR/manifest.tsv and DIR/extra.tsv as written by
 * bench/vm/bench.sh and bench-resolve.sh (see scripts/bench) and prints
 * the new run's id.  compare exits 1 when a gating metric regressed.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "stats.h"

static sqlite3 *db;
static const char *prog = "chj-benchdb";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p)
		die("out of memory");
	return p;
}

static void exec_sql(const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		die("sql: %s", err ? err : sqlite3_errmsg(db));
}

static sqlite3_stmt *prep(const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die("sql: %s: %s", sqlite3_errmsg(db), sql);
	return st;
}

static void step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		die("sql: %s", sqlite3_errmsg(db));
	sqlite3_reset(st);
}

static void open_db(const char *path)
{
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die("%s: %s", path, sqlite3_errmsg(db));
	sqlite3_busy_timeout(db, 10000);
	exec_sql(schema_sql);
}

/* ---- reading files ---------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (!f)
		die("%s: %s", path, strerror(errno));
	do {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 65536;
			buf = xrealloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r);
	if (ferror(f))
		die("%s: read error", path);
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

/* Split a line at tabs in place; returns the number of fields. */
static int split_tabs(char *line, char **f, int max)
{
	int n = 0;

	line[strcspn(line, "\r\n")] = 0;
	while (n < max) {
		f[n++] = line;
		line = strchr(line, '\t');
		if (!line)
			break;
		*line++ = 0;
	}
	return n;
}

/* ---- import ----------------------------------------------------------- */

struct fio_metric {
	const char *name, *path, *need;	/* need: only when this path is > 0 */
	double scale;
};

static const struct fio_metric fio_metrics[] = {
#define DIRM(d) \
	{ d "_iops", "$.jobs[0]." d ".iops", "$.jobs[0]." d ".total_ios", 1 }, \
	{ d "_bw_mibs", "$.jobs[0]." d ".bw_bytes", "$.jobs[0]." d ".total_ios", 1.0 / 1048576 }, \
	{ d "_io_mib", "$.jobs[0]." d ".io_bytes", "$.jobs[0]." d ".total_ios", 1.0 / 1048576 }, \
	{ d "_clat_mean_us", "$.jobs[0]." d ".clat_ns.mean", "$.jobs[0]." d ".total_ios", 1e-3 }, \
	{ d "_clat_p50_us", "$.jobs[0]." d ".clat_ns.percentile.\"50.000000\"", "$.jobs[0]." d ".total_ios", 1e-3 }, \
	{ d "_clat_p99_us", "$.jobs[0]." d ".clat_ns.percentile.\"99.000000\"", "$.jobs[0]." d ".total_ios", 1e-3 }, \
	{ d "_clat_p999_us", "$.jobs[0]." d ".clat_ns.percentile.\"99.900000\"", "$.jobs[0]." d ".total_ios", 1e-3 }
	DIRM("write"),
	DIRM("read"),
#undef DIRM
	{ "cpu_usr_pct", "$.jobs[0].usr_cpu", NULL, 1 },
	{ "cpu_sys_pct", "$.jobs[0].sys_cpu", NULL, 1 },
};

static void extract_fio(sqlite3_int64 result_id)
{
	sqlite3_stmt *st = prep(
		"INSERT OR REPLACE INTO metrics (run_id, target, job, rep, metric, value) "
		"SELECT run_id, target, job, rep, ?1, json_extract(output, ?2) * ?3 "
		"FROM results WHERE id = ?4 AND json_extract(output, ?2) IS NOT NULL "
		"AND (?5 IS NULL OR json_extract(output, ?5) > 0)");
	size_t i;

	for (i = 0; i < sizeof(fio_metrics) / sizeof(fio_metrics[0]); i++) {
		const struct fio_metric *m = &fio_metrics[i];

		sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, m->path, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 3, m->scale);
		sqlite3_bind_int64(st, 4, result_id);
		if (m->need)
			sqlite3_bind_text(st, 5, m->need, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 5);
		step_done(st);
	}
	sqlite3_finalize(st);
}

static char *path_join(const char *dir, const char *name)
{
	char *p = xmalloc(strlen(dir) + strlen(name) + 2);

	sprintf(p, "%s/%s", dir, name);
	return p;
}

static int cmd_import(const char *dir, const char *commit, const char *host, const char *label)
{
	char *path, *line = NULL, *f[8];
	size_t cap = 0;
	FILE *fp;
	const char *keys[] = { "kind", "kernel", "date", "backing", "params", "guest" };
	char *vals[6] = { 0 };
	sqlite3_stmt *st;
	sqlite3_int64 run_id;
	int nres = 0, nextra = 0, i;
	char *params;

	exec_sql("BEGIN IMMEDIATE");
	/* run.tsv: key<TAB>value */
	path = path_join(dir, "run.tsv");
	fp = fopen(path, "r");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	while (getline(&line, &cap, fp) > 0) {
		if (split_tabs(line, f, 2) != 2)
			continue;
		for (i = 0; i < 6; i++)
			if (!strcmp(f[0], keys[i])) {
				free(vals[i]);
				vals[i] = xstrdup(f[1]);
			}
	}
	fclose(fp);
	free(path);
	if (!vals[0] || !vals[1] || !vals[2])
		die("%s/run.tsv: needs kind, kernel and date", dir);
	params = vals[4] ? vals[4] : xstrdup("");
	if (vals[5]) {	/* the guest's CPU goes with the parameters */
		char *p = xmalloc(strlen(params) + strlen(vals[5]) + 16);

		sprintf(p, "%s%sguest=%s", params, *params ? " " : "", vals[5]);
		params = p;
	}
	st = prep("INSERT INTO runs (git_commit, kernel, date, host, kind, backing, params, label) "
		  "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
	sqlite3_bind_text(st, 1, commit ? commit : "unknown", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, vals[1], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, vals[2], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, host ? host : "unknown", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, vals[0], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, vals[3], -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, params, -1, SQLITE_STATIC);
	if (label)
		sqlite3_bind_text(st, 8, label, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 8);
	step_done(st);
	sqlite3_finalize(st);
	run_id = sqlite3_last_insert_rowid(db);

	/* manifest.tsv: seq target job rep format file */
	path = path_join(dir, "manifest.tsv");
	fp = fopen(path, "r");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	/* A fio-json file may hold several jobs (one fio run of a job file):
	 * each result keeps fio's whole document with only its own job in
	 * "jobs", so that $.jobs[0] is always that job. */
	st = prep("INSERT INTO results (run_id, seq, target, job, rep, format, output) "
		  "SELECT ?1, ?2, ?3, ?4, ?5, ?6, CASE WHEN ?6 = 'fio-json' "
		  "THEN json_set(?7, '$.jobs', json_array(j.value)) ELSE ?7 END "
		  "FROM (SELECT value FROM json_each(CASE WHEN ?6 = 'fio-json' THEN ?7 ELSE '[0]' END, "
		  "CASE WHEN ?6 = 'fio-json' THEN '$.jobs' ELSE '$' END) "
		  "WHERE ?6 <> 'fio-json' OR json_extract(value, '$.jobname') = ?4) j");
	while (getline(&line, &cap, fp) > 0) {
		char *out, *file, *body;
		int fio;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (split_tabs(line, f, 6) != 6)
			die("%s: bad line (want seq target job rep format file)", path);
		fio = !strcmp(f[4], "fio-json");
		file = path_join(dir, f[5]);
		out = read_file(file, NULL);
		body = out;
		if (fio) {
			/* fio may print notes before the JSON document. */
			body = strchr(out, '{');
			if (!body)
				die("%s: no JSON in fio output", file);
		}
		sqlite3_bind_int64(st, 1, run_id);
		sqlite3_bind_int(st, 2, atoi(f[0]));
		sqlite3_bind_text(st, 3, f[1], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, f[2], -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 5, atoi(f[3]));
		sqlite3_bind_text(st, 6, f[4], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 7, body, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			die("%s: %s", file, sqlite3_errmsg(db));
		sqlite3_reset(st);
		if (sqlite3_changes(db) != 1)
			die("%s: no job named '%s' in it", file, f[2]);
		if (fio)
			extract_fio(sqlite3_last_insert_rowid(db));
		free(out);
		free(file);
		nres++;
	}
	sqlite3_finalize(st);
	fclose(fp);
	free(path);

	/* extra.tsv: target job rep metric value (optional) */
	path = path_join(dir, "extra.tsv");
	fp = fopen(path, "r");
	if (fp) {
		st = prep("INSERT OR REPLACE INTO metrics (run_id, target, job, rep, metric, value) "
			  "VALUES (?, ?, ?, ?, ?, ?)");
		while (getline(&line, &cap, fp) > 0) {
			char *end;
			double v;

			if (line[0] == '#' || line[0] == '\n')
				continue;
			if (split_tabs(line, f, 5) != 5)
				die("%s: bad line (want target job rep metric value)", path);
			v = strtod(f[4], &end);
			if (end == f[4] || *end || !isfinite(v))
				die("%s: bad value '%s'", path, f[4]);
			sqlite3_bind_int64(st, 1, run_id);
			sqlite3_bind_text(st, 2, f[0], -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, f[1], -1, SQLITE_STATIC);
			sqlite3_bind_int(st, 4, atoi(f[2]));
			sqlite3_bind_text(st, 5, f[3], -1, SQLITE_STATIC);
			sqlite3_bind_double(st, 6, v);
			step_done(st);
			nextra++;
		}
		sqlite3_finalize(st);
		fclose(fp);
	}
	free(path);

	/* Derived: metadata bytes per GiB of data written. */
	st = prep("INSERT OR REPLACE INTO metrics (run_id, target, job, rep, metric, value) "
		  "SELECT m.run_id, m.target, m.job, m.rep, 'meta_bytes_per_gib', m.value * 1024.0 / w.value "
		  "FROM metrics m JOIN metrics w USING (run_id, target, job, rep) "
		  "WHERE m.run_id = ? AND m.metric = 'meta_bytes' AND w.metric = 'write_io_mib' AND w.value > 0");
	sqlite3_bind_int64(st, 1, run_id);
	step_done(st);
	sqlite3_finalize(st);
	if (!nres && !nextra)
		die("%s: no results to import", dir);
	exec_sql("COMMIT");
	free(line);
	for (i = 0; i < 6; i++)
		free(vals[i]);
	fprintf(stderr, "%s: run %lld: %d results, %d extra metrics imported\n",
		prog, (long long)run_id, nres, nextra);
	printf("%lld\n", (long long)run_id);
	return 0;
}

/* ---- runs ------------------------------------------------------------- */

static sqlite3_int64 resolve_run(const char *sel, const char *kind)
{
	sqlite3_stmt *st;
	sqlite3_int64 id = -1;
	const char *p;
	int digits = *sel != 0;

	for (p = sel; *p; p++)
		if (!isdigit((unsigned char)*p))
			digits = 0;
	if (digits) {
		st = prep("SELECT id FROM runs WHERE id = ?");
		sqlite3_bind_int64(st, 1, atoll(sel));
		if (sqlite3_step(st) == SQLITE_ROW)
			id = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (id >= 0)
			return id;
	}
	if (!strcmp(sel, "latest")) {
		st = prep("SELECT max(id) FROM runs WHERE ?1 IS NULL OR kind = ?1");
		if (kind)
			sqlite3_bind_text(st, 1, kind, -1, SQLITE_STATIC);
	} else {
		st = prep("SELECT max(id) FROM runs WHERE substr(git_commit, 1, length(?1)) = ?1 "
			  "AND (?2 IS NULL OR kind = ?2)");
		sqlite3_bind_text(st, 1, sel, -1, SQLITE_STATIC);
		if (kind)
			sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	}
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (id < 0)
		die("no run matches '%s'%s%s", sel, kind ? " of kind " : "", kind ? kind : "");
	return id;
}

static char *run_desc(sqlite3_int64 id)
{
	sqlite3_stmt *st = prep("SELECT substr(git_commit, 1, 12) || CASE WHEN git_commit LIKE '%-dirty' "
				"THEN '-dirty' ELSE '' END, date, kind || coalesce(' ' || backing, '') FROM runs WHERE id = ?");
	char *s = xmalloc(200);

	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		die("no run %lld", (long long)id);
	snprintf(s, 200, "run %lld (%s, %s, %s)", (long long)id, sqlite3_column_text(st, 0),
		 sqlite3_column_text(st, 1), sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	return s;
}

static int cmd_runs(void)
{
	sqlite3_stmt *st = prep(
		"SELECT id, date, substr(git_commit, 1, 12), kind, coalesce(backing, '-'), kernel, "
		"(SELECT count(*) FROM results r WHERE r.run_id = runs.id), "
		"(SELECT count(*) FROM metrics m WHERE m.run_id = runs.id), coalesce(label, ''), "
		"coalesce(params, '') FROM runs ORDER BY id");

	printf("%-4s %-20s %-12s %-8s %-7s %-16s %7s %7s  %s\n", "ID", "DATE", "COMMIT", "KIND",
	       "BACKING", "KERNEL", "RESULTS", "METRICS", "LABEL / PARAMS");
	while (sqlite3_step(st) == SQLITE_ROW)
		printf("%-4lld %-20s %-12s %-8s %-7s %-16s %7d %7d  %s%s%s\n",
		       (long long)sqlite3_column_int64(st, 0), sqlite3_column_text(st, 1),
		       sqlite3_column_text(st, 2), sqlite3_column_text(st, 3),
		       sqlite3_column_text(st, 4), sqlite3_column_text(st, 5),
		       sqlite3_column_int(st, 6), sqlite3_column_int(st, 7),
		       sqlite3_column_text(st, 8), *sqlite3_column_text(st, 8) ? " / " : "",
		       sqlite3_column_text(st, 9));
	sqlite3_finalize(st);
	return 0;
}

static int cmd_count(const char *sel)
{
	sqlite3_int64 id = resolve_run(sel, NULL);
	sqlite3_stmt *st = prep("SELECT (SELECT count(*) FROM results WHERE run_id = ?1), "
				"(SELECT count(*) FROM metrics WHERE run_id = ?1)");

	sqlite3_bind_int64(st, 1, id);
	sqlite3_step(st);
	printf("run=%lld results=%d metrics=%d\n", (long long)id, sqlite3_column_int(st, 0),
	       sqlite3_column_int(st, 1));
	sqlite3_finalize(st);
	return 0;
}

/* ---- samples ---------------------------------------------------------- */

struct group {
	char *target, *job, *metric, *unit, *better;
	int gate;
	size_t n;
	int *rep;
	double *v;
	struct sample_summary s;
};

struct groups {
	struct group *g;
	size_t n;
};

static void load_groups(sqlite3_int64 run, struct groups *gs)
{
	sqlite3_stmt *st = prep(
		"SELECT m.target, m.job, m.metric, m.rep, m.value, coalesce(i.better, 'none'), "
		"coalesce(i.gate, 0), coalesce(i.unit, '') "
		"FROM metrics m LEFT JOIN metric_info i USING (metric) WHERE m.run_id = ?1 ORDER BY "
		"coalesce((SELECT min(seq) FROM results r WHERE r.run_id = ?1 AND r.target = m.target), 1e9), m.target, "
		"coalesce((SELECT min(seq) FROM results r WHERE r.run_id = ?1 AND r.job = m.job), 1e9), m.job, "
		"coalesce(i.rowid, 1e9), m.metric, m.rep");
	size_t cap = 0, i;

	gs->g = NULL;
	gs->n = 0;
	sqlite3_bind_int64(st, 1, run);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		const char *j = (const char *)sqlite3_column_text(st, 1);
		const char *m = (const char *)sqlite3_column_text(st, 2);
		struct group *g = gs->n ? &gs->g[gs->n - 1] : NULL;

		if (!g || strcmp(g->target, t) || strcmp(g->job, j) || strcmp(g->metric, m)) {
			if (gs->n == cap) {
				cap = cap ? cap * 2 : 64;
				gs->g = xrealloc(gs->g, cap * sizeof(*gs->g));
			}
			g = &gs->g[gs->n++];
			memset(g, 0, sizeof(*g));
			g->target = xstrdup(t);
			g->job = xstrdup(j);
			g->metric = xstrdup(m);
			g->better = xstrdup((const char *)sqlite3_column_text(st, 5));
			g->gate = sqlite3_column_int(st, 6);
			g->unit = xstrdup((const char *)sqlite3_column_text(st, 7));
		}
		g->rep = xrealloc(g->rep, (g->n + 1) * sizeof(*g->rep));
		g->v = xrealloc(g->v, (g->n + 1) * sizeof(*g->v));
		g->rep[g->n] = sqlite3_column_int(st, 3);
		g->v[g->n] = sqlite3_column_double(st, 4);
		g->n++;
	}
	sqlite3_finalize(st);
	for (i = 0; i < gs->n; i++)
		stats_summary(gs->g[i].v, gs->g[i].n, &gs->g[i].s);
}

static struct group *find_group(struct groups *gs, const char *t, const char *j, const char *m)
{
	size_t i;

	for (i = 0; i < gs->n; i++)
		if (!strcmp(gs->g[i].target, t) && !strcmp(gs->g[i].job, j) && !strcmp(gs->g[i].metric, m))
			return &gs->g[i];
	return NULL;
}

static int match(const char *glob, const char *s)
{
	return !glob || !fnmatch(glob, s, 0);
}

/* "12345.6 ± 12.3" in a fixed width, with precision by magnitude. */
static void fmt_ms(char *buf, size_t len, const struct sample_summary *s)
{
	double a = fabs(s->mean);
	int prec = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 1 ? 2 : 4;

	snprintf(buf, len, "%.*f ± %.*f", prec, s->mean, prec, s->sd);
}

static const char *fmt_p(char *buf, size_t len, double p)
{
	if (isnan(p))
		snprintf(buf, len, "-");
	else if (p < 0.0001)
		snprintf(buf, len, "<0.0001");
	else
		snprintf(buf, len, "%.4f", p);
	return buf;
}

/* ---- compare ---------------------------------------------------------- */

struct row {
	struct group *a, *b;
	double ratio;	/* mean_b / mean_a */
	struct welch w;
	int worse, better;	/* beyond the threshold, in the metric's direction */
	int held;	/* Holm-Bonferroni: not significant after correction */
	const char *verdict;
};

static int cmp_p(const void *x, const void *y)
{
	const struct row *const *a = x, *const *b = y;

	return (*a)->w.p < (*b)->w.p ? -1 : (*a)->w.p > (*b)->w.p;
}

static int cmd_compare(const char *sa, const char *sb, double thr, double alpha, int holm, int all,
		       const char *tglob, const char *jglob, const char *mglob)
{
	sqlite3_int64 ra = resolve_run(sa, NULL), rb = resolve_run(sb, NULL);
	struct groups A, B;
	struct row *rows, **tested;
	size_t nrows = 0, ntested = 0, i;
	int regress = 0, improve = 0, same = 0, untested = 0, compared = 0;
	char *da = run_desc(ra), *dbs = run_desc(rb);

	load_groups(ra, &A);
	load_groups(rb, &B);
	rows = xmalloc(B.n * sizeof(*rows));
	tested = xmalloc(B.n * sizeof(*tested));
	for (i = 0; i < B.n; i++) {
		struct group *b = &B.g[i], *a;
		struct row *r;

		if (!match(tglob, b->target) || !match(jglob, b->job) || !match(mglob, b->metric))
			continue;
		if (!all && !mglob && !b->gate)
			continue;
		a = find_group(&A, b->target, b->job, b->metric);
		if (!a)
			continue;
		r = &rows[nrows++];
		memset(r, 0, sizeof(*r));
		r->a = a;
		r->b = b;
		r->ratio = a->s.mean != 0 ? b->s.mean / a->s.mean : NAN;
		stats_welch(&b->s, &a->s, &r->w);
		if (!strcmp(b->better, "higher")) {
			r->worse = r->ratio < 1 - thr;
			r->better = r->ratio > 1 + thr;
		} else if (!strcmp(b->better, "lower")) {
			r->worse = r->ratio > 1 + thr;
			r->better = r->ratio < 1 - thr;
		}
		if (a->s.mean == 0 && b->s.mean == 0)
			r->worse = r->better = 0;
		if (!isnan(r->w.p) && b->gate)
			tested[ntested++] = r;
	}
	/* Holm-Bonferroni: the k-th smallest p of m gating tests must beat alpha/(m-k). */
	if (holm && ntested) {
		qsort(tested, ntested, sizeof(*tested), cmp_p);
		for (i = 0; i < ntested; i++)
			if (tested[i]->w.p > alpha / (ntested - i))
				break;
		for (; i < ntested; i++)
			tested[i]->held = 1;
	}
	{
		sqlite3_stmt *st = prep("SELECT a.params IS NOT b.params OR a.kind <> b.kind OR "
					"a.backing IS NOT b.backing, a.params, b.params FROM runs a, runs b "
					"WHERE a.id = ? AND b.id = ?");

		sqlite3_bind_int64(st, 1, ra);
		sqlite3_bind_int64(st, 2, rb);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0))
			printf("WARNING: the runs differ in kind, backing or parameters:\n  A: %s\n  B: %s\n",
			       sqlite3_column_text(st, 1), sqlite3_column_text(st, 2));
		sqlite3_finalize(st);
	}
	printf("A: %s\nB: %s\nthreshold %.1f%%, alpha %g%s; ratio = B/A; verdicts: REGRESSION, improved, "
	       "same (not significant or within threshold), n<2 (no test), info (no direction)\n\n",
	       da, dbs, thr * 100, alpha, holm ? " (Holm-Bonferroni over gating metrics)" : "");
	printf("%-7s %-22s %-18s %24s %24s %7s %8s  %s\n", "TARGET", "JOB", "METRIC", "A mean ± sd",
	       "B mean ± sd", "B/A", "p", "VERDICT");
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];
		char ma[64], mb[64], pb[16];
		int sig = !isnan(r->w.p) && r->w.p < alpha && !r->held;

		if (!strcmp(r->b->better, "none")) {
			r->verdict = "info";
		} else if (isnan(r->w.p)) {
			r->verdict = "n<2";
			untested++;
		} else if (sig && r->worse) {
			r->verdict = r->b->gate ? "REGRESSION" : "worse (not gating)";
			regress += r->b->gate;
		} else if (sig && r->better) {
			r->verdict = "improved";
			improve++;
		} else {
			r->verdict = "same";
			same++;
		}
		if (strcmp(r->b->better, "none"))
			compared++;
		fmt_ms(ma, sizeof(ma), &r->a->s);
		fmt_ms(mb, sizeof(mb), &r->b->s);
		snprintf(ma + strlen(ma), sizeof(ma) - strlen(ma), " (%zu)", r->a->n);
		snprintf(mb + strlen(mb), sizeof(mb) - strlen(mb), " (%zu)", r->b->n);
		printf("%-7s %-22s %-18s %24s %24s %7.3f %8s  %s\n", r->b->target, r->b->job, r->b->metric,
		       ma, mb, r->ratio, fmt_p(pb, sizeof(pb), r->w.p), r->verdict);
	}
	printf("\ncompare %s: run %lld vs run %lld: %d metric%s, %d regression%s, %d improved, "
	       "%d same, %d untested (threshold %.1f%%, alpha %g)\n",
	       regress ? "FAIL" : "ok", (long long)ra, (long long)rb, compared, compared == 1 ? "" : "s", regress,
	       regress == 1 ? "" : "s", improve, same, untested, thr * 100, alpha);
	return regress ? 1 : 0;
}

/* ---- ratio within a run ----------------------------------------------- */

struct ratio {
	double r;		/* ratio of means, cand / base */
	struct sample_summary pr;	/* per-repetition ratios, paired by rep */
	double min, max;
	struct welch w;
};

static void ratio_of(struct group *base, struct group *cand, struct ratio *q)
{
	double *pr = xmalloc((cand->n + 1) * sizeof(double));
	size_t i, j, n = 0;

	q->r = base->s.mean != 0 ? cand->s.mean / base->s.mean : NAN;
	q->min = INFINITY;
	q->max = -INFINITY;
	for (i = 0; i < cand->n; i++)
		for (j = 0; j < base->n; j++)
			if (cand->rep[i] == base->rep[j] && base->v[j] != 0) {
				pr[n] = cand->v[i] / base->v[j];
				q->min = fmin(q->min, pr[n]);
				q->max = fmax(q->max, pr[n]);
				n++;
			}
	stats_summary(pr, n, &q->pr);
	stats_welch(&cand->s, &base->s, &q->w);
	free(pr);
}

static int cmd_ratio(const char *sel, const char *base, const char *cand, int all,
		     const char *jglob, const char *mglob, int tsv)
{
	sqlite3_int64 run = resolve_run(sel, NULL);
	struct groups G;
	size_t i;
	int shown = 0;

	load_groups(run, &G);
	if (tsv)
		printf("job\tmetric\tbase_mean\tbase_sd\tcand_mean\tcand_sd\tratio\tpaired_mean\tpaired_sd\tpaired_min\tpaired_max\tn\tp\n");
	else
		printf("%s: %s / %s\n%-22s %-18s %22s %22s %7s %15s %13s %8s\n", run_desc(run), cand, base,
		       "JOB", "METRIC", base, cand, "RATIO", "PAIRED ± sd", "MIN..MAX", "p");
	for (i = 0; i < G.n; i++) {
		struct group *c = &G.g[i], *b;
		struct ratio q;
		char mb[64], mc[64], pb[16], rr[40], mm[40];

		if (strcmp(c->target, cand) || !match(jglob, c->job) || !match(mglob, c->metric))
			continue;
		if (!all && !mglob && !c->gate)
			continue;
		b = find_group(&G, base, c->job, c->metric);
		if (!b)
			continue;
		ratio_of(b, c, &q);
		shown++;
		if (tsv) {
			printf("%s\t%s\t%g\t%g\t%g\t%g\t%g\t%g\t%g\t%g\t%g\t%zu\t%g\n", c->job, c->metric,
			       b->s.mean, b->s.sd, c->s.mean, c->s.sd, q.r, q.pr.n ? q.pr.mean : NAN, q.pr.sd,
			       q.pr.n ? q.min : NAN, q.pr.n ? q.max : NAN, q.pr.n, q.w.p);
			continue;
		}
		fmt_ms(mb, sizeof(mb), &b->s);
		fmt_ms(mc, sizeof(mc), &c->s);
		snprintf(rr, sizeof(rr), "%.3f ± %.3f", q.pr.mean, q.pr.sd);
		snprintf(mm, sizeof(mm), "%.3f..%.3f", q.min, q.max);
		printf("%-22s %-18s %22s %22s %7.3f %15s %13s %8s\n", c->job, c->metric, mb, mc, q.r,
		       q.pr.n ? rr : "-", q.pr.n ? mm : "-", fmt_p(pb, sizeof(pb), q.w.p));
	}
	if (!shown)
		die("run %lld: nothing to compare between %s and %s", (long long)run, base, cand);
	return 0;
}

/* ---- the performance targets of issue 6 ------------------------------- */

struct goal {
	const char *what, *job, *metric, *cand, *base;
	double min;
	int lower_better;	/* ratio = base / cand (a speed-up) */
};

static const struct goal goals[] = {
	{ "steady state, QD1", "randwrite-qd1-steady", "write_iops", "chj", "linear", 0.98, 0 },
	{ "steady state, QD32", "randwrite-qd32-steady", "write_iops", "chj", "linear", 0.98, 0 },
	{ "first touch, QD1", "randwrite-qd1-first", "write_iops", "chj", "era", 2.0, 0 },
	{ "first touch, QD32", "randwrite-qd32-first", "write_iops", "chj", "linear", 0.95, 0 },
};

static int cmd_targets(const char *tsel, const char *rsel, int md)
{
	sqlite3_int64 trun = -1, rrun = -1;
	struct groups T = { 0 }, R = { 0 };
	size_t i;
	int missed = 0, met = 0, unmeasured = 0;
	sqlite3_stmt *st;

	st = prep("SELECT count(*) FROM runs WHERE kind = ?");
	sqlite3_bind_text(st, 1, "target", -1, SQLITE_STATIC);
	sqlite3_step(st);
	if (tsel || sqlite3_column_int(st, 0))
		trun = resolve_run(tsel ? tsel : "latest", "target");
	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, "resolve", -1, SQLITE_STATIC);
	sqlite3_step(st);
	if (rsel || sqlite3_column_int(st, 0))
		rrun = resolve_run(rsel ? rsel : "latest", "resolve");
	sqlite3_finalize(st);
	if (trun >= 0)
		load_groups(trun, &T);
	if (rrun >= 0)
		load_groups(rrun, &R);
	if (md) {
		printf("| what | target | measured (ratio of means) | per-repetition ratio, mean ± sd (min..max) | n | p (ratio = target) | verdict |\n");
		printf("| --- | --- | --- | --- | --- | --- | --- |\n");
	} else {
		printf("target run: %s\nresolve run: %s\n\n", trun >= 0 ? run_desc(trun) : "none",
		       rrun >= 0 ? run_desc(rrun) : "none");
	}
	for (i = 0; i < sizeof(goals) / sizeof(goals[0]); i++) {
		const struct goal *g = &goals[i];
		struct group *c = find_group(&T, g->cand, g->job, g->metric);
		struct group *b = find_group(&T, g->base, g->job, g->metric);
		struct ratio q;
		char tgt[64], pb[16];
		double pt;

		snprintf(tgt, sizeof(tgt), "≥ %.2f× %s", g->min, g->base);
		if (!c || !b) {
			unmeasured++;
			if (md)
				printf("| %s | %s | not measured | | | | NOT MEASURED |\n", g->what, tgt);
			else
				printf("%-22s %-14s not measured\n", g->what, tgt);
			continue;
		}
		ratio_of(b, c, &q);
		if (q.r >= g->min)
			met++;
		else
			missed++;
		/* Is the per-repetition ratio's mean different from the target?
		 * (one-sample t-test, two-sided) */
		if (q.pr.n >= 2 && q.pr.sd > 0)
			pt = stats_t_p2((q.pr.mean - g->min) / (q.pr.sd / sqrt((double)q.pr.n)), q.pr.n - 1);
		else
			pt = NAN;
		if (md)
			printf("| %s (%s %s) | %s | **%.3f×** | %.3f ± %.3f (%.3f..%.3f) | %zu | %s | %s |\n",
			       g->what, g->job, g->metric, tgt, q.r, q.pr.mean, q.pr.sd, q.min, q.max,
			       q.pr.n, fmt_p(pb, sizeof(pb), pt), q.r >= g->min ? "met" : "**MISSED**");
		else
			printf("%-22s %-14s %s/%s %s %s: %.3f (paired %.3f ± %.3f, %.3f..%.3f, n=%zu, p vs target %s)  %s\n",
			       g->what, tgt, g->cand, g->base, g->job, g->metric, q.r, q.pr.mean, q.pr.sd,
			       q.min, q.max, q.pr.n, fmt_p(pb, sizeof(pb), pt), q.r >= g->min ? "met" : "MISSED");
	}
	/* Resolver: find-stat wall time / chj-resolve wall time, on the largest
	 * tree measured with 0.1 % changed, per filesystem.  chj-resolve is the
	 * steady state (the name cache of the previous run); chj-resolve-cold,
	 * the first run, is shown beside it and decides nothing: the target is
	 * for a resolver run at every backup. */
	{
		const char *what = "resolver, 0.1% changed", *tgt = "≥ 10× faster than find+stat";
		int any = 0;

		for (i = 0; i < R.n; i++) {
			struct group *c = &R.g[i], *b;
			struct ratio q;
			long files;
			char fs[32];
			const char *verdict;
			char pb[16];
			double pt;
			int cold;

			if (strncmp(c->target, "chj-resolve", 11) || strcmp(c->metric, "wall_s"))
				continue;
			if (!strcmp(c->target, "chj-resolve"))
				cold = 0;
			else if (!strcmp(c->target, "chj-resolve-cold"))
				cold = 1;
			else
				continue;
			if (sscanf(c->job, "%31[^-]-n%ld-c0.1", fs, &files) != 2 || !strstr(c->job, "-c0.1") ||
			    strcmp(strstr(c->job, "-c0.1"), "-c0.1"))
				continue;
			b = find_group(&R, "find-stat", c->job, "wall_s");
			if (!b)
				continue;
			any = 1;
			ratio_of(c, b, &q);	/* find / resolve */
			/* Per-repetition ratio against 10 (one-sample t, two-sided). */
			if (q.pr.n >= 2 && q.pr.sd > 0)
				pt = stats_t_p2((q.pr.mean - 10) / (q.pr.sd / sqrt((double)q.pr.n)), q.pr.n - 1);
			else
				pt = NAN;
			/* The target is set at 1M files: a smaller tree does not
			 * decide it either way (find's cost grows with the tree). */
			if (cold)
				verdict = q.r >= 10 ? "first run, no name cache: not the target's case (≥ 10× here)"
						    : "first run, no name cache: not the target's case (below 10× here)";
			else if (files < 1000000)
				verdict = q.r >= 10 ? "not decided (tree < 1M files; ≥ 10× here)"
						    : "not decided (tree < 1M files; below 10× here)";
			else
				verdict = q.r >= 10 ? "met" : "MISSED";
			if (cold)
				;
			else if (files < 1000000)
				unmeasured++;
			else if (q.r >= 10)
				met++;
			else
				missed++;
			if (md)
				printf("| %s, %ld files, %s%s | %s (1M files) | **%.2f×** | %.2f ± %.2f (%.2f..%.2f) | %zu | %s | %s%s%s |\n",
				       what, files, fs, cold ? ", first run" : ", steady state", tgt, q.r, q.pr.mean,
				       q.pr.sd, q.min, q.max, q.pr.n, fmt_p(pb, sizeof(pb), pt),
				       strcmp(verdict, "met") && !cold ? "**" : "", verdict,
				       strcmp(verdict, "met") && !cold ? "**" : "");
			else
				printf("%-22s %s: %s, %ld files%s: %.2fx (paired %.2f ± %.2f, %.2f..%.2f, n=%zu, p vs target %s)  %s\n",
				       what, tgt, fs, files, cold ? ", first run" : "", q.r, q.pr.mean, q.pr.sd, q.min,
				       q.max, q.pr.n, fmt_p(pb, sizeof(pb), pt), verdict);
		}
		if (!any) {
			unmeasured++;
			if (md)
				printf("| %s, 1M files | %s | not measured%s | | | | NOT MEASURED |\n", what, tgt,
				       rrun >= 0 ? " (no chj-resolve results)" : "");
			else
				printf("%-22s %s: not measured%s\n", what, tgt,
				       rrun >= 0 ? " (no chj-resolve results)" : "");
		}
	}
	if (!md)
		printf("\ntargets: %d met, %d missed, %d not measured or not decided\n", met, missed, unmeasured);
	return missed || unmeasured ? 1 : 0;
}

/* ---- main ------------------------------------------------------------- */

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: chj-benchdb [--db FILE] COMMAND ...\n"
		"  init                         create the database (schema.sql)\n"
		"  import DIR [--commit C] [--host H] [--label L]   import a results dir, print the run id\n"
		"  runs                         list runs\n"
		"  count RUN                    results and metrics of a run\n"
		"  compare A B [--threshold PCT] [--alpha P] [--holm] [--all] [--target G] [--job G] [--metric G]\n"
		"                               A/B per target, job, metric; exit 1 on a regression\n"
		"  ratio RUN BASE CAND [--all] [--job G] [--metric G] [--tsv]   targets within one run\n"
		"  targets [--run RUN] [--resolve-run RUN] [--markdown]   issue 6's performance targets\n"
		"RUN: a run id, 'latest', or a git commit prefix (its latest run).  G: a shell glob.\n"
		"Database: --db, else $CHJ_BENCH_DB, else build/bench.db.\n");
	exit(rc);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", 1, 0, 'd' }, { "commit", 1, 0, 'c' }, { "host", 1, 0, 'H' },
		{ "label", 1, 0, 'l' }, { "threshold", 1, 0, 't' }, { "alpha", 1, 0, 'a' },
		{ "holm", 0, 0, 'B' }, { "all", 0, 0, 'A' }, { "target", 1, 0, 'T' },
		{ "job", 1, 0, 'j' }, { "metric", 1, 0, 'm' }, { "tsv", 0, 0, 's' },
		{ "run", 1, 0, 'r' }, { "resolve-run", 1, 0, 'R' }, { "markdown", 0, 0, 'M' },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	const char *dbpath = getenv("CHJ_BENCH_DB"), *commit = NULL, *host = NULL, *label = NULL;
	const char *tglob = NULL, *jglob = NULL, *mglob = NULL, *trun = NULL, *rrun = NULL;
	double thr = 0.02, alpha = 0.05;
	int holm = 0, all = 0, tsv = 0, md = 0, c;
	char *end;
	const char *cmd;

	if (!dbpath || !*dbpath)
		dbpath = "build/bench.db";
	while ((c = getopt_long(argc, argv, "+d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbpath = optarg; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind >= argc)
		usage(2);
	cmd = argv[optind];
	/* Options after the command: parse argv[optind..] afresh (optind = 0
	 * makes glibc's getopt start over; argv[0] is then the command). */
	argv += optind;
	argc -= optind;
	optind = 0;
	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbpath = optarg; break;
		case 'c': commit = optarg; break;
		case 'H': host = optarg; break;
		case 'l': label = optarg; break;
		case 't':
			thr = strtod(optarg, &end);
			if (end == optarg || (*end && strcmp(end, "%")) || thr < 0)
				die("bad --threshold '%s' (percent, e.g. 2 or 2%%)", optarg);
			thr /= 100;
			break;
		case 'a':
			alpha = strtod(optarg, &end);
			if (end == optarg || *end || alpha <= 0 || alpha >= 1)
				die("bad --alpha '%s'", optarg);
			break;
		case 'B': holm = 1; break;
		case 'A': all = 1; break;
		case 'T': tglob = optarg; break;
		case 'j': jglob = optarg; break;
		case 'm': mglob = optarg; break;
		case 's': tsv = 1; break;
		case 'r': trun = optarg; break;
		case 'R': rrun = optarg; break;
		case 'M': md = 1; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	argv += optind;
	argc -= optind;
	if (!strcmp(cmd, "init") && argc == 0) {
		open_db(dbpath);
		return 0;
	}
	if (!strcmp(cmd, "import") && argc == 1) {
		open_db(dbpath);
		return cmd_import(argv[0], commit, host, label);
	}
	open_db(dbpath);
	if (!strcmp(cmd, "runs") && argc == 0)
		return cmd_runs();
	if (!strcmp(cmd, "count") && argc == 1)
		return cmd_count(argv[0]);
	if (!strcmp(cmd, "compare") && argc == 2)
		return cmd_compare(argv[0], argv[1], thr, alpha, holm, all, tglob, jglob, mglob);
	if (!strcmp(cmd, "ratio") && argc == 3)
		return cmd_ratio(argv[0], argv[1], argv[2], all, jglob, mglob, tsv);
	if (!strcmp(cmd, "targets") && argc == 0)
		return cmd_targets(trun, rrun, md);
	usage(2);
	return 2;
}
