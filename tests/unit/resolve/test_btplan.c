// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The read-ahead plan of a SQLite B-tree (btplan.c), against SQLite
 * itself: a fresh connection, through a VFS that records every page it
 * reads, makes the searches; every page it reads must be one the plan
 * read (the interior) or advised (the leaves).  The trees are made as the
 * state store's and the name index's are (WITHOUT ROWID keys, an index on
 * a later column), with small pages so that they are deep, keys of every
 * integer width, and one key whose entries fill many leaves (the interior
 * keys then equal the key searched: both neighbours of such a cell hold
 * it).  A plan made for other keys is caught by the same check (the
 * oracle can fail), and a plan names far fewer leaves than the tree has.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "btplan.h"
#include "resolve.h"
#include "suites.h"

/* ---- a VFS that records the pages of the main database read ---- */

#define MAXPG 65536
static unsigned char pg_read[MAXPG];	/* by SQLite, through the shim */
static int recording;
static sqlite3_vfs shim, *real_vfs;
static const int test_psize = 512;

struct shim_file {
	sqlite3_file base;
	int main_db;
	sqlite3_file *real;
};

#define REAL(f) (((struct shim_file *)(f))->real)

static int s_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}

static int s_read(sqlite3_file *f, void *b, int amt, sqlite3_int64 off)
{
	if (recording && ((struct shim_file *)f)->main_db && off / test_psize < MAXPG - 1)
		pg_read[off / test_psize + 1] = 1;
	return REAL(f)->pMethods->xRead(REAL(f), b, amt, off);
}

static int s_write(sqlite3_file *f, const void *b, int amt, sqlite3_int64 off)
{
	return REAL(f)->pMethods->xWrite(REAL(f), b, amt, off);
}

static int s_truncate(sqlite3_file *f, sqlite3_int64 sz)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), sz);
}

static int s_sync(sqlite3_file *f, int fl)
{
	return REAL(f)->pMethods->xSync(REAL(f), fl);
}

static int s_size(sqlite3_file *f, sqlite3_int64 *sz)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), sz);
}

static int s_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}

static int s_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}

static int s_reserved(sqlite3_file *f, int *r)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r);
}

static int s_fctl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int s_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int s_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

/* Version 1: no shared memory (no WAL) and no memory mapping, so every
 * page comes through s_read. */
static const sqlite3_io_methods shim_io = {
	1, s_close, s_read, s_write, s_truncate, s_sync, s_size, s_lock, s_unlock, s_reserved,
	s_fctl, s_sector, s_devchar, NULL, NULL, NULL, NULL, NULL, NULL,
};

static int s_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
	struct shim_file *s = (struct shim_file *)f;
	int rc;

	(void)v;
	s->real = (sqlite3_file *)(s + 1);
	s->main_db = !!(flags & SQLITE_OPEN_MAIN_DB);
	rc = real_vfs->xOpen(real_vfs, name, s->real, flags, out);
	s->base.pMethods = rc == SQLITE_OK && s->real->pMethods ? &shim_io : NULL;
	return rc;
}

static void shim_register(void)
{
	if (real_vfs)
		return;
	real_vfs = sqlite3_vfs_find(NULL);
	ck_assert_ptr_nonnull(real_vfs);
	shim = *real_vfs;
	shim.iVersion = 1;
	shim.szOsFile = (int)sizeof(struct shim_file) + real_vfs->szOsFile;
	shim.zName = "chj-btplan-test";
	shim.xOpen = s_open;
	ck_assert_int_eq(sqlite3_vfs_register(&shim, 0), SQLITE_OK);
}

/* ---- the plan, over the file ---- */

static unsigned char pg_plan[MAXPG];	/* read or advised by the plan */
static unsigned leaves_advised;

static int t_read(void *ctx, uint32_t pgno, void *buf)
{
	int fd = *(int *)ctx;

	if (pgno >= MAXPG)
		return -1;
	pg_plan[pgno] = 1;
	return pread(fd, buf, test_psize, (off_t)(pgno - 1) * test_psize) == test_psize ? 0 : -1;
}

static void t_advise(void *ctx, uint32_t pgno, uint32_t n)
{
	(void)ctx;
	for (uint32_t i = 0; i < n; i++)
		if (pgno + i < MAXPG) {
			leaves_advised += !pg_plan[pgno + i];
			pg_plan[pgno + i] = 1;
		}
}

static long plan(const char *path, const char *tree, const struct bt_key *k, size_t n, int ncols)
{
	uint8_t hdr[100];
	int fd = open(path, O_RDONLY);
	struct bt_src s = { .ctx = &fd, .read = t_read, .advise = t_advise };
	sqlite3 *db;
	sqlite3_stmt *q;
	long rc;
	uint32_t root;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	ck_assert_int_eq(bt_header(hdr, sizeof(hdr), &s.psize, &s.usable), 0);
	ck_assert_uint_eq(s.psize, test_psize);
	s.npages = (uint32_t)(lseek(fd, 0, SEEK_END) / test_psize);
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_schema WHERE name = ?",
					    -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_text(q, 1, tree, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	root = (uint32_t)sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	memset(pg_plan, 0, sizeof(pg_plan));
	leaves_advised = 0;
	rc = bt_plan(&s, root, k, n, ncols);
	close(fd);
	return rc;
}

/* SQLite's own searches for keys k, from a cold page cache: the pages
 * it read that the plan neither read nor advised. */
static unsigned missed(const char *path, const char *sql, const struct bt_key *k, size_t n,
		       int ncols, unsigned *rows)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	unsigned miss = 0;

	shim_register();
	memset(pg_read, 0, sizeof(pg_read));
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, shim.zName), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	recording = 1;
	*rows = 0;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(q);
		for (int c = 0; c < ncols; c++)
			sqlite3_bind_int64(q, c + 1, k[i].k[c]);
		while (sqlite3_step(q) == SQLITE_ROW)
			(*rows)++;
	}
	recording = 0;
	sqlite3_finalize(q);
	sqlite3_close(db);
	/* Page 1: the header and the schema, read at open. */
	for (unsigned p = 2; p < MAXPG; p++)
		miss += pg_read[p] && !pg_plan[p];
	return miss;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		ck_abort_msg("%s: %s", sql, err ? err : "?");
}

/* Inode-like numbers of every integer width, and one (HEAVY) with many
 * names; the store-like table has them under two roots. */
#define HEAVY 4242
static int64_t ino_of(unsigned i)
{
	static const int64_t base[] = { 0, 100, 40000, 9000000, 3000000000LL, 200000000000000LL };

	return base[i % 6] + (int64_t)(i / 6) * 7;
}

static char *make_db(unsigned rows)
{
	char *dir = scratch_dir("btplan"), *path = malloc(strlen(dir) + 16);
	sqlite3 *db;
	sqlite3_stmt *qs, *qe;

	sprintf(path, "%s/t.db", dir);
	free(dir);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	exec_ok(db, "PRAGMA page_size = 512; PRAGMA journal_mode = DELETE;"
		"CREATE TABLE rec(root INTEGER NOT NULL, ino INTEGER NOT NULL, from_e INTEGER NOT NULL,"
		" until_e INTEGER NOT NULL, h BLOB, PRIMARY KEY(root, ino, from_e)) WITHOUT ROWID;"
		"CREATE TABLE ent(dir INTEGER NOT NULL, name BLOB NOT NULL, ino INTEGER NOT NULL,"
		" t INTEGER NOT NULL, PRIMARY KEY(dir, name)) WITHOUT ROWID; BEGIN");
	ck_assert_int_eq(sqlite3_prepare_v2(db, "INSERT INTO rec VALUES(?1, ?2, ?3, 4611686018427387904, randomblob(16))",
					    -1, &qs, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "INSERT INTO ent VALUES(?1, ?2, ?3, ?4)", -1, &qe,
					    NULL), SQLITE_OK);
	for (unsigned i = 0; i < rows; i++) {
		char name[40];
		int n = snprintf(name, sizeof(name), "f%07u", i * 2654435761u % 10000000u);
		/* Every 50th entry names HEAVY; directories are rarer inodes. */
		int64_t ino = i % 50 ? ino_of(i) : HEAVY, dir = ino_of(i / 50 * 50 + 1);

		sqlite3_reset(qs);
		sqlite3_bind_int64(qs, 1, i % 3 ? 0 : 5);
		sqlite3_bind_int64(qs, 2, ino_of(i));
		sqlite3_bind_int64(qs, 3, i % 4);
		ck_assert_int_eq(sqlite3_step(qs), SQLITE_DONE);
		sqlite3_reset(qe);
		sqlite3_bind_int64(qe, 1, dir);
		sqlite3_bind_blob(qe, 2, name, n, SQLITE_TRANSIENT);
		sqlite3_bind_int64(qe, 3, ino);
		sqlite3_bind_int64(qe, 4, i % 7 ? 8 : 4);
		ck_assert_int_eq(sqlite3_step(qe), SQLITE_DONE);
	}
	sqlite3_finalize(qs);
	sqlite3_finalize(qe);
	exec_ok(db, "COMMIT; CREATE INDEX ent_ino ON ent(ino, t);");
	sqlite3_close(db);
	return path;
}

/* n keys: every stride-th row's inode (offset off), HEAVY, one absent. */
static size_t pick(struct bt_key *k, unsigned rows, unsigned stride, unsigned off, int store)
{
	size_t n = 0;

	for (unsigned i = off; i < rows; i += stride) {
		k[n].k[0] = store ? (i % 3 ? 0 : 5) : ino_of(i);
		k[n++].k[1] = store ? ino_of(i) : 0;
	}
	k[n].k[0] = store ? 0 : HEAVY;
	k[n++].k[1] = store ? HEAVY : 0;
	k[n].k[0] = store ? 9 : 123456789012LL;
	k[n++].k[1] = 1;
	qsort(k, n, sizeof(*k), bt_key_order);
	return n;
}

static unsigned file_pages(const char *path)
{
	int fd = open(path, O_RDONLY);
	off_t end;

	ck_assert_int_ge(fd, 0);
	end = lseek(fd, 0, SEEK_END);
	close(fd);
	return (unsigned)(end / test_psize);
}

START_TEST(plan_covers_every_page_sqlite_reads)
{
	enum { ROWS = 4000 };
	char *path = make_db(ROWS);
	struct bt_key *k = malloc((ROWS + 4) * sizeof(*k));
	unsigned rows, total = file_pages(path);
	size_t n;
	long leaves;

	/* The name index: by inode (ent_ino), as nidx_by_ino searches. */
	n = pick(k, ROWS, 37, 3, 0);
	leaves = plan(path, "ent_ino", k, n, 1);
	ck_assert_int_gt(leaves, 0);
	ck_assert_int_eq(missed(path, "SELECT dir, name, t FROM ent WHERE ino = ?1", k, n, 1, &rows), 0);
	ck_assert_uint_gt(rows, ROWS / 50);	/* HEAVY's names among them */
	/* Selective: for 14 keys, HEAVY's leaves and about one per other
	 * key, of a file of about 1000 pages (ent_ino a quarter). */
	n = pick(k, ROWS, 331, 11, 0);
	leaves = plan(path, "ent_ino", k, n, 1);
	ck_assert_int_gt(leaves, 0);
	ck_assert_uint_lt((unsigned)leaves, total / 10);
	ck_assert_int_eq(missed(path, "SELECT dir, name, t FROM ent WHERE ino = ?1", k, n, 1, &rows), 0);

	/* The entries of directories (ent's own key), as Q_LIST. */
	for (size_t i = 0; i < n; i++)
		k[i].k[0] = ino_of((unsigned)(i * 150 / 50 * 50 + 1));
	qsort(k, n, sizeof(*k), bt_key_order);
	ck_assert_int_gt(plan(path, "ent", k, n, 1), 0);
	ck_assert_int_eq(missed(path, "SELECT name, ino, t FROM ent WHERE dir = ?1", k, n, 1, &rows), 0);
	ck_assert_uint_gt(rows, 0);

	/* The store: by (root, ino), as store_same. */
	n = pick(k, ROWS, 23, 5, 1);
	ck_assert_int_gt(plan(path, "rec", k, n, 2), 0);
	ck_assert_int_eq(missed(path, "SELECT h FROM rec WHERE root = ?1 AND ino = ?2", k, n, 2, &rows),
			 0);
	ck_assert_uint_ge(rows, n - 2);
	free(k);
	free(path);
}
END_TEST

START_TEST(plan_for_other_keys_is_caught)
{
	enum { ROWS = 4000 };
	char *path = make_db(ROWS);
	struct bt_key *a = malloc((ROWS + 4) * sizeof(*a)), *b = malloc((ROWS + 4) * sizeof(*b));
	unsigned rows;
	size_t na = pick(a, ROWS, 37, 3, 1), nb = pick(b, ROWS, 29, 14, 1);

	/* The oracle can fail: a plan made for a's keys, b searched. */
	ck_assert_int_gt(plan(path, "rec", a, na, 2), 0);
	ck_assert_uint_gt(missed(path, "SELECT h FROM rec WHERE root = ?1 AND ino = ?2", b, nb, 2, &rows),
			  0);
	/* No keys: nothing advised, nothing read. */
	ck_assert_int_eq(plan(path, "rec", a, 0, 2), 0);
	free(a);
	free(b);
	free(path);
}
END_TEST

START_TEST(plan_refuses_what_it_does_not_read)
{
	char *path = make_db(500);
	struct bt_key k = { { 1, 0 } };
	sqlite3 *db;

	/* A rowid table (interior table pages, not index pages). */
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	exec_ok(db, "CREATE TABLE r(x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c"
		" WHERE i < 5000) INSERT INTO r SELECT randomblob(100) FROM c;");
	sqlite3_close(db);
	ck_assert_int_eq(plan(path, "r", &k, 1, 1), -1);
	/* Not a SQLite header. */
	{
		uint8_t h[100] = "SQLite format 2";
		uint32_t ps, us;

		ck_assert_int_eq(bt_header(h, sizeof(h), &ps, &us), -1);
	}
	free(path);
}
END_TEST

Suite *suite_btplan(void)
{
	Suite *s = suite_create("btplan");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, plan_covers_every_page_sqlite_reads);
	tcase_add_test(tc, plan_for_other_keys_is_caught);
	tcase_add_test(tc, plan_refuses_what_it_does_not_read);
	suite_add_tcase(s, tc);
	return s;
}
