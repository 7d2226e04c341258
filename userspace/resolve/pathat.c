// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Paths under the mount, of any length and depth, opened without following
 * a symlink in any component and without leaving the mount's tree: a user
 * who can make directories decides how deep and how long paths get, and may
 * swap a directory for a symlink while chj-resolve runs.
 *
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) resolves at most PATH_MAX
 * bytes at a time: a longer path is opened in pieces cut at a '/', each
 * piece from the directory the previous one opened.  Kernels before 5.6
 * (no openat2) get the same, one component at a time, with O_NOFOLLOW.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "resolve.h"

static int no_openat2;

static int open_piece(int dirfd, const char *p, int flags)
{
	struct open_how how;
	int fd;

	if (!no_openat2) {
		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		fd = (int)syscall(SYS_openat2, dirfd, p, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		no_openat2 = 1;
	}
	/* One component at a time. */
	{
		int cur = dirfd;
		const char *s = p;

		for (;;) {
			const char *e = strchr(s, '/');
			char comp[NAME_MAX + 1];
			size_t l = e ? (size_t)(e - s) : strlen(s);
			int nfd, f = e ? O_PATH | O_DIRECTORY : flags;

			if (l > NAME_MAX) {
				errno = ENAMETOOLONG;
				nfd = -1;
			} else if (!l || (l == 2 && s[0] == '.' && s[1] == '.')) {
				errno = EXDEV;
				nfd = -1;
			} else {
				memcpy(comp, s, l);
				comp[l] = 0;
				nfd = openat(cur, comp, f | O_NOFOLLOW | O_CLOEXEC);
			}
			if (cur != dirfd) {
				int e2 = errno;

				close(cur);
				errno = e2;
			}
			if (nfd < 0 || !e)
				return nfd;
			cur = nfd;
			s = e + 1;
		}
	}
}

int rel_open(int mnt_fd, const char *rel, int flags)
{
	int cur = mnt_fd, fd;
	const char *s = rel;

	if (!*rel)
		return openat(mnt_fd, ".", flags | O_CLOEXEC);
	for (;;) {
		size_t l = strlen(s);
		const char *cut;
		char *piece;
		int e;

		if (l < PATH_MAX) {
			fd = open_piece(cur, s, flags);
			break;
		}
		/* The longest prefix that fits, ending before a '/'. */
		cut = s + PATH_MAX - 1;
		while (cut > s && *cut != '/')
			cut--;
		if (cut == s) {
			fd = -1;
			errno = ENAMETOOLONG;
			break;
		}
		piece = xmalloc((size_t)(cut - s) + 1);
		memcpy(piece, s, (size_t)(cut - s));
		piece[cut - s] = 0;
		fd = open_piece(cur, piece, O_PATH | O_DIRECTORY);
		e = errno;
		free(piece);
		if (cur != mnt_fd)
			close(cur);
		errno = e;
		if (fd < 0)
			return -1;
		cur = fd;
		s = cut + 1;
	}
	if (cur != mnt_fd) {
		int e = errno;

		close(cur);
		errno = e;
	}
	return fd;
}

int rel_lstat(int mnt_fd, const char *rel, struct stat *st)
{
	const char *slash = strrchr(rel, '/');
	char *dir;
	int dfd, rc, e;

	if (!*rel)
		return fstat(mnt_fd, st);
	if (!slash)
		return fstatat(mnt_fd, rel, st, AT_SYMLINK_NOFOLLOW);
	dir = xmalloc((size_t)(slash - rel) + 1);
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = 0;
	dfd = rel_open(mnt_fd, dir, O_PATH | O_DIRECTORY);
	free(dir);
	if (dfd < 0)
		return -1;
	rc = fstatat(dfd, slash + 1, st, AT_SYMLINK_NOFOLLOW);
	e = errno;
	close(dfd);
	errno = e;
	return rc;
}
