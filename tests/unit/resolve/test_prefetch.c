// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Reads issued ahead (prefetch.c): the threads that stat the listed paths
 * leave nothing behind (no fd, no change to the tree, every thread ended),
 * whatever the paths are (missing, through a symlink, a FIFO); too few
 * paths use no thread; a file is read ahead whole only when the lookups
 * would read more of it; the files read ahead early keep their fds until
 * the end (SQLite's locks), and only safe cache files are opened for it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
#include "resolve.h"
#include "store.h"
#include "suites.h"

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int put(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

START_TEST(prefetch_lstat_leaves_nothing_behind)
{
	enum { DIRS = 20, FILES = 10 };
	char *t = scratch_dir("prefetch"), name[64];
	int root = open(t, O_RDONLY | O_DIRECTORY), before;
	char **v = calloc(DIRS * FILES + 4, sizeof(*v));
	size_t n = 0;
	struct stat st;

	ck_assert_int_ge(root, 0);
	for (int d = 0; d < DIRS; d++) {
		snprintf(name, sizeof(name), "d%02d", d);
		ck_assert_int_eq(mkdirat(root, name, 0755), 0);
		for (int f = 0; f < FILES; f++) {
			char p[128];

			snprintf(p, sizeof(p), "d%02d/f%d", d, f);
			/* Every third file missing: a change after the sync. */
			if (f % 3)
				ck_assert_int_eq(put(root, p), 0);
			v[n++] = strdup(p);
		}
	}
	/* A symlink in the middle of a path (not followed), a FIFO (never
	 * opened), and the mount itself. */
	ck_assert_int_eq(symlinkat("/etc", root, "link"), 0);
	ck_assert_int_eq(mkfifoat(root, "fifo", 0600), 0);
	v[n++] = strdup("link/passwd");
	v[n++] = strdup("fifo");
	v[n++] = strdup("");
	qsort(v, n, sizeof(*v), rel_cmp_p);
	before = open_fds();
	ck_assert_uint_gt(prefetch_lstat(root, v, n), 0);
	ck_assert_int_eq(open_fds(), before);
	/* Nothing was made or removed. */
	ck_assert_int_eq(fstatat(root, "d00/f1", &st, 0), 0);
	ck_assert_int_ne(fstatat(root, "d00/f0", &st, 0), 0);
	ck_assert_int_eq(errno, ENOENT);
	/* Too few paths to be worth a thread. */
	ck_assert_uint_eq(prefetch_lstat(root, v, 3), 0);
	ck_assert_uint_eq(prefetch_lstat(root, v, 0), 0);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	close(root);
	scratch_rm(t);
	free(t);
}
END_TEST

START_TEST(prefetch_file_reads_ahead_only_when_it_pays)
{
	char *t = scratch_dir("prefetch"), p[256];
	int fd, dfd;

	snprintf(p, sizeof(p), "%s/f", t);
	fd = open(p, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	/* 256 pages of 4 KiB: one in 32 is 8 lookups. */
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	ck_assert_int_eq(prefetch_file(fd, 0), 0);
	ck_assert_int_eq(prefetch_file(fd, 7), 0);
	ck_assert_int_eq(prefetch_file(fd, 8), 1);
	ck_assert_int_eq(prefetch_file(fd, UINT32_MAX), 1);
	prefetch_range(fd, 4096, 3 << 20);	/* past the end: harmless */
	prefetch_range(fd, 0, 0);
	close(fd);
	/* No file, or not a regular one. */
	ck_assert_int_eq(prefetch_file(-1, 1000), 0);
	dfd = open(t, O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(prefetch_file(dfd, 1000), 0);
	close(dfd);
	scratch_rm(t);
	free(t);
}
END_TEST

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

START_TEST(prefetch_files_bg_keeps_its_fds_until_the_end)
{
	struct resolver r;
	char *t = scratch_dir("prefetch"), p[256];
	int fd[6], before;
	uint64_t lookups[6] = { 1000, 0, 1000, 1000, 1000, 1000 };

	memset(&r, 0, sizeof(r));
	/* Nothing started: the end is a no-op, as often as called. */
	ck_assert_int_eq(prefetch_files_end(&r), 0);
	before = open_fds();
	for (int k = 0; k < 6; k++) {
		snprintf(p, sizeof(p), "%s/f%d", t, k);
		fd[k] = open(p, O_RDWR | O_CREAT, 0600);
		ck_assert_int_ge(fd[k], 0);
		ck_assert_int_eq(ftruncate(fd[k], 1 << 20), 0);
	}
	fd[2] = (close(fd[2]), -1);	/* no file: skipped */
	prefetch_files_bg(&r, fd, lookups, 6);
	ck_assert_ptr_nonnull(r.bg);
	/* Still open while the method runs (its SQLite holds locks). */
	ck_assert(fd_open(fd[0]) && fd_open(fd[1]) && fd_open(fd[3]) && fd_open(fd[4]));
	/* Read: f0, f3, f4 (f1 has no lookups; f5 is past the four kept,
	 * its fd closed at once). */
	ck_assert_int_eq(prefetch_files_end(&r), 3);
	ck_assert_ptr_null(r.bg);
	ck_assert_int_eq(open_fds(), before);
	ck_assert_int_eq(prefetch_files_end(&r), 0);
	/* None to read: nothing kept, no thread. */
	fd[0] = -1;
	prefetch_files_bg(&r, fd, lookups, 1);
	ck_assert_int_eq(prefetch_files_end(&r), 0);
	ck_assert_int_eq(open_fds(), before);
	scratch_rm(t);
	free(t);
}
END_TEST

START_TEST(cache_file_peek_opens_only_safe_files)
{
	struct resolver r;
	char *t, p[256], q[256];
	int fd;

	if (geteuid())
		return;	/* the files must be root's */
	t = scratch_dir("prefetch");
	memset(&r, 0, sizeof(r));
	r.epoch_known = 1;
	setenv("CHJ_RESOLVE_CACHE_DIR", t, 1);
	snprintf(p, sizeof(p), "%s/00000000-0000-0000-0000-000000000000.names", t);
	snprintf(q, sizeof(q), "%s/00000000-0000-0000-0000-000000000000.state", t);
	/* Missing. */
	ck_assert_int_eq(nidx_peek(&r), -1);
	ck_assert_int_eq(store_peek(&r), -1);
	/* Root's, 0600: opened. */
	close(open(p, O_WRONLY | O_CREAT, 0600));
	close(open(q, O_WRONLY | O_CREAT, 0600));
	fd = nidx_peek(&r);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = store_peek(&r);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* Readable by others: not. */
	ck_assert_int_eq(chmod(p, 0644), 0);
	ck_assert_int_eq(nidx_peek(&r), -1);
	/* A symlink to a good file, a FIFO (no hang): not. */
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(symlink(q, p), 0);
	ck_assert_int_eq(nidx_peek(&r), -1);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	ck_assert_int_eq(nidx_peek(&r), -1);
	/* Runs that use no store, no index. */
	r.epoch_known = 0;
	ck_assert_int_eq(store_peek(&r), -1);
	r.epoch_known = 1;
	setenv("CHJ_RESOLVE_STATE", "off", 1);
	ck_assert_int_eq(store_peek(&r), -1);
	unsetenv("CHJ_RESOLVE_STATE");
	ck_assert_int_eq(unlink(p), 0);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	setenv("CHJ_RESOLVE_CACHE", "off", 1);
	ck_assert_int_eq(nidx_peek(&r), -1);
	unsetenv("CHJ_RESOLVE_CACHE");
	r.mnt_root = "/sub";
	ck_assert_int_eq(nidx_peek(&r), -1);
	r.mnt_root = NULL;
	fd = nidx_peek(&r);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* A directory others can write: nothing in it. */
	ck_assert_int_eq(chmod(t, 0777), 0);
	ck_assert_int_eq(nidx_peek(&r), -1);
	ck_assert_int_eq(store_peek(&r), -1);
	ck_assert_int_eq(chmod(t, 0700), 0);
	unsetenv("CHJ_RESOLVE_CACHE_DIR");
	scratch_rm(t);
	free(t);
}
END_TEST

Suite *suite_prefetch(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, prefetch_lstat_leaves_nothing_behind);
	tcase_add_test(tc, prefetch_file_reads_ahead_only_when_it_pays);
	tcase_add_test(tc, prefetch_files_bg_keeps_its_fds_until_the_end);
	tcase_add_test(tc, cache_file_peek_opens_only_safe_files);
	suite_add_tcase(s, tc);
	return s;
}
