// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The namespace walk: every directory under the mount point, read with
 * getdents (no stat per entry), not crossing into other mounts (statx
 * mount id, so bind mounts of the same filesystem are not walked twice).
 * Every path of every inode in the result table is recorded, which is how
 * all the names of a hard-linked inode are found.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve.h"

static int open_dir(struct resolver *r, const char *rel)
{
	int fd = openat(r->mnt_fd, *rel ? rel : ".",
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(r->mnt_fd, *rel ? rel : ".",
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd;
}

static void record(struct resolver *r, const struct walk_entry *e)
{
	struct item *it = res_find(&r->res, 0, e->ino);

	/* Dropped items (no reason left) stay unnamed, as with the cache. */
	if (!it || !it->reasons)
		return;
	item_add_path(it, e->rel);
	if (it->type == FT_UNKNOWN)
		it->type = e->type;
}

int walk_tree(struct resolver *r,
	      int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx),
	      void *ctx)
{
	char **stack = NULL, *rel = NULL;
	size_t n = 0, cap = 0, rcap = 0;
	struct walk_entry e;
	struct stat st;
	int rc = RX_OK;

	if (fstat(r->mnt_fd, &st))
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	e.dirfd = r->mnt_fd;
	e.dir_ino = st.st_ino;
	e.name = ".";
	e.rel = "";
	e.ino = st.st_ino;
	e.type = FT_DIR;
	if (visit && (rc = visit(r, &e, ctx)))
		return rc;
	record(r, &e);

	xgrow((void **)&stack, &cap, 1, sizeof(*stack));
	stack[n++] = xstrdup("");
	while (n) {
		char *dir = stack[--n];
		size_t dl = strlen(dir);
		struct statx sx;
		struct dirent *d;
		DIR *dp;
		int fd = open_dir(r, dir);

		if (fd < 0) {
			/* Removed or replaced since its parent was read: a
			 * change after the sync, not ours to report. */
			if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
				free(dir);
				continue;
			}
			rc = rx_fail(r, RX_ERROR, "%s/%s: %s", r->mnt, dir, strerror(errno));
			free(dir);
			break;
		}
		if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID | STATX_INO, &sx) ||
		    sx.stx_mnt_id != r->mnt_id) {
			/* Another filesystem is mounted here. */
			close(fd);
			free(dir);
			continue;
		}
		dp = fdopendir(fd);
		if (!dp) {
			close(fd);
			rc = rx_fail(r, RX_ERROR, "%s/%s: %s", r->mnt, dir, strerror(errno));
			free(dir);
			break;
		}
		r->st.dirs_walked++;
		while ((errno = 0, d = readdir(dp))) {
			size_t nl = strlen(d->d_name);

			if (d->d_name[0] == '.' && (!d->d_name[1] ||
						    (d->d_name[1] == '.' && !d->d_name[2])))
				continue;
			xgrow((void **)&rel, &rcap, dl + nl + 2, 1);
			if (dl) {
				memcpy(rel, dir, dl);
				rel[dl] = '/';
				memcpy(rel + dl + 1, d->d_name, nl + 1);
			} else {
				memcpy(rel, d->d_name, nl + 1);
			}
			e.dirfd = fd;
			e.dir_ino = sx.stx_ino;
			e.name = d->d_name;
			e.rel = rel;
			e.ino = d->d_ino;
			e.type = ftype_from_dtype(d->d_type);
			if (e.type == FT_UNKNOWN) {
				if (fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW))
					continue;
				e.type = ftype_from_mode(st.st_mode);
			}
			r->st.entries_walked++;
			if (visit && (rc = visit(r, &e, ctx)))
				break;
			record(r, &e);
			if (e.type == FT_DIR) {
				xgrow((void **)&stack, &cap, n + 1, sizeof(*stack));
				stack[n++] = xstrdup(rel);
			}
			if (!(r->st.entries_walked & 255))
				progress(r, "walking %s: %llu directories, %llu entries", r->mnt,
					 (unsigned long long)r->st.dirs_walked,
					 (unsigned long long)r->st.entries_walked);
		}
		if (!rc && errno)
			rc = rx_fail(r, RX_ERROR, "%s/%s: %s", r->mnt, dir, strerror(errno));
		closedir(dp);
		free(dir);
		if (rc)
			break;
	}
	while (n)
		free(stack[--n]);
	free(stack);
	free(rel);
	return rc;
}
