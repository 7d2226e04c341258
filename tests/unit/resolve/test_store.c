// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The state store (resolve/store.c): SipHash against the reference
 * vectors, and what store_open makes of a missing, unsafe, damaged,
 * foreign or snapshot-less file; lookups by (root, ino) for an epoch.
 * Needs root for the store's directory rules (skipped otherwise).
 */
#include <check.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve.h"
#include "store.h"

static void hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		sscanf(s + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
}

/* SipHash-2-4-128, key 00..0f, messages 00, 00 01, ... (vectors.h). */
START_TEST(siphash_vectors)
{
	static const char *const want[] = {
		"a3817f04ba25a8e66df67214c7550293",
		"da87c1d86b99af44347659119b22fc45",
	};
	uint8_t key[16], msg[16], out[16], w[16];

	for (int i = 0; i < 16; i++)
		key[i] = msg[i] = (uint8_t)i;
	for (size_t n = 0; n < 2; n++) {
		siphash128(key, msg, n, out);
		hex(want[n], w, 16);
		ck_assert_mem_eq(out, w, 16);
	}
	/* Every length gives another hash (no padding collision). */
	siphash128(key, msg, 8, out);
	siphash128(key, msg, 9, w);
	ck_assert(memcmp(out, w, 16));
}
END_TEST

static char dir[64];
static struct resolver r;

static void setup(void)
{
	strcpy(dir, "/tmp/chj-store-test.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("CHJ_RESOLVE_CACHE_DIR", dir, 1);
	memset(&r, 0, sizeof(r));
	r.epoch_known = 1;
	r.since = 2;
	r.current_epoch = 3;
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	unsetenv("CHJ_RESOLVE_CACHE_DIR");
}

static void sql(const char *path, const char *q)
{
	sqlite3 *db;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, q, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", q,
		      sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* Put snapshot 2 and inode 12's record hash h (as that store hashes). */
static void put_row(struct store *s, const char *rec, uint8_t h[ST_HASH], const char *extra)
{
	char q[512], hx[2 * ST_HASH + 1];

	store_hash(s, 0, 12, rec, strlen(rec), h);
	for (int i = 0; i < ST_HASH; i++)
		sprintf(hx + 2 * i, "%02x", h[i]);
	snprintf(q, sizeof(q),
		 "INSERT INTO snap VALUES(2); INSERT INTO rec VALUES(0, 12, 1, 4611686018427387904, x'%s');%s",
		 hx, extra);
	sql(s->path, q);
}

START_TEST(store_lifecycle)
{
	struct store s;
	struct stat st;
	uint8_t h[ST_HASH], other[ST_HASH];
	char path[4200];

	if (geteuid())
		return;
	/* First run: created, 0600, nothing to compare, a full build. */
	store_open(&r, &s, "ext4 test");
	ck_assert_ptr_nonnull(s.db);
	ck_assert_int_eq(s.can_compare, 0);
	ck_assert_int_eq(s.update, ST_UPD_FULL);
	snprintf(path, sizeof(path), "%s", s.path);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	put_row(&s, "record of inode 12", h, "");
	store_close(&s);

	/* Snapshot 2 is there: compare; an incremental update to 3. */
	store_open(&r, &s, "ext4 test");
	ck_assert_int_eq(s.can_compare, 1);
	ck_assert_int_eq(s.update, ST_UPD_INCR);
	ck_assert_int_eq(store_same(&s, 0, 12, h), 1);
	store_hash(&s, 0, 12, "record of inode 12!", 19, other);
	ck_assert_int_eq(store_same(&s, 0, 12, other), 0);
	/* Bound to the inode: the same record of inode 13 is unknown. */
	ck_assert_int_eq(store_same(&s, 0, 13, h), 0);
	ck_assert_int_eq(store_same(&s, 1, 12, h), 0);
	store_close(&s);

	/* Another epoch asked about: nothing compared. */
	r.since = 3;
	r.current_epoch = 4;
	store_open(&r, &s, "ext4 test");
	ck_assert_int_eq(s.can_compare, 0);
	ck_assert_int_eq(s.update, ST_UPD_FULL);
	ck_assert_int_eq(store_same(&s, 0, 12, h), 0);
	store_close(&s);
}
END_TEST

START_TEST(store_two_rows)
{
	struct store s;
	uint8_t h[ST_HASH];

	if (geteuid())
		return;
	store_open(&r, &s, "ext4 test");
	/* A second row valid for epoch 2: not a store store.c wrote. */
	put_row(&s, "rec", h, "INSERT INTO rec VALUES(0, 12, 2, 4611686018427387904, NULL);");
	store_close(&s);
	store_open(&r, &s, "ext4 test");
	ck_assert_int_eq(s.can_compare, 1);
	ck_assert_int_eq(store_same(&s, 0, 12, h), 0);
	store_close(&s);
}
END_TEST

START_TEST(store_foreign_damaged_unsafe)
{
	struct store s;
	uint8_t h[ST_HASH];
	char path[4200], buf[4096];
	int fd;

	if (geteuid())
		return;
	store_open(&r, &s, "ext4 one");
	put_row(&s, "rec", h, "");
	snprintf(path, sizeof(path), "%s", s.path);
	store_close(&s);
	/* Another filesystem's: rebuilt, not compared. */
	store_open(&r, &s, "ext4 two");
	ck_assert_ptr_nonnull(s.db);
	ck_assert_int_eq(s.can_compare, 0);
	ck_assert_int_eq(s.update, ST_UPD_FULL);
	ck_assert_ptr_nonnull(strstr(s.why, "another filesystem"));
	store_close(&s);

	/* Garbage: rebuilt. */
	memset(buf, 0x5a, sizeof(buf));
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
	store_open(&r, &s, "ext4 one");
	ck_assert_ptr_nonnull(s.db);
	ck_assert_int_eq(s.can_compare, 0);
	ck_assert_int_eq(s.update, ST_UPD_FULL);
	ck_assert_ptr_nonnull(strstr(s.why, "damaged"));
	store_close(&s);

	/* The table of records gone: rebuilt. */
	store_open(&r, &s, "ext4 one");
	store_close(&s);
	sql(path, "INSERT INTO snap VALUES(2); DROP TABLE rec;");
	store_open(&r, &s, "ext4 one");
	ck_assert_ptr_nonnull(s.db);
	ck_assert_int_eq(s.can_compare, 0);
	ck_assert_ptr_nonnull(strstr(s.why, "damaged"));
	store_close(&s);

	/* Readable by others: not used at all, not touched. */
	ck_assert_int_eq(chmod(path, 0644), 0);
	store_open(&r, &s, "ext4 one");
	ck_assert_ptr_null(s.db);
	store_close(&s);
	ck_assert_int_eq(unlink(path), 0);
	/* A symlink (to a file of root's 0600): not followed. */
	fd = open("/tmp/chj-store-test-target", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(symlink("/tmp/chj-store-test-target", path), 0);
	store_open(&r, &s, "ext4 one");
	ck_assert_ptr_null(s.db);
	store_close(&s);
	unlink("/tmp/chj-store-test-target");
	/* A newer snapshot than the current epoch: rebuilt. */
	ck_assert_int_eq(unlink(path), 0);
	store_open(&r, &s, "ext4 one");
	store_close(&s);
	sql(path, "INSERT INTO snap VALUES(2); INSERT INTO snap VALUES(9);");
	store_open(&r, &s, "ext4 one");
	ck_assert_int_eq(s.can_compare, 0);
	ck_assert_int_eq(s.update, ST_UPD_FULL);
	ck_assert_ptr_nonnull(strstr(s.why, "newer"));
	store_close(&s);
	/* No epoch known (test hook without CHJ_RESOLVE_EPOCH): off. */
	r.epoch_known = 0;
	store_open(&r, &s, "ext4 one");
	ck_assert_ptr_null(s.db);
	store_close(&s);
}
END_TEST

/* The open rows' keys of one root: closed rows, other roots left out. */
START_TEST(store_open_keys_rows)
{
	struct store s, off;
	uint64_t *k = (uint64_t *)1;
	size_t n = 99;
	char path[4200];
	int seen = 0;

	if (geteuid())
		return;
	/* No store (off): an error, nothing returned. */
	memset(&off, 0, sizeof(off));
	ck_assert_int_eq(store_open_keys(&off, 0, &k, &n), -1);
	ck_assert_ptr_null(k);
	ck_assert_uint_eq(n, 0);

	store_open(&r, &s, "xfs test");
	ck_assert_ptr_nonnull(s.db);
	snprintf(path, sizeof(path), "%s", s.path);
	/* A fresh store: no keys. */
	ck_assert_int_eq(store_open_keys(&s, 7, &k, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(k);
	store_close(&s);
	sql(path, "INSERT INTO snap VALUES(2);"
		  "INSERT INTO rec VALUES(7, 100, 1, 4611686018427387904, NULL);"
		  "INSERT INTO rec VALUES(7, 101, 1, 2, NULL);"
		  "INSERT INTO rec VALUES(7, 102, 2, 4611686018427387904, x'00');"
		  "INSERT INTO rec VALUES(8, 103, 1, 4611686018427387904, NULL);");
	store_open(&r, &s, "xfs test");
	ck_assert_int_eq(store_open_keys(&s, 7, &k, &n), 0);
	ck_assert_uint_eq(n, 2);
	for (size_t i = 0; i < n; i++) {
		ck_assert(k[i] == 100 || k[i] == 102);
		seen |= k[i] == 100 ? 1 : 2;
	}
	ck_assert_int_eq(seen, 3);
	free(k);
	ck_assert_int_eq(store_open_keys(&s, 8, &k, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(k[0], 103);
	free(k);
	store_close(&s);
	/* The table gone under an open store: an error, nothing returned. */
	store_open(&r, &s, "xfs test");
	ck_assert_ptr_nonnull(s.db);
	sql(path, "DROP TABLE rec;");
	k = (uint64_t *)1;
	n = 99;
	ck_assert_int_eq(store_open_keys(&s, 7, &k, &n), -1);
	ck_assert_ptr_null(k);
	ck_assert_uint_eq(n, 0);
	store_close(&s);
}
END_TEST

Suite *suite_store(void)
{
	Suite *s = suite_create("store");
	TCase *t = tcase_create("store");

	/* SQLite's fsyncs under ASan or valgrind on a loaded machine: Check's
	 * default 4 s expired (a Debian 13 run beside three guests).
	 */
	tcase_set_timeout(t, 60);
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, siphash_vectors);
	tcase_add_test(t, store_lifecycle);
	tcase_add_test(t, store_two_rows);
	tcase_add_test(t, store_foreign_damaged_unsafe);
	tcase_add_test(t, store_open_keys_rows);
	suite_add_tcase(s, t);
	return s;
}
