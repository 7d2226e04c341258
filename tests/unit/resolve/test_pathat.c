// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Paths opened through a directory-fd cursor (pathat.c): rel_cmp's order,
 * a deep chain costing one openat per level, paths past PATH_MAX, no
 * symlink or ".." followed, and the open-file limit met (levels given up
 * and reopened, never a wrong directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "resolve.h"
#include "suites.h"

START_TEST(rel_cmp_puts_a_directory_before_what_is_under_it)
{
	/* '.' (0x2e) and '-' sort below '/' (0x2f) in strcmp: "a.x" would
	 * come between "a" and "a/b", taking a cursor out of a and back. */
	const char *want[] = { "", "a", "a/b", "a/b/c", "a/b.c", "a-1", "a.x", "a.x/y", "ab", "b" };
	enum { N = sizeof(want) / sizeof(want[0]) };
	const char *v[N];

	for (size_t i = 0; i < N; i++)
		v[(i * 7) % N] = want[i];	/* 7 is prime to 10: a permutation */
	qsort(v, N, sizeof(*v), rel_cmp_p);
	for (size_t i = 0; i < N; i++)
		ck_assert_str_eq(v[i], want[i]);
	ck_assert_int_eq(rel_cmp("a/b", "a/b"), 0);
	ck_assert_int_lt(rel_cmp("a", "a/b"), 0);
	ck_assert_int_gt(rel_cmp("a\xff", "a/"), 0);
}
END_TEST

START_TEST(rel_join_joins_as_the_checks_expect)
{
	char *b = NULL;
	size_t cap = 0, o;

	/* Under the mount: the name alone (no leading '/'). */
	o = rel_join(&b, &cap, "", 0, "f1", 2);
	ck_assert_uint_eq(o, 0);
	ck_assert_str_eq(b, "f1");
	/* Lengths, not NULs, bound both parts. */
	o = rel_join(&b, &cap, "a/bXX", 3, "nameYY", 4);
	ck_assert_uint_eq(o, 4);
	ck_assert_str_eq(b, "a/b/name");
	ck_assert_str_eq(b + o, "name");
	/* The buffer grows past its first size, and is reused after. */
	{
		char dir[300], name[255];

		memset(dir, 'd', sizeof(dir));
		memset(name, 'n', sizeof(name));
		o = rel_join(&b, &cap, dir, sizeof(dir), name, sizeof(name));
		ck_assert_uint_eq(o, sizeof(dir) + 1);
		ck_assert_uint_eq(strlen(b), sizeof(dir) + 1 + sizeof(name));
		ck_assert_int_eq(b[sizeof(dir)], '/');
		ck_assert_uint_ge(cap, strlen(b) + 1);
	}
	o = rel_join(&b, &cap, "x", 1, "y", 1);
	ck_assert_str_eq(b, "x/y");
	ck_assert_uint_eq(o, 2);
	free(b);
}
END_TEST

/* A chain of levels directories named name under root, a file f in each;
 * ino[k] the inode of level k's directory. */
static void make_chain(int root, const char *name, int levels, ino_t *ino)
{
	int fd = dup(root);

	for (int k = 0; k < levels; k++) {
		struct stat st;
		int nfd, ffd;

		ck_assert_int_eq(mkdirat(fd, name, 0755), 0);
		nfd = openat(fd, name, O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(nfd, 0);
		close(fd);
		fd = nfd;
		ck_assert_int_eq(fstat(fd, &st), 0);
		ino[k] = st.st_ino;
		ffd = openat(fd, "f", O_WRONLY | O_CREAT, 0644);
		ck_assert_int_ge(ffd, 0);
		close(ffd);
	}
	close(fd);
}

/* "name/name/.../name" (levels of it) in buf. */
static size_t chain_path(char *buf, const char *name, int levels)
{
	size_t l = 0, nl = strlen(name);

	for (int k = 0; k < levels; k++) {
		if (k)
			buf[l++] = '/';
		memcpy(buf + l, name, nl);
		l += nl;
	}
	buf[l] = 0;
	return l;
}

/* Every level's directory and file, in rel_cmp order, through one cursor:
 * each the right inode.  The openat/fstatat calls made. */
static uint64_t visit_chain(int root, const char *name, int levels, const ino_t *ino,
			    uint64_t *evictions)
{
	size_t cap = (strlen(name) + 1) * (size_t)levels + 8;
	char *p = malloc(cap);
	struct dircur c;
	uint64_t opens;

	dircur_init(&c, root);
	for (int k = 1; k <= levels; k++) {
		size_t l = chain_path(p, name, k);
		struct stat st;
		int fd = dircur_open(&c, p, O_RDONLY | O_DIRECTORY);

		ck_assert_msg(fd >= 0, "level %d: %s", k, strerror(errno));
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_uint_eq(st.st_ino, ino[k - 1]);
		close(fd);
		strcpy(p + l, "/f");
		ck_assert_msg(!dircur_lstat(&c, p, &st), "level %d file: %s", k, strerror(errno));
		ck_assert(S_ISREG(st.st_mode));
	}
	/* Back up: the shallowest file again, and the root. */
	strcpy(p + chain_path(p, name, 1), "/f");
	ck_assert_int_eq(dircur_lstat(&c, p, &(struct stat){ 0 }), 0);
	ck_assert_int_eq(dircur_dir(&c, "", 0), root);
	opens = c.opens;
	if (evictions)
		*evictions = c.evictions;
	dircur_free(&c);
	free(p);
	return opens;
}

START_TEST(dircur_chain_costs_one_open_per_level)
{
	enum { LEVELS = 3000 };
	char *t = scratch_dir("pathat");
	int root = open(t, O_RDONLY | O_DIRECTORY);
	ino_t *ino = calloc(LEVELS, sizeof(*ino));
	char *p = malloc(2 * LEVELS + 8);
	uint64_t opens;
	struct stat st;
	int fd;

	ck_assert_int_ge(root, 0);
	make_chain(root, "d", LEVELS, ino);
	/* Opening each level by its whole path would cost LEVELS^2/2 = 4.5e6
	 * component lookups: the cursor makes one per level, plus one open
	 * and one stat per visit (and one to come back up). */
	opens = visit_chain(root, "d", LEVELS, ino, NULL);
	ck_assert_uint_le(opens, 3 * LEVELS + 4);
	/* The one-shot forms, past PATH_MAX (6000 bytes). */
	chain_path(p, "d", LEVELS);
	ck_assert_uint_gt(strlen(p), PATH_MAX);
	ck_assert_int_eq(rel_lstat(root, p, &st), 0);
	ck_assert_uint_eq(st.st_ino, ino[LEVELS - 1]);
	ck_assert_int_ge(fd = rel_open(root, p, O_PATH), 0);
	close(fd);
	close(root);
	scratch_rm(t);
	free(ino);
	free(p);
	free(t);
}
END_TEST

START_TEST(dircur_long_names_past_path_max)
{
	/* 30 levels of 250-byte names: a 7.5 KiB path. */
	enum { LEVELS = 30 };
	char name[251], *t = scratch_dir("pathat");
	int root = open(t, O_RDONLY | O_DIRECTORY);
	ino_t ino[LEVELS];

	memset(name, 'L', 250);
	name[250] = 0;
	make_chain(root, name, LEVELS, ino);
	ck_assert_uint_le(visit_chain(root, name, LEVELS, ino, NULL), 3 * LEVELS + 4);
	close(root);
	scratch_rm(t);
	free(t);
}
END_TEST

START_TEST(dircur_follows_no_symlink_and_no_dotdot)
{
	char *t = scratch_dir("pathat");
	int root = open(t, O_RDONLY | O_DIRECTORY), fd;
	struct dircur c;
	struct stat st;

	ck_assert_int_eq(mkdirat(root, "real", 0755), 0);
	ck_assert_int_eq(mkdirat(root, "real/x", 0755), 0);
	ck_assert_int_eq(symlinkat("real", root, "ln"), 0);
	ck_assert_int_eq(symlinkat("/etc", root, "etc"), 0);
	dircur_init(&c, root);
	ck_assert_int_ge(fd = dircur_open(&c, "real/x", O_RDONLY | O_DIRECTORY), 0);
	close(fd);
	/* A symlink as a directory on the way, or as the last name. */
	errno = 0;
	ck_assert_int_eq(dircur_open(&c, "ln/x", O_RDONLY | O_DIRECTORY), -1);
	ck_assert(path_gone(errno));
	ck_assert_int_eq(dircur_open(&c, "etc/passwd", O_RDONLY), -1);
	ck_assert(path_gone(errno));
	ck_assert_int_eq(dircur_open(&c, "ln", O_RDONLY), -1);
	ck_assert(path_gone(errno));
	ck_assert_int_eq(dircur_lstat(&c, "ln", &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	/* Never above the root: "..", ".", empty components. */
	ck_assert_int_eq(dircur_open(&c, "real/../real/x", O_RDONLY), -1);
	ck_assert_int_eq(dircur_open(&c, "..", O_RDONLY), -1);
	ck_assert_int_eq(dircur_open(&c, "real//x", O_RDONLY), -1);
	ck_assert_int_eq(dircur_open(&c, "./real", O_RDONLY), -1);
	/* A directory replaced by a symlink after the cursor passed it: the
	 * cursor's fd is the old directory, but a new path through the
	 * name is looked up again. */
	ck_assert_int_ge(fd = dircur_open(&c, "real/x", O_RDONLY | O_DIRECTORY), 0);
	close(fd);
	ck_assert_int_eq(renameat(root, "real", root, "moved"), 0);
	ck_assert_int_eq(symlinkat("moved", root, "real"), 0);
	ck_assert_int_eq(dircur_open(&c, "ln/x", O_RDONLY | O_DIRECTORY), -1);
	ck_assert_int_ge(fd = dircur_open(&c, "moved/x", O_RDONLY | O_DIRECTORY), 0);
	close(fd);
	ck_assert_int_eq(dircur_open(&c, "real/x", O_RDONLY | O_DIRECTORY), -1);
	ck_assert(path_gone(errno));
	dircur_free(&c);
	close(root);
	scratch_rm(t);
	free(t);
}
END_TEST

/*
 * A changed file replaced by a socket since the sync (any user can bind
 * one in their own directory): its open fails with ENXIO, which means the
 * file that was read is gone, not "full scan needed".
 */
START_TEST(a_file_replaced_by_a_socket_is_gone)
{
	char *t = scratch_dir("pathat");
	int root = open(t, O_RDONLY | O_DIRECTORY), s;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct dircur c;

	ck_assert_int_lt(snprintf(a.sun_path, sizeof(a.sun_path), "%s/f", t),
			 (int)sizeof(a.sun_path));
	ck_assert_int_ge(s = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	dircur_init(&c, root);
	errno = 0;
	ck_assert_int_eq(dircur_open(&c, "f", O_RDONLY | O_NOCTTY | O_NONBLOCK), -1);
	ck_assert_int_eq(errno, ENXIO);
	ck_assert(path_gone(errno));
	dircur_free(&c);
	close(s);
	close(root);
	scratch_rm(t);
	free(t);
}
END_TEST

START_TEST(dircur_open_file_limit_met)
{
	/* A limit of 16 open files for a 300-level chain: the cursor gives
	 * up levels and reopens them, and still reaches every level, each the
	 * right inode, at a cost still linear in the visits. */
	enum { LEVELS = 300 };
	char *t = scratch_dir("pathat");
	int root = open(t, O_RDONLY | O_DIRECTORY), top = root;
	ino_t ino[LEVELS];
	struct rlimit rl;
	uint64_t ev = 0, opens;

	make_chain(root, "d", LEVELS, ino);
	for (int fd = root + 1; fd < 64; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			top = fd;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = (rlim_t)top + 16;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	opens = visit_chain(root, "d", LEVELS, ino, &ev);
	ck_assert_uint_gt(ev, 0);
	/* One reopen per level back up to the shallowest file at most. */
	ck_assert_uint_le(opens, 4 * LEVELS + 4);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	close(root);
	scratch_rm(t);
	free(t);
}
END_TEST

Suite *suite_pathat(void)
{
	Suite *s = suite_create("pathat");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rel_cmp_puts_a_directory_before_what_is_under_it);
	tcase_add_test(tc, rel_join_joins_as_the_checks_expect);
	tcase_add_test(tc, dircur_chain_costs_one_open_per_level);
	tcase_add_test(tc, dircur_long_names_past_path_max);
	tcase_add_test(tc, dircur_follows_no_symlink_and_no_dotdot);
	tcase_add_test(tc, dircur_open_file_limit_met);
	tcase_add_test(tc, a_file_replaced_by_a_socket_is_gone);
	suite_add_tcase(s, tc);
	return s;
}
