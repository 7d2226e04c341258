// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Paths under the mount, of any length and depth, opened one component at
 * a time from the directory before it (openat with O_NOFOLLOW: no symlink
 * followed in any component, no "..", so never outside the mount's tree):
 * a user who can make directories decides how deep and how long paths get,
 * and may swap a directory for a symlink while chj-resolve runs.
 *
 * A cursor (struct dircur) keeps the directories of the last path it
 * reached open, one O_PATH fd per level: reaching the next path costs one
 * openat per component past the part the two share.  Paths visited in
 * rel_cmp order (a directory, then everything under it) cost one openat
 * per directory in all, where opening each by its whole path costs one per
 * component each time: quadratic in a chain thousands of levels deep.
 *
 * When the open-file limit is reached, the cursor gives up the fds of the
 * levels above the one it stands in and reopens them from the path when it
 * goes back up (slower, never wrong); only a single openat failing with
 * EMFILE/ENFILE while the cursor holds no more than that reaches the
 * caller, which ends the run with exit 3.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve.h"

void dircur_init(struct dircur *c, int mnt_fd)
{
	memset(c, 0, sizeof(*c));
	c->mnt_fd = mnt_fd;
}

static void cur_pop(struct dircur *c, size_t m)
{
	while (c->n > m) {
		c->n--;
		if (c->fd[c->n] >= 0)
			close(c->fd[c->n]);
	}
}

void dircur_free(struct dircur *c)
{
	int e = errno;

	cur_pop(c, 0);
	free(c->fd);
	free(c->end);
	free(c->path);
	memset(c, 0, sizeof(*c));
	c->mnt_fd = -1;
	errno = e;
}

/* The fd of level k's directory (k < 0: the mount), -1 if evicted. */
static int level_fd(const struct dircur *c, long k)
{
	return k < 0 ? c->mnt_fd : c->fd[k];
}

/* Give up the fds of every level but keep: 1 if any was held. */
static int cur_evict(struct dircur *c, long keep)
{
	int any = 0;

	for (size_t k = 0; k < c->n; k++)
		if ((long)k != keep && c->fd[k] >= 0) {
			close(c->fd[k]);
			c->fd[k] = -1;
			any = 1;
		}
	if (any)
		c->evictions++;
	return any;
}

/* Open component s[0..l) of the path from level bk's directory. */
static int open_comp(struct dircur *c, long bk, const char *s, size_t l)
{
	char comp[NAME_MAX + 1];
	int fd;

	if (l > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!l || (l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.')) {
		errno = ENOENT;	/* not a path this code made */
		return -1;
	}
	memcpy(comp, s, l);
	comp[l] = 0;
	for (;;) {
		c->opens++;
		fd = openat(level_fd(c, bk), comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || !cur_evict(c, bk))
			return fd;
	}
}

/* Reopen the evicted levels up to level k (from the nearest held one). */
static int cur_restore(struct dircur *c, size_t k)
{
	long j = (long)k;

	while (j >= 0 && c->fd[j] < 0)
		j--;
	for (size_t i = (size_t)(j + 1); i <= k; i++) {
		size_t s = i ? c->end[i - 1] + 1 : 0;
		int fd = open_comp(c, (long)i - 1, c->path + s, c->end[i] - s);

		if (fd < 0) {
			/* The path no longer leads there: drop what is below. */
			int e = errno;

			cur_pop(c, i);
			errno = e;
			return -1;
		}
		c->fd[i] = fd;
	}
	return 0;
}

int dircur_dir(struct dircur *c, const char *dir, size_t len)
{
	size_t plen = c->n ? c->end[c->n - 1] : 0, same = 0, m = 0, s;

	if (len && dir[len - 1] == '/') {
		errno = ENOENT;	/* an empty name: not a path this code made */
		return -1;
	}
	/* The levels the cursor's path shares with dir, whole components. */
	while (same < plen && same < len && c->path[same] == dir[same])
		same++;
	while (m < c->n && c->end[m] <= same && (c->end[m] == len || dir[c->end[m]] == '/'))
		m++;
	cur_pop(c, m);
	if (m && c->fd[m - 1] < 0 && cur_restore(c, m - 1))
		return -1;
	s = m ? c->end[m - 1] + 1 : 0;
	while (s < len) {
		const char *e = memchr(dir + s, '/', len - s);
		size_t l = e ? (size_t)(e - (dir + s)) : len - s;
		int fd = open_comp(c, (long)c->n - 1, dir + s, l);

		if (fd < 0)
			return -1;
		xgrow((void **)&c->fd, &c->cap, c->n + 1, sizeof(*c->fd));
		c->end = xrealloc(c->end, c->cap * sizeof(*c->end));
		xgrow((void **)&c->path, &c->pcap, s + l + 1, 1);
		memcpy(c->path + s, dir + s, l);
		if (s)
			c->path[s - 1] = '/';
		c->fd[c->n] = fd;
		c->end[c->n++] = s + l;
		s += l + 1;
	}
	return level_fd(c, (long)c->n - 1);
}

/* Split rel into its directory (the cursor moved there) and last name. */
static int cur_parent(struct dircur *c, const char *rel, const char **name)
{
	const char *slash = strrchr(rel, '/');

	*name = slash ? slash + 1 : rel;
	return dircur_dir(c, rel, slash ? (size_t)(slash - rel) : 0);
}

int dircur_open(struct dircur *c, const char *rel, int flags)
{
	const char *name;
	int dfd, fd;

	if (!*rel)
		return openat(c->mnt_fd, ".", flags | O_CLOEXEC);
	dfd = cur_parent(c, rel, &name);
	if (dfd < 0)
		return -1;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = ENOENT;
		return -1;
	}
	for (;;) {
		c->opens++;
		fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 || (errno != EMFILE && errno != ENFILE) ||
		    !cur_evict(c, (long)c->n - 1))
			return fd;
	}
}

int dircur_lstat(struct dircur *c, const char *rel, struct stat *st)
{
	const char *name;
	int dfd;

	if (!*rel)
		return fstat(c->mnt_fd, st);
	dfd = cur_parent(c, rel, &name);
	if (dfd < 0)
		return -1;
	c->opens++;
	return fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW);
}

int rel_open(int mnt_fd, const char *rel, int flags)
{
	struct dircur c;
	int fd;

	dircur_init(&c, mnt_fd);
	fd = dircur_open(&c, rel, flags);
	dircur_free(&c);
	return fd;
}

int rel_lstat(int mnt_fd, const char *rel, struct stat *st)
{
	struct dircur c;
	int rc;

	dircur_init(&c, mnt_fd);
	rc = dircur_lstat(&c, rel, st);
	dircur_free(&c);
	return rc;
}

/* Order: a directory right before everything under it ('/' below every
 * byte a name can hold), so that a cursor goes down and up each once. */
int rel_cmp(const char *a, const char *b)
{
	const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;

	while (*p && *p == *q)
		p++, q++;
	if (*p == *q)
		return 0;
	if (!*p || !*q)
		return *p ? 1 : -1;
	if (*p == '/' || *q == '/')
		return *p == '/' ? -1 : 1;
	return *p < *q ? -1 : 1;
}

int rel_cmp_p(const void *a, const void *b)
{
	return rel_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* A directory's path and an entry's name are joined in two places of
 * names.c (the paths warmed, then the same paths checked): one rule for
 * both, so that they cannot come to differ. */
size_t rel_join(char **buf, size_t *cap, const char *dir, size_t dl, const char *name, size_t nl)
{
	size_t o = dl ? dl + 1 : 0;

	xgrow((void **)buf, cap, o + nl + 1, 1);
	memcpy(*buf, dir, dl);
	if (dl)
		(*buf)[dl] = '/';
	memcpy(*buf + o, name, nl);
	(*buf)[o + nl] = 0;
	return o;
}

int path_gone(int err)
{
	return err == ENOENT || err == ESTALE || err == ENOTDIR || err == ELOOP ||
	       err == ENXIO;
}

/*
 * A tree as deep as a user cares to make needs as many file descriptors
 * for the walk (and makes the cursor reopen levels): raise the soft limit
 * to what is allowed (root may raise the hard one up to fs.nr_open).
 */
void raise_nofile(void)
{
	struct rlimit rl;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");
	unsigned long long nr = 0;

	if (f) {
		if (fscanf(f, "%llu", &nr) != 1)
			nr = 0;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (nr > rl.rlim_max) {
		struct rlimit h = { (rlim_t)nr, (rlim_t)nr };

		if (!setrlimit(RLIMIT_NOFILE, &h))
			return;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}
