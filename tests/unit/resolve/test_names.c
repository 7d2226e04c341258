// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Naming ahead (names.c, names_warm_*; nameindex.c, nidx_open_ro): the
 * read-only connection opens only an index of this filesystem, never
 * writes or warns; the thread stats every path of the inodes it is given,
 * leaves no fd and no lock behind, and the run's own connection opens the
 * index for writing right after it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
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

static uint64_t ino_of(int dfd, const char *rel)
{
	struct stat st;

	ck_assert_int_eq(fstatat(dfd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

static void put(struct nidx *x, int mnt, const char *dir, const char *name, unsigned char t)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "%s%s%s", dir, *dir ? "/" : "", name);
	ck_assert_int_eq(nidx_put(x, *dir ? ino_of(mnt, dir) : ino_of(mnt, "."), name, strlen(name),
				  ino_of(mnt, rel), t), 0);
}

START_TEST(names_warm_stats_the_paths_and_leaves_nothing)
{
	struct resolver r;
	struct nidx x;
	char *t, p[300];
	int mnt, before;
	uint64_t v[4];
	struct stat st0, st1;

	if (geteuid())
		return;	/* the index must be root's */
	t = scratch_dir("names");
	setenv("CHJ_RESOLVE_CACHE_DIR", t, 1);
	snprintf(p, sizeof(p), "%s/mnt", t);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	mnt = open(p, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(mnt, 0);
	ck_assert_int_eq(mkdirat(mnt, "d", 0755), 0);
	ck_assert_int_eq(mkdirat(mnt, "d/e", 0755), 0);
	close(openat(mnt, "d/f", O_WRONLY | O_CREAT, 0644));
	close(openat(mnt, "d/e/g", O_WRONLY | O_CREAT, 0644));
	ck_assert_int_eq(linkat(mnt, "d/e/g", mnt, "h", 0), 0);
	memset(&r, 0, sizeof(r));
	snprintf(r.fstype, sizeof(r.fstype), "ext4");
	snprintf(r.fs_uuid, sizeof(r.fs_uuid), "test");
	r.mnt_fd = mnt;

	/* No index yet: nothing named ahead, nothing left. */
	ck_assert_int_eq(nidx_open_ro(&r, &x), -1);
	before = open_fds();
	v[0] = ino_of(mnt, "d/f");
	names_warm_start(&r, v, 1);
	ck_assert_uint_eq(names_warm_end(&r), 0);
	ck_assert_int_eq(open_fds(), before);

	/* The index of the tree, as a walk would write it. */
	ck_assert_int_eq(nidx_open(&r, &x), 0);
	put(&x, mnt, "", "d", DT_DIR);
	put(&x, mnt, "", "h", DT_REG);
	put(&x, mnt, "d", "e", DT_DIR);
	put(&x, mnt, "d", "f", DT_REG);
	put(&x, mnt, "d/e", "g", DT_REG);
	x.root = ino_of(mnt, ".");
	x.epoch = 3;
	ck_assert_int_eq(nidx_finish_build(&x), 0);
	ck_assert_int_eq(nidx_close(&x, 1), 0);
	snprintf(p, sizeof(p), "%s/00000000-0000-0000-0000-000000000000.names", t);
	ck_assert_int_eq(stat(p, &st0), 0);

	/* Read-only: this filesystem's index, only. */
	ck_assert_int_eq(nidx_open_ro(&r, &x), 0);
	ck_assert_uint_eq(x.entries, 5);
	ck_assert_uint_eq(x.root, ino_of(mnt, "."));
	ck_assert_int_eq(nidx_close(&x, 0), -1);
	snprintf(r.fs_uuid, sizeof(r.fs_uuid), "another");
	ck_assert_int_eq(nidx_open_ro(&r, &x), -1);
	snprintf(r.fs_uuid, sizeof(r.fs_uuid), "test");

	/* Every name of each inode: d/f, d/e/g and h (a link), d/e; the
	 * root and an unknown inode name nothing. */
	before = open_fds();
	v[0] = ino_of(mnt, "d/f");
	v[1] = ino_of(mnt, "h");
	v[2] = ino_of(mnt, "d/e");
	v[3] = ino_of(mnt, ".");
	names_warm_start(&r, v, 4);
	ck_assert_ptr_nonnull(r.warm);
	ck_assert_uint_eq(names_warm_end(&r), 4);
	ck_assert_ptr_null(r.warm);
	ck_assert_int_eq(open_fds(), before);
	ck_assert_uint_eq(names_warm_end(&r), 0);
	/* Nothing written; no lock left: the run's connection writes now. */
	ck_assert_int_eq(stat(p, &st1), 0);
	ck_assert_int_eq(st0.st_size, st1.st_size);
	ck_assert_int_eq(st0.st_mtim.tv_sec, st1.st_mtim.tv_sec);
	ck_assert_int_eq(st0.st_mtim.tv_nsec, st1.st_mtim.tv_nsec);
	ck_assert_int_eq(nidx_open(&r, &x), 0);
	ck_assert_int_eq(x.usable, 1);
	x.epoch = 4;
	ck_assert_int_eq(nidx_close(&x, 1), 0);
	/* Not for a mount of a subtree, nor with the cache off. */
	r.mnt_root = "/d";
	names_warm_start(&r, v, 4);
	ck_assert_ptr_null(r.warm);
	r.mnt_root = NULL;
	setenv("CHJ_RESOLVE_CACHE", "off", 1);
	names_warm_start(&r, v, 4);
	ck_assert_ptr_null(r.warm);
	unsetenv("CHJ_RESOLVE_CACHE");
	close(mnt);
	unsetenv("CHJ_RESOLVE_CACHE_DIR");
	scratch_rm(t);
	free(t);
}
END_TEST

Suite *suite_names(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, names_warm_stats_the_paths_and_leaves_nothing);
	suite_add_tcase(s, tc);
	return s;
}
