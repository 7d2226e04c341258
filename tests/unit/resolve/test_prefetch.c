// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Reads issued ahead (prefetch.c): the threads that stat the listed paths
 * leave nothing behind (no fd, no change to the tree, every thread ended),
 * whatever the paths are (missing, through a symlink, a FIFO); too few
 * paths use no thread; a file is read ahead whole only when the lookups
 * would read more of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve.h"
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

Suite *suite_prefetch(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, prefetch_lstat_leaves_nothing_behind);
	tcase_add_test(tc, prefetch_file_reads_ahead_only_when_it_pays);
	suite_add_tcase(s, tc);
	return s;
}
