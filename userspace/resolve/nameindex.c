// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The name index's file: one SQLite file per chj metadata device,
 * $CHJ_RESOLVE_CACHE_DIR/<chj uuid>.names (default /var/cache/chj-resolve),
 * mode 0600, beside the state store (store.c) and under the same rules.
 *
 * Tables:
 *   meta(k, v)           version, the identity (filesystem type and uuid,
 *                        chj uuid), epoch, root directory inode, entries
 *   ent(dir, name, ino, t)
 *                        every directory entry of the tree (t: DT_*),
 *                        keyed by (dir, name); an index on (ino, t) finds
 *                        an inode's names and a directory's parent
 *
 * Nothing is loaded whole: naming an inode is one B-tree search, plus one
 * per level of its directory's path; re-reading a changed directory reads
 * its rows and writes only the entries that differ.  A run's reads and
 * writes are one transaction (journal: a crash leaves the file of the run
 * before).
 *
 * Trust: only read from a regular file of root's, mode 0600 at most,
 * opened O_NOFOLLOW | O_NONBLOCK, in a directory owned by root that nobody
 * else can write; anything else is a warning and a run without it (the
 * file is not touched).  A file SQLite finds damaged, of another version,
 * filesystem or device is rebuilt (a walk) with a warning; a row this code
 * would not have written (an empty name, a '/', a NUL, a zero inode) is a
 * failed lookup: the run walks instead.  Every path printed is checked
 * with a stat (names.c), so the index can only ever name an inode, never
 * hide one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libchj.h"
#include "names.h"

#define NI_VERSION	1

enum { Q_BYINO, Q_BYINO_DIR, Q_LIST, Q_HAS, Q_PUT, Q_DEL, Q_DELDIR, Q_SUBDIRS };

static const char *const qsql[] = {
	[Q_BYINO] = "SELECT dir, name, t FROM ent WHERE ino = ?1",
	[Q_BYINO_DIR] = "SELECT dir, name, t FROM ent WHERE ino = ?1 AND t = 4",
	[Q_LIST] = "SELECT name, ino, t FROM ent WHERE dir = ?1",
	[Q_HAS] = "SELECT 1 FROM ent WHERE dir = ?1 LIMIT 1",
	[Q_PUT] = "INSERT OR REPLACE INTO ent(dir, name, ino, t) VALUES(?1, ?2, ?3, ?4)",
	[Q_DEL] = "DELETE FROM ent WHERE dir = ?1 AND name = ?2",
	[Q_DELDIR] = "DELETE FROM ent WHERE dir = ?1",
	[Q_SUBDIRS] = "SELECT ino FROM ent WHERE dir = ?1 AND t = 4",
};

static const char schema[] =
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"
	"CREATE TABLE ent(dir INTEGER NOT NULL, name BLOB NOT NULL, ino INTEGER NOT NULL,"
	" t INTEGER NOT NULL, PRIMARY KEY(dir, name)) WITHOUT ROWID;";
static const char ino_index[] = "CREATE INDEX IF NOT EXISTS ent_ino ON ent(ino, t);";

int cache_off(void)
{
	const char *v = getenv("CHJ_RESOLVE_CACHE");

	return v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"));
}

const char *cache_dir(void)
{
	const char *dir = getenv("CHJ_RESOLVE_CACHE_DIR");

	return dir && *dir ? dir : "/var/cache/chj-resolve";
}

/*
 * The cache directory, opened, if it is safe: a directory owned by root
 * that no group or other can write (else another user could plant a FIFO
 * that hangs the run, or a symlink to a device or another file).  -1
 * otherwise: missing is quiet (nothing yet), unsafe is a warning, and the
 * run goes on without the index.  With create, a missing default directory
 * is made.
 */
int cache_dir_open(struct resolver *r, int create)
{
	const char *dir = cache_dir();
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create && !getenv("CHJ_RESOLVE_CACHE_DIR") &&
	    !mkdir(dir, 0700))
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			fprintf(stderr, "chj-resolve: warning: name cache directory %s: %s: running without the cache\n",
				dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & 022)) {
		fprintf(stderr, "chj-resolve: warning: name cache directory %s is not owned by root or is writable by others: running without the cache\n",
			dir);
		snprintf(r->st.cache, sizeof(r->st.cache), "not used: unsafe directory");
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- entry lists ---- */

void nl_add(struct nlist *l, uint64_t dir, const char *name, size_t len, uint64_t ino,
	    uint8_t dtype)
{
	struct nent *e;

	if (l->alen + len > UINT32_MAX) {
		fputs("chj-resolve: name list too large\n", stderr);
		exit(RX_ERROR);
	}
	xgrow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	xgrow((void **)&l->a, &l->acap, l->alen + len + 1, 1);
	e = &l->v[l->n++];
	e->dir = dir;
	e->ino = ino;
	e->name = (uint32_t)l->alen;
	e->len = (uint16_t)len;
	e->dtype = dtype;
	memcpy(l->a + l->alen, name, len);
	l->alen += len;
}

void nl_free(struct nlist *l)
{
	free(l->v);
	free(l->a);
	memset(l, 0, sizeof(*l));
}

static const char *sort_arena;

static int nent_cmp(const void *pa, const void *pb)
{
	const struct nent *a = pa, *b = pb;
	int c = memcmp(sort_arena + a->name, sort_arena + b->name, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

void nl_sort(struct nlist *l)
{
	sort_arena = l->a;
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), nent_cmp);
}

/* ---- the file ---- */

static int exec(struct nidx *x, const char *sql)
{
	return sqlite3_exec(x->db, sql, NULL, NULL, NULL) ? -1 : 0;
}

static void nidx_warn(const struct nidx *x, const char *what)
{
	fprintf(stderr, "chj-resolve: warning: name cache %s: %s\n", x->path, what);
}

static int meta_int(struct nidx *x, const char *k, uint64_t *v)
{
	sqlite3_stmt *q;
	int rc = -1;

	if (sqlite3_prepare_v2(x->db, "SELECT v FROM meta WHERE k = ?", -1, &q, NULL))
		return -1;
	sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) == SQLITE_INTEGER &&
	    sqlite3_column_int64(q, 0) >= 0) {
		*v = (uint64_t)sqlite3_column_int64(q, 0);
		rc = 0;
	}
	sqlite3_finalize(q);
	return rc;
}

static int meta_text_is(struct nidx *x, const char *k, const char *want)
{
	sqlite3_stmt *q;
	int rc = 0;

	if (sqlite3_prepare_v2(x->db, "SELECT v FROM meta WHERE k = ?", -1, &q, NULL))
		return 0;
	sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) == SQLITE_TEXT &&
	    (size_t)sqlite3_column_bytes(q, 0) == strlen(want) &&
	    !memcmp(sqlite3_column_text(q, 0), want, strlen(want)))
		rc = 1;
	sqlite3_finalize(q);
	return rc;
}

static int meta_put(struct nidx *x, const char *k, const char *text, uint64_t v)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(x->db, "INSERT OR REPLACE INTO meta(k, v) VALUES(?, ?)", -1, &q, NULL))
		return -1;
	sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
	if (text)
		sqlite3_bind_text(q, 2, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_int64(q, 2, (sqlite3_int64)v);
	rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(q);
	return rc;
}

static void finalize_all(struct nidx *x)
{
	for (size_t i = 0; i < sizeof(x->q) / sizeof(x->q[0]); i++) {
		sqlite3_finalize(x->q[i]);
		x->q[i] = NULL;
	}
}

static int prepare_all(struct nidx *x)
{
	for (size_t i = 0; i < sizeof(qsql) / sizeof(qsql[0]); i++)
		if (sqlite3_prepare_v2(x->db, qsql[i], -1, (sqlite3_stmt **)&x->q[i], NULL))
			return -1;
	return 0;
}

/* Drop whatever the file holds and start an empty index. */
static int fill(struct nidx *x, const char *ident)
{
	finalize_all(x);
	exec(x, "DROP TABLE IF EXISTS ent; DROP TABLE IF EXISTS meta;");
	x->usable = 0;
	x->entries = 0;
	return exec(x, schema) || meta_put(x, "version", NULL, NI_VERSION) ||
	       meta_put(x, "ident", ident, 0) || prepare_all(x) ? -1 : 0;
}

static int open_db(struct nidx *x)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(x->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL)) {
		sqlite3_close(db);
		return -1;
	}
	sqlite3_busy_timeout(db, 30000);
	x->db = db;
	/* A run's pages stay cached; the rebuild's sort of the inode index
	 * runs in memory. */
	exec(x, "PRAGMA cache_size = -65536");
	return exec(x, "BEGIN IMMEDIATE");
}

/* The file SQLite cannot use at all: truncated (its journal removed) and
 * opened again, empty. */
static int reopen_empty(struct nidx *x)
{
	char j[4300];
	int fd;

	finalize_all(x);
	sqlite3_close(x->db);
	x->db = NULL;
	snprintf(j, sizeof(j), "%s-journal", x->path);
	unlink(j);
	fd = open(x->path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -1;
	close(fd);
	return open_db(x);
}

/* Open path (a file already checked) for ident; see nidx_open. */
static int open_checked(struct nidx *x, const char *ident, int fresh)
{
	uint64_t ver = 0;

	snprintf(x->ident, sizeof(x->ident), "%s", ident);
	if (open_db(x) && (!x->db || reopen_empty(x))) {
		nidx_warn(x, "cannot be opened: running without it");
		goto off;
	}
	if (fresh) {
		snprintf(x->why, sizeof(x->why), "created");
		goto rebuild;
	}
	if (meta_int(x, "version", &ver) || ver != NI_VERSION ||
	    exec(x, "SELECT dir, name, ino, t FROM ent LIMIT 0")) {
		nidx_warn(x, "damaged or of another version: not used, rebuilt");
		snprintf(x->why, sizeof(x->why), "damaged: rebuilt");
		goto rebuild;
	}
	if (!meta_text_is(x, "ident", ident)) {
		nidx_warn(x, "of another filesystem or chj device: not used, rebuilt");
		snprintf(x->why, sizeof(x->why), "of another filesystem: rebuilt");
		goto rebuild;
	}
	if (meta_int(x, "epoch", &x->epoch) || meta_int(x, "root", &x->root) ||
	    meta_int(x, "entries", &x->entries) || !x->root || prepare_all(x)) {
		/* Never completed (a first walk that failed), or damaged. */
		snprintf(x->why, sizeof(x->why), "incomplete: rebuilt");
		goto rebuild;
	}
	x->usable = 1;
	return 0;
rebuild:
	if (fill(x, ident) && (reopen_empty(x) || fill(x, ident))) {
		nidx_warn(x, "cannot be rebuilt: running without it");
		goto off;
	}
	return 0;
off:
	finalize_all(x);
	if (x->db) {
		sqlite3_close(x->db);
		x->db = NULL;
	}
	return -1;
}

int nidx_open(struct resolver *r, struct nidx *x)
{
	char u[37], name[64], ident[200];
	struct stat st;
	int dfd, fd, fresh = 0;

	memset(x, 0, sizeof(*x));
	dfd = cache_dir_open(r, 1);
	if (dfd < 0)
		return -1;
	chj_uuid_str(r->chj_uuid, u);
	snprintf(name, sizeof(name), "%s.names", u);
	snprintf(x->path, sizeof(x->path), "%s/%s", cache_dir(), name);
	snprintf(ident, sizeof(ident), "fs=%.31s uuid=%.47s chj=%s", r->fstype, r->fs_uuid, u);
	/* Never a FIFO (O_NONBLOCK: no hang), device or symlink. */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT) {
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		fresh = 1;
	}
	close(dfd);
	if (fd < 0) {
		fprintf(stderr, "chj-resolve: warning: name cache %s: %s: running without the cache\n",
			x->path, strerror(errno));
		snprintf(r->st.cache, sizeof(r->st.cache), "not used: %.100s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		nidx_warn(x, "not a regular file of root's, mode 0600: running without the cache");
		snprintf(r->st.cache, sizeof(r->st.cache), "not used: unsafe file");
		close(fd);
		return -1;
	}
	/* Kept for nidx_prefetch, and closed only after SQLite has closed
	 * the file: closing an fd of a file drops the process's POSIX locks
	 * on it, SQLite's among them. */
	if (open_checked(x, ident, fresh)) {
		close(fd);
		return -1;
	}
	x->rafd = fd + 1;
	return 0;
}

void nidx_prefetch(struct nidx *x, int by_dir, const uint64_t *v, size_t n)
{
	if (!x->db || !x->usable || x->rafd <= 0 || !n)
		return;
	/* ent's key is (dir, name); ent_ino's (ino, t, ...). */
	prefetch_sqlite(x->db, x->rafd - 1, by_dir ? "ent" : "ent_ino", NULL, v, n);
}

static void close_rafd(struct nidx *x)
{
	if (x->rafd > 0)
		close(x->rafd - 1);
	x->rafd = 0;
}

int nidx_close(struct nidx *x, int commit)
{
	int rc = 0;

	if (!x->db) {
		close_rafd(x);
		return -1;
	}
	finalize_all(x);
	if (commit && !x->failed &&
	    (meta_put(x, "epoch", NULL, x->epoch) || meta_put(x, "root", NULL, x->root) ||
	     meta_put(x, "entries", NULL, x->entries) || exec(x, "COMMIT")))
		rc = -1;
	if (!commit || x->failed || rc)
		exec(x, "ROLLBACK");
	sqlite3_close(x->db);
	x->db = NULL;
	close_rafd(x);
	return commit && !x->failed ? rc : -1;
}

int nidx_clear(struct nidx *x)
{
	x->usable = 0;
	x->entries = 0;
	x->failed = 0;
	finalize_all(x);
	/* An error may have rolled the run's transaction back. */
	if (sqlite3_get_autocommit(x->db) && exec(x, "BEGIN IMMEDIATE"))
		goto bad;
	if (!exec(x, "DROP INDEX IF EXISTS ent_ino; DELETE FROM ent;"
		     " DELETE FROM meta WHERE k IN ('epoch', 'root', 'entries')") &&
	    !prepare_all(x))
		return 0;
	/* Rows SQLite cannot delete (a damaged file): start it anew. */
	nidx_warn(x, "damaged: rebuilt");
	if (!fill(x, x->ident) || (!reopen_empty(x) && !fill(x, x->ident)))
		return 0;
bad:
	nidx_warn(x, "cannot be rebuilt: running without it");
	x->failed = 1;
	return -1;
}

int nidx_finish_build(struct nidx *x)
{
	if (x->failed || exec(x, ino_index)) {
		x->failed = 1;
		return -1;
	}
	return 0;
}

/* ---- queries ---- */

static sqlite3_stmt *q_start(struct nidx *x, int i, uint64_t a)
{
	sqlite3_stmt *q = x->q[i];

	if (x->failed || !q) {
		x->failed = 1;
		return NULL;
	}
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, (sqlite3_int64)a);
	return q;
}

/* A failed query or a row this code would not have written: nothing more
 * from the index this run (warned once). */
static int q_fail(struct nidx *x)
{
	if (!x->failed)
		nidx_warn(x, "a lookup failed or found a damaged row: not used, rebuilt");
	x->failed = 1;
	return -1;
}

/* A name as this code writes it: 1..255 bytes, no '/', no NUL. */
static int name_ok(const void *p, int len)
{
	return p && len > 0 && len <= 255 && !memchr(p, '/', (size_t)len) && !memchr(p, 0, (size_t)len);
}

int nidx_by_ino(struct nidx *x, uint64_t ino, int dirs_only, size_t max, struct nlist *l)
{
	sqlite3_stmt *q;
	int rc;
	size_t got = 0;

	if (!ino || ino > INT64_MAX)
		return 0;
	q = q_start(x, dirs_only ? Q_BYINO_DIR : Q_BYINO, ino);
	if (!q)
		return -1;
	/* The index must exist: without it this would be a scan. */
	x->looked++;
	while (got < max && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		sqlite3_int64 dir = sqlite3_column_int64(q, 0);
		const void *name = sqlite3_column_blob(q, 1);
		int len = sqlite3_column_bytes(q, 1);
		sqlite3_int64 t = sqlite3_column_int64(q, 2);

		if (dir <= 0 || !name_ok(name, len) || t < 0 || t > 255)
			return q_fail(x);
		nl_add(l, (uint64_t)dir, name, (size_t)len, ino, (uint8_t)t);
		got++;
	}
	if (got < max && rc != SQLITE_DONE)
		return q_fail(x);
	return 0;
}

int nidx_list(struct nidx *x, uint64_t dir, struct nlist *l)
{
	sqlite3_stmt *q = q_start(x, Q_LIST, dir);
	int rc;

	if (!q)
		return -1;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const void *name = sqlite3_column_blob(q, 0);
		int len = sqlite3_column_bytes(q, 0);
		sqlite3_int64 ino = sqlite3_column_int64(q, 1);
		sqlite3_int64 t = sqlite3_column_int64(q, 2);

		if (ino <= 0 || !name_ok(name, len) || t < 0 || t > 255)
			return q_fail(x);
		nl_add(l, dir, name, (size_t)len, (uint64_t)ino, (uint8_t)t);
	}
	return rc == SQLITE_DONE ? 0 : q_fail(x);
}

int nidx_has_entries(struct nidx *x, uint64_t dir)
{
	sqlite3_stmt *q = q_start(x, Q_HAS, dir);
	int rc;

	if (!q)
		return -1;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : q_fail(x);
}

int nidx_put(struct nidx *x, uint64_t dir, const char *name, size_t len, uint64_t ino,
	     uint8_t dtype)
{
	sqlite3_stmt *q = q_start(x, Q_PUT, dir);

	if (!q)
		return -1;
	sqlite3_bind_blob(q, 2, name, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, (sqlite3_int64)ino);
	sqlite3_bind_int(q, 4, dtype);
	if (sqlite3_step(q) != SQLITE_DONE)
		return q_fail(x);
	x->inserted++;
	x->entries++;
	return 0;
}

int nidx_del(struct nidx *x, uint64_t dir, const char *name, size_t len)
{
	sqlite3_stmt *q = q_start(x, Q_DEL, dir);
	uint64_t n;

	if (!q)
		return -1;
	sqlite3_bind_blob(q, 2, name, (int)len, SQLITE_STATIC);
	if (sqlite3_step(q) != SQLITE_DONE)
		return q_fail(x);
	n = (uint64_t)sqlite3_changes(x->db);
	x->deleted += n;
	x->entries = x->entries > n ? x->entries - n : 0;
	return 0;
}

int nidx_del_dir(struct nidx *x, uint64_t dir, uint64_t **sub, size_t *nsub, size_t *subcap)
{
	sqlite3_stmt *q = q_start(x, Q_SUBDIRS, dir);
	int rc;
	uint64_t n;

	if (!q)
		return -1;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		xgrow((void **)sub, subcap, *nsub + 1, sizeof(**sub));
		(*sub)[(*nsub)++] = (uint64_t)sqlite3_column_int64(q, 0);
	}
	if (rc != SQLITE_DONE)
		return q_fail(x);
	q = q_start(x, Q_DELDIR, dir);
	if (!q || sqlite3_step(q) != SQLITE_DONE)
		return q_fail(x);
	n = (uint64_t)sqlite3_changes(x->db);
	x->deleted += n;
	x->entries = x->entries > n ? x->entries - n : 0;
	return 0;
}

/* ---- fuzz harness entry ---- */

long nidx_fuzz_file(const char *path, struct nlist *l)
{
	struct nidx x;
	long rows = 0;
	uint64_t *sub = NULL;
	size_t nsub = 0, subcap = 0;

	memset(&x, 0, sizeof(x));
	snprintf(x.path, sizeof(x.path), "%s", path);
	if (open_checked(&x, "fs= uuid= chj=00000000-0000-0000-0000-000000000000", 0))
		return 0;
	exec(&x, "PRAGMA synchronous = OFF");
	if (x.usable) {
		/* What a run does: look up, re-read (write), collect. */
		for (uint64_t ino = 1; ino <= 64 && !x.failed; ino++) {
			nidx_by_ino(&x, ino, ino & 1, 16, l);
			nidx_list(&x, ino, l);
			nidx_has_entries(&x, ino);
		}
		rows = (long)l->n;
		nidx_put(&x, 2, "new", 3, 99, DT_REG);
		nidx_del(&x, 2, "a", 1);
		nidx_del_dir(&x, 3, &sub, &nsub, &subcap);
		free(sub);
	}
	/* And what a rebuild does. */
	if (!nidx_clear(&x)) {
		nidx_put(&x, 2, "a", 1, 3, DT_DIR);
		nidx_finish_build(&x);
	}
	x.root = 2;
	nidx_close(&x, 1);
	return rows;
}
