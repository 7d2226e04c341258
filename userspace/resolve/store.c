// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The resolver state store: one SQLite file per chj metadata device,
 * $CHJ_RESOLVE_CACHE_DIR/<chj uuid>.state (default /var/cache/chj-resolve),
 * mode 0600, in the name cache's directory and under its safety rules.
 *
 * Tables:
 *   meta(k, v)        version, the filesystem's identity, the hash key
 *   snap(epoch)       epochs whose start state the store holds (the last
 *                     ST_KEEP)
 *   rec(root, ino, from_e, until_e, h)
 *                     the keyed hash h of the record of inode (root, ino)
 *                     at the start of every snapshot epoch E with
 *                     from_e <= E < until_e (until_e ST_OPEN while current);
 *                     h NULL: unknown (read while its region was marked)
 *
 * A lookup is one B-tree search on (root, ino): nothing is loaded whole.
 * An update closes the rows of the records that changed and adds rows for
 * their new state; rows no kept snapshot needs are deleted (an index on
 * the closed rows only).  Everything a run writes is one transaction.
 *
 * Trust: the store is only ever used to *drop* a candidate whose record
 * hashes exactly to its state at the epoch's start.  The hash is SipHash
 * with a random key kept in the store (root's, mode 0600), bound to the
 * inode number, so a damaged row or a crafted record cannot match by
 * accident.  A store that SQLite finds damaged, of another version,
 * filesystem or chj device, or with no snapshot of the epoch asked about,
 * is not used (a warning) and is rebuilt; a failed lookup drops nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "libchj.h"
#include "names.h"
#include "store.h"

#define ST_VERSION	"1"
#define ST_OPEN		(1LL << 62)

/* ---- SipHash-2-4-128 ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND							\
	do {								\
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;			\
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;			\
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

void siphash128(const uint8_t key[16], const void *in, size_t len, uint8_t out[16])
{
	const unsigned char *p = in, *end = p + (len - len % 8);
	uint64_t k0 = le64(key), k1 = le64(key + 8);
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56, m;

	v1 ^= 0xee;
	for (; p != end; p += 8) {
		m = le64(p);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t i = 0; i < len % 8; i++)
		b |= (uint64_t)p[i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xee;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	put_le64(out, v0 ^ v1 ^ v2 ^ v3);
	v1 ^= 0xdd;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	put_le64(out + 8, v0 ^ v1 ^ v2 ^ v3);
}

/* ---- SQLite helpers ---- */

static int exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static const char schema[] =
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID;"
	"CREATE TABLE snap(epoch INTEGER PRIMARY KEY);"
	"CREATE TABLE rec(root INTEGER NOT NULL, ino INTEGER NOT NULL, from_e INTEGER NOT NULL,"
	" until_e INTEGER NOT NULL, h BLOB, PRIMARY KEY(root, ino, from_e)) WITHOUT ROWID;"
	"CREATE INDEX rec_closed ON rec(until_e) WHERE until_e < 4611686018427387904;";

static void store_warn(struct store *s, const char *what)
{
	fprintf(stderr, "chj-resolve: warning: state store %s: %s\n", s->path, what);
}

/* A meta value as a blob; -1 if missing or of another size. */
static int meta_get(sqlite3 *db, const char *k, void *buf, size_t len)
{
	sqlite3_stmt *q;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = ?", -1, &q, NULL))
		return -1;
	sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW && (size_t)sqlite3_column_bytes(q, 0) == len) {
		const void *v = sqlite3_column_blob(q, 0);

		if (v || !len) {
			memcpy(buf, v, len);
			rc = 0;
		}
	}
	sqlite3_finalize(q);
	return rc;
}

static int meta_put(sqlite3 *db, const char *k, const void *v, size_t len)
{
	sqlite3_stmt *q;
	int rc;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(k, v) VALUES(?, ?)", -1, &q, NULL))
		return -1;
	sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
	sqlite3_bind_blob(q, 2, v, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(q);
	return rc;
}

static int open_db(struct store *s);

static int fill(struct store *s, const char *ident)
{
	sqlite3 *db = s->db;

	exec(db, "DROP TABLE IF EXISTS meta; DROP TABLE IF EXISTS snap; DROP TABLE IF EXISTS rec;");
	return exec(db, schema) || meta_put(db, "version", ST_VERSION, strlen(ST_VERSION)) ||
	       meta_put(db, "ident", ident, strlen(ident)) ||
	       meta_put(db, "key", s->key, sizeof(s->key)) ? -1 : 0;
}

/*
 * Empty the store and give it a new identity and key; a file SQLite
 * cannot use at all is truncated first (and its rollback journal, which
 * would be played back into it, removed).  -1 with s->db closed.
 */
static int reset(struct store *s, const char *ident)
{
	char j[4300];
	int fd;

	if (getrandom(s->key, sizeof(s->key), 0) != (ssize_t)sizeof(s->key))
		goto fail;
	if (!fill(s, ident))
		return 0;
	snprintf(s->err, sizeof(s->err), "%s", sqlite3_errmsg(s->db));
	sqlite3_close(s->db);
	s->db = NULL;
	snprintf(j, sizeof(j), "%s-journal", s->path);
	unlink(j);
	fd = open(s->path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(s->err, sizeof(s->err), "truncate: %s", strerror(errno));
		return -1;
	}
	close(fd);
	if (!open_db(s) && !fill(s, ident))
		return 0;
	if (s->db)
		snprintf(s->err, sizeof(s->err), "%s", sqlite3_errmsg(s->db));
fail:
	if (s->db)
		sqlite3_close(s->db);
	s->db = NULL;
	return -1;
}

/* The snapshots: whether `want` is one, and the newest.  -1 on error. */
static int snapshots(sqlite3 *db, uint64_t want, int *has, uint64_t *latest)
{
	sqlite3_stmt *q;
	int rc;

	*has = 0;
	*latest = 0;
	if (sqlite3_prepare_v2(db, "SELECT epoch FROM snap", -1, &q, NULL))
		return -1;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		sqlite3_int64 e = sqlite3_column_int64(q, 0);

		if (e <= 0)
			continue;
		if ((uint64_t)e == want)
			*has = 1;
		if ((uint64_t)e > *latest)
			*latest = (uint64_t)e;
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int state_off(void)
{
	const char *v = getenv("CHJ_RESOLVE_STATE");

	return v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"));
}

/* Open the file at s->path; 0, or -1 with the store off. */
static int open_db(struct store *s)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL)) {
		sqlite3_close(db);
		return -1;
	}
	sqlite3_busy_timeout(db, 30000);
	s->db = db;
	return 0;
}

/*
 * Decide what the store can do for this run: compare (a snapshot of the
 * epoch asked about) and how to bring it to the current epoch.
 */
static void plan(struct store *s, const char *ident)
{
	struct resolver *r = s->r;
	sqlite3 *db = s->db;
	char ver[8] = { 0 }, *id = xcalloc(1, strlen(ident) + 1);
	int has = 0, bad;

	bad = meta_get(db, "version", ver, strlen(ST_VERSION)) || strcmp(ver, ST_VERSION) ||
	      meta_get(db, "key", s->key, sizeof(s->key)) ||
	      exec(db, "SELECT root, ino, from_e, until_e, h FROM rec LIMIT 0");
	if (!bad && (meta_get(db, "ident", id, strlen(ident)) || strcmp(id, ident))) {
		store_warn(s, "of another filesystem or chj device: not used, rebuilt");
		snprintf(s->why, sizeof(s->why), "of another filesystem: rebuilt");
		goto rebuild;
	}
	if (bad || snapshots(db, r->since, &has, &s->latest)) {
		store_warn(s, "damaged or of another version: not used, rebuilt");
		snprintf(s->why, sizeof(s->why), "damaged: rebuilt");
		goto rebuild;
	}
	if (s->latest > r->current_epoch) {
		store_warn(s, "holds epochs newer than the current one: not used, rebuilt");
		snprintf(s->why, sizeof(s->why), "from a newer epoch %llu: rebuilt",
			 (unsigned long long)s->latest);
		goto rebuild;
	}
	s->can_compare = has;
	if (s->latest == r->current_epoch) {
		s->update = ST_UPD_NONE;
	} else if (s->latest && r->since <= s->latest) {
		/* What changed since the epoch asked about includes everything
		 * changed since the newest snapshot. */
		s->update = ST_UPD_INCR;
	} else {
		/* Everything re-read; the older snapshots stay valid. */
		s->update = ST_UPD_FULL;
		s->keep = s->latest != 0;
	}
	if (!has) {
		char m[160];

		snprintf(m, sizeof(m), "no state for epoch %llu (newest %llu): listing conservatively%s",
			 (unsigned long long)r->since, (unsigned long long)s->latest,
			 s->update == ST_UPD_FULL ? ", rebuilt" : "");
		store_warn(s, m);
		snprintf(s->why, sizeof(s->why), "no state for epoch %llu", (unsigned long long)r->since);
	} else {
		snprintf(s->why, sizeof(s->why), "state of epoch %llu used", (unsigned long long)r->since);
	}
	free(id);
	return;
rebuild:
	free(id);
	s->can_compare = 0;
	s->update = ST_UPD_FULL;
	if (reset(s, ident)) {
		char m[300];

		snprintf(m, sizeof(m), "cannot be rebuilt (%s): running without it", s->err);
		store_warn(s, m);
		s->update = ST_UPD_NONE;
	}
}

void store_open(struct resolver *r, struct store *s, const char *ident)
{
	char u[37];
	struct stat st;
	int dfd, fresh = 0;
	char name[64];

	memset(s, 0, sizeof(*s));
	s->r = r;
	if (!r->epoch_known || state_off()) {
		snprintf(s->why, sizeof(s->why), "off");
		return;
	}
	dfd = cache_dir_open(r, 1);
	if (dfd < 0) {
		snprintf(s->why, sizeof(s->why), "off: no safe directory");
		return;
	}
	chj_uuid_str(r->chj_uuid, u);
	snprintf(name, sizeof(name), "%s.state", u);
	snprintf(s->path, sizeof(s->path), "%s/%s", cache_dir(), name);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		int fd;

		if (errno != ENOENT) {
			store_warn(s, strerror(errno));
			goto off;
		}
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			store_warn(s, strerror(errno));
			goto off;
		}
		close(fd);
		fresh = 1;
	} else if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
		store_warn(s, "not a regular file of root's, mode 0600: running without it");
		goto off;
	}
	/* Kept (store_prefetch) until SQLite has closed the file: closing an
	 * fd of a file drops the process's POSIX locks on it, SQLite's too. */
	s->rafd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY) + 1;
	close(dfd);
	dfd = -1;
	if (open_db(s)) {
		store_warn(s, "cannot be opened: running without it");
		goto off;
	}
	if (fresh) {
		snprintf(s->why, sizeof(s->why), "created");
		s->update = ST_UPD_FULL;
		if (reset(s, ident)) {
			store_warn(s, "cannot be created: running without it");
			s->update = ST_UPD_NONE;
		}
		return;
	}
	plan(s, ident);
	if (s->db && s->can_compare &&
	    sqlite3_prepare_v2(s->db,
			       "SELECT h FROM rec WHERE root = ?1 AND ino = ?2 AND from_e <= ?3 AND until_e > ?3",
			       -1, (sqlite3_stmt **)&s->q_get, NULL)) {
		store_warn(s, "damaged: not used, rebuilt");
		s->can_compare = 0;
		s->update = ST_UPD_FULL;
		if (reset(s, ident))
			s->update = ST_UPD_NONE;
	}
	return;
off:
	if (dfd >= 0)
		close(dfd);
	snprintf(s->why, sizeof(s->why), "off");
}

void store_hash(struct store *s, uint64_t root, uint64_t ino, const void *rec, size_t len,
		uint8_t out[ST_HASH])
{
	xgrow((void **)&s->scratch, &s->scap, len + 16, 1);
	put_le64(s->scratch, root);
	put_le64(s->scratch + 8, ino);
	memcpy(s->scratch + 16, rec, len);
	siphash128(s->key, s->scratch, len + 16, out);
}

/*
 * The value of (root, ino) at the start of epoch r->since: the number of
 * rows (one in a store this code wrote), the last row's value in out when
 * it is ST_HASH bytes (*has), whether it is NULL (*null: its region was
 * marked); -1 when the store is not usable or the lookup failed.
 */
static bool lookup_usable(const struct store *s)
{
	return s->db && s->can_compare && !s->failed && s->q_get;
}

static int lookup(struct store *s, uint64_t root, uint64_t ino, uint8_t out[ST_HASH],
		  int *has, int *null)
{
	sqlite3_stmt *q = s->q_get;
	int rc, rows = 0;

	*has = *null = 0;
	if (!lookup_usable(s))
		return -1;
	/* One read transaction for every lookup (not a lock per lookup). */
	if (!s->reading && !exec(s->db, "BEGIN"))
		s->reading = 1;
	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, (sqlite3_int64)root);
	sqlite3_bind_int64(q, 2, (sqlite3_int64)ino);
	sqlite3_bind_int64(q, 3, (sqlite3_int64)s->r->since);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		const void *v = sqlite3_column_blob(q, 0);

		rows++;
		*null = sqlite3_column_type(q, 0) == SQLITE_NULL;
		*has = v && sqlite3_column_bytes(q, 0) == ST_HASH;
		if (*has)
			memcpy(out, v, ST_HASH);
	}
	if (rc != SQLITE_DONE) {
		/* Damaged: nothing it said counts (the caller drops nothing). */
		s->failed = 1;
		store_warn(s, "a lookup failed (damaged?): not used, rebuilt");
		snprintf(s->why, sizeof(s->why), "a lookup failed: rebuilt");
		return -1;
	}
	return rows;
}

int store_same(struct store *s, uint64_t root, uint64_t ino, const uint8_t h[ST_HASH])
{
	uint8_t v[ST_HASH];
	int rows, has, null, same;

	if (lookup_usable(s))
		s->looked++;
	rows = lookup(s, root, ino, v, &has, &null);
	/* Two rows for one epoch is not a store this code wrote. */
	same = rows == 1 && has && !memcmp(v, h, ST_HASH);
	if (same)
		s->same++;
	else if (rows == 1 && null)
		s->unknown++;
	return same;
}

int store_get(struct store *s, uint64_t root, uint64_t ino, uint8_t out[ST_HASH])
{
	uint8_t v[ST_HASH];
	int has, null;

	if (lookup(s, root, ino, v, &has, &null) != 1 || !has)
		return 0;
	memcpy(out, v, ST_HASH);
	return 1;
}

void store_prefetch(struct store *s, uint64_t root, const uint64_t *ino, size_t n)
{
	int64_t r = (int64_t)root;

	if (!s->db || !s->can_compare || s->failed || s->rafd <= 0)
		return;
	/* rec's key is (root, ino, from_e): the leaves of (root, ino). */
	prefetch_sqlite(s->db, s->rafd - 1, "rec", &r, ino, n);
}

int store_open_keys(struct store *s, uint64_t root, uint64_t **keys, size_t *n)
{
	sqlite3_stmt *q;
	size_t cap = 0;
	int rc;

	*keys = NULL;
	*n = 0;
	if (!s->db)
		return -1;
	if (sqlite3_prepare_v2(s->db, "SELECT ino FROM rec WHERE root = ?1 AND until_e = ?2", -1, &q,
			       NULL))
		return -1;
	sqlite3_bind_int64(q, 1, (sqlite3_int64)root);
	sqlite3_bind_int64(q, 2, ST_OPEN);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		xgrow((void **)keys, &cap, *n + 1, sizeof(**keys));
		(*keys)[(*n)++] = (uint64_t)sqlite3_column_int64(q, 0);
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE) {
		free(*keys);
		*keys = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

void store_stage(struct store *s, uint64_t root, uint64_t ino, uint64_t off, uint32_t len,
		 int kind, const uint8_t *h)
{
	struct st_ent *e;

	if (!s->db || s->update == ST_UPD_NONE)
		return;
	xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v));
	e = &s->v[s->n++];
	e->root = root;
	e->ino = ino;
	e->off = off;
	e->len = len;
	e->kind = kind;
	if (h)
		memcpy(e->h, h, ST_HASH);
	else
		memset(e->h, 0, ST_HASH);
	s->staged++;
}

/* Write the staged states as the snapshot of the current epoch. */
/*
 * With qo = "SELECT from_e, h FROM rec WHERE root = ?1 AND ino = ?2 AND
 * until_e = ?3": how many of e's rows end at until (*open), and whether the
 * last one holds e's hash (*same).  -1 on an SQLite error.
 */
static int rows_until(sqlite3_stmt *qo, const struct st_ent *e, sqlite3_int64 until,
		      int *open, int *same)
{
	int rc;

	sqlite3_reset(qo);
	sqlite3_bind_int64(qo, 1, (sqlite3_int64)e->root);
	sqlite3_bind_int64(qo, 2, (sqlite3_int64)e->ino);
	sqlite3_bind_int64(qo, 3, until);
	while ((rc = sqlite3_step(qo)) == SQLITE_ROW) {
		const void *v = sqlite3_column_blob(qo, 1);

		(*open)++;
		*same = e->kind == ST_KNOWN && v && sqlite3_column_bytes(qo, 1) == ST_HASH &&
			!memcmp(v, e->h, ST_HASH);
	}
	return rc == SQLITE_DONE ? 0 : -1;
}

/* With qc = "UPDATE rec SET until_e = ?4 WHERE ... until_e = ?3": move e's rows. */
static int move_until(sqlite3_stmt *qc, const struct st_ent *e, sqlite3_int64 from,
		      sqlite3_int64 to)
{
	sqlite3_reset(qc);
	sqlite3_bind_int64(qc, 1, (sqlite3_int64)e->root);
	sqlite3_bind_int64(qc, 2, (sqlite3_int64)e->ino);
	sqlite3_bind_int64(qc, 3, from);
	sqlite3_bind_int64(qc, 4, to);
	return sqlite3_step(qc) == SQLITE_DONE ? 0 : -1;
}

static int write_snapshot(struct store *s)
{
	sqlite3 *db = s->db;
	uint64_t cur = s->r->current_epoch, latest;
	sqlite3_stmt *qo = NULL, *qc = NULL, *qi = NULL;
	int has, ok = 0;

	if (exec(db, "BEGIN IMMEDIATE"))
		return -1;
	/* Another run may have written meanwhile: plan again. */
	if (snapshots(db, cur, &has, &latest))
		goto out;
	if (has) {
		ok = 1;
		goto out;
	}
	if (s->update == ST_UPD_INCR ? latest != s->latest : 0)
		goto out;
	if (s->update == ST_UPD_FULL && !s->keep &&
	    (exec(db, "DELETE FROM rec") || exec(db, "DELETE FROM snap")))
		goto out;
	if (s->update == ST_UPD_FULL && s->keep) {
		/*
		 * Every in-use record is re-read: close every open row at the
		 * current epoch; a record found unchanged reopens its row
		 * below, the others (changed, freed, not read) stay closed.
		 */
		char sql[160];

		if (latest != s->latest)
			goto out;
		snprintf(sql, sizeof(sql), "UPDATE rec SET until_e = %llu WHERE until_e = %lld",
			 (unsigned long long)cur, ST_OPEN);
		if (exec(db, sql))
			goto out;
	}
	if (sqlite3_prepare_v2(db, "SELECT from_e, h FROM rec WHERE root = ?1 AND ino = ?2 AND until_e = ?3",
			       -1, &qo, NULL) ||
	    sqlite3_prepare_v2(db, "UPDATE rec SET until_e = ?4 WHERE root = ?1 AND ino = ?2 AND until_e = ?3",
			       -1, &qc, NULL) ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO rec(root, ino, from_e, until_e, h) VALUES(?1, ?2, ?3, ?4, ?5)",
			       -1, &qi, NULL))
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		const struct st_ent *e = &s->v[i];
		int open = 0, same = 0;

		if (s->update == ST_UPD_FULL && s->keep) {
			/* The row just closed: unchanged, it goes on. */
			if (rows_until(qo, e, (sqlite3_int64)cur, &open, &same))
				goto out;
			if (open == 1 && same) {
				if (move_until(qc, e, (sqlite3_int64)cur, ST_OPEN))
					goto out;
				continue;
			}
		}
		if (s->update == ST_UPD_INCR) {
			if (rows_until(qo, e, ST_OPEN, &open, &same))
				goto out;
			/* Unchanged since its row began: the row goes on. */
			if (open == 1 && same)
				continue;
			if (open && move_until(qc, e, ST_OPEN, (sqlite3_int64)cur))
				goto out;
		}
		if (e->kind == ST_FREE)
			continue;
		sqlite3_reset(qi);
		sqlite3_bind_int64(qi, 1, (sqlite3_int64)e->root);
		sqlite3_bind_int64(qi, 2, (sqlite3_int64)e->ino);
		sqlite3_bind_int64(qi, 3, (sqlite3_int64)cur);
		sqlite3_bind_int64(qi, 4, ST_OPEN);
		if (e->kind == ST_KNOWN)
			sqlite3_bind_blob(qi, 5, e->h, ST_HASH, SQLITE_STATIC);
		else
			sqlite3_bind_null(qi, 5);
		if (sqlite3_step(qi) != SQLITE_DONE)
			goto out;
		s->written++;
	}
	{
		char sql[256];
		sqlite3_int64 oldest;
		sqlite3_stmt *q;

		snprintf(sql, sizeof(sql), "INSERT INTO snap(epoch) VALUES(%llu)", (unsigned long long)cur);
		if (exec(db, sql))
			goto out;
		snprintf(sql, sizeof(sql),
			 "DELETE FROM snap WHERE epoch NOT IN (SELECT epoch FROM snap ORDER BY epoch DESC LIMIT %d)",
			 ST_KEEP);
		if (exec(db, sql) || sqlite3_prepare_v2(db, "SELECT min(epoch) FROM snap", -1, &q, NULL))
			goto out;
		oldest = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
		sqlite3_finalize(q);
		/* Rows no kept snapshot needs. */
		snprintf(sql, sizeof(sql), "DELETE FROM rec WHERE until_e < %lld AND until_e <= %lld",
			 ST_OPEN, (long long)oldest);
		if (exec(db, sql))
			goto out;
	}
	ok = 1;
out:
	sqlite3_finalize(qo);
	sqlite3_finalize(qc);
	sqlite3_finalize(qi);
	if (ok && !exec(db, "COMMIT"))
		return 0;
	exec(db, "ROLLBACK");
	return -1;
}

static void end_reading(struct store *s)
{
	if (s->reading) {
		sqlite3_reset(s->q_get);
		exec(s->db, "COMMIT");
		s->reading = 0;
	}
}

static int cmp_off(const void *a, const void *b)
{
	const struct st_ent *x = a, *y = b;

	return (x->off > y->off) - (x->off < y->off);
}

void store_commit(struct store *s)
{
	struct resolver *r = s->r;
	struct rangeset read, marked;

	end_reading(s);
	if (!s->db || s->update == ST_UPD_NONE)
		return;
	memcpy(s->saved_err, r->err, sizeof(r->err));
	s->saved_code = r->err_code;
	rs_init(&read);
	rs_init(&marked);
	for (size_t i = 0; i < s->n; i++)
		rs_add(&read, s->v[i].off, s->v[i].len);
	rs_normalize(&read);
	/* The marks of the current epoch, read after every record was. */
	if (target_epoch_marks(r, &read, &marked)) {
		char m[1200];

		snprintf(m, sizeof(m), "the current epoch's marks cannot be read (%s): not updated",
			 r->err);
		store_warn(s, m);
		snprintf(s->why, sizeof(s->why), "not updated: marks unreadable");
		/* Not the run's failure: the answer does not depend on it. */
		memcpy(r->err, s->saved_err, sizeof(r->err));
		r->err_code = s->saved_code;
		goto out;
	}
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_off);
	for (size_t i = 0; i < s->n; i++)
		if (rs_overlaps(&marked, s->v[i].off, s->v[i].len)) {
			s->v[i].kind = ST_UNKNOWN;
			s->marked++;
		}
	if (write_snapshot(s)) {
		store_warn(s, sqlite3_errmsg(s->db));
		snprintf(s->why, sizeof(s->why), "not updated: %s", sqlite3_errmsg(s->db));
	}
out:
	rs_free(&read);
	rs_free(&marked);
}

void store_close(struct store *s)
{
	end_reading(s);
	if (s->q_get)
		sqlite3_finalize(s->q_get);
	if (s->db)
		sqlite3_close(s->db);
	if (s->rafd > 0)
		close(s->rafd - 1);
	free(s->v);
	free(s->scratch);
	memset(s, 0, sizeof(*s));
}

void store_describe(const struct store *s, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s; %llu candidates looked up, %llu unchanged (not listed), %llu unknown; "
		 "%llu records read for epoch %llu, %llu marked (unknown), %llu rows written",
		 s->why, (unsigned long long)s->looked, (unsigned long long)s->same,
		 (unsigned long long)s->unknown, (unsigned long long)s->staged,
		 (unsigned long long)(s->r ? s->r->current_epoch : 0),
		 (unsigned long long)s->marked, (unsigned long long)s->written);
}

int store_fuzz_file(const char *path)
{
	struct resolver r;
	struct store s;
	uint8_t h[ST_HASH] = { 0 };
	int n = 0;

	memset(&r, 0, sizeof(r));
	memset(&s, 0, sizeof(s));
	r.since = 2;
	r.current_epoch = 3;
	s.r = &r;
	snprintf(s.path, sizeof(s.path), "%s", path);
	if (open_db(&s))
		return 0;
	/* Speed only (the harness's file is scratch): no fsync. */
	exec(s.db, "PRAGMA synchronous = OFF");
	plan(&s, "fuzz");
	if (s.db && s.can_compare &&
	    !sqlite3_prepare_v2(s.db,
				"SELECT h FROM rec WHERE root = ?1 AND ino = ?2 AND from_e <= ?3 AND until_e > ?3",
				-1, (sqlite3_stmt **)&s.q_get, NULL))
		for (uint64_t ino = 0; ino < 64; ino++)
			n += store_same(&s, 0, ino, h);
	/*
	 * The open rows' keys (XFS closes those gone): on an error nothing
	 * returned, else one key per row SQLite counts (> 64: the harness
	 * aborts).
	 */
	if (s.db) {
		uint64_t *k = NULL;
		size_t nk = 0;
		sqlite3_stmt *q = NULL;
		long long rows = -1;

		if (store_open_keys(&s, 0, &k, &nk)) {
			if (k || nk)
				n = 1000;
		} else if (!sqlite3_prepare_v2(s.db,
				"SELECT count(*) FROM rec WHERE root = 0 AND until_e = ?1", -1, &q,
				NULL)) {
			sqlite3_bind_int64(q, 1, ST_OPEN);
			if (sqlite3_step(q) == SQLITE_ROW)
				rows = sqlite3_column_int64(q, 0);
			if (rows >= 0 && (size_t)rows != nk)
				n = 1000;
		}
		if (q)
			sqlite3_finalize(q);
		free(k);
	}
	store_close(&s);
	return n;
}
