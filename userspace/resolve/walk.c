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

/* A directory's subdirectories, opened after its entries are all read. */
struct frame {
	int fd;
	uint64_t ino;
	size_t rel_len;		/* its path's length in the path buffer */
	char **sub;
	size_t nsub, subcap, next;
};

static int open_sub(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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

/*
 * Each level of the tree keeps its directory open while its subdirectories
 * are walked, so a tree as deep as a user cares to make needs as many file
 * descriptors: the limit is raised (raise_nofile).  A tree deeper than that
 * is a full scan.
 */
/* Read directory f (its path in *rel, f->rel_len bytes): visit and record
 * every entry, keep the subdirectories' names. */
static int read_dir(struct resolver *r, struct frame *f, char **rel, size_t *rcap,
		    int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx),
		    void *ctx)
{
	size_t dl = f->rel_len;
	struct walk_entry e;
	struct dirent *d;
	struct stat st;
	int dfd = dup(f->fd), rc = RX_OK;
	DIR *dp = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!dp) {
		int e = errno;

		if (dfd >= 0)
			close(dfd);
		/* Its entries cannot be named (out of fds, most likely). */
		return rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, *rel, strerror(e));
	}
	r->st.dirs_walked++;
	while ((errno = 0, d = readdir(dp))) {
		size_t nl = strlen(d->d_name);

		if (d->d_name[0] == '.' && (!d->d_name[1] ||
					    (d->d_name[1] == '.' && !d->d_name[2])))
			continue;
		xgrow((void **)rel, rcap, dl + nl + 2, 1);
		if (dl) {
			(*rel)[dl] = '/';
			memcpy(*rel + dl + 1, d->d_name, nl + 1);
		} else {
			memcpy(*rel, d->d_name, nl + 1);
		}
		e.dirfd = f->fd;
		e.dir_ino = f->ino;
		e.name = d->d_name;
		e.rel = *rel;
		e.ino = d->d_ino;
		e.type = ftype_from_dtype(d->d_type);
		if (e.type == FT_UNKNOWN) {
			if (fstatat(f->fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
				if (path_gone(errno))
					continue;
				rc = rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, *rel,
					     strerror(errno));
				break;
			}
			e.type = ftype_from_mode(st.st_mode);
		}
		r->st.entries_walked++;
		if (visit && (rc = visit(r, &e, ctx)))
			break;
		record(r, &e);
		if (e.type == FT_DIR) {
			xgrow((void **)&f->sub, &f->subcap, f->nsub + 1, sizeof(*f->sub));
			f->sub[f->nsub++] = xstrdup(d->d_name);
		}
		if (!(r->st.entries_walked & 255))
			progress(r, "walking %s: %llu directories, %llu entries", r->mnt,
				 (unsigned long long)r->st.dirs_walked,
				 (unsigned long long)r->st.entries_walked);
	}
	(*rel)[dl] = 0;
	if (!rc && errno)
		rc = rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, *rel, strerror(errno));
	closedir(dp);
	return rc;
}

static void frame_free(struct frame *f)
{
	for (size_t i = f->next; i < f->nsub; i++)
		free(f->sub[i]);
	free(f->sub);
	if (f->fd >= 0)
		close(f->fd);
}

int walk_tree(struct resolver *r,
	      int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx),
	      void *ctx)
{
	struct frame *st = NULL;
	size_t n = 0, cap = 0, rcap = 0;
	char *rel = NULL;
	struct walk_entry e;
	struct stat sb;
	int rc = RX_OK;

	if (fstat(r->mnt_fd, &sb))
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	e.dirfd = r->mnt_fd;
	e.dir_ino = sb.st_ino;
	e.name = ".";
	e.rel = "";
	e.ino = sb.st_ino;
	e.type = FT_DIR;
	if (visit && (rc = visit(r, &e, ctx)))
		return rc;
	record(r, &e);
	raise_nofile();

	xgrow((void **)&rel, &rcap, 1, 1);
	rel[0] = 0;
	xgrow((void **)&st, &cap, 1, sizeof(*st));
	memset(&st[0], 0, sizeof(st[0]));
	st[0].fd = openat(r->mnt_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	st[0].ino = sb.st_ino;
	if (st[0].fd < 0) {
		free(st);
		free(rel);
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	}
	n = 1;
	rc = read_dir(r, &st[0], &rel, &rcap, visit, ctx);
	while (!rc && n) {
		struct frame *top = &st[n - 1], *f;
		struct statx sx;
		char *name;
		size_t nl;
		int fd;

		if (top->next == top->nsub) {
			frame_free(top);
			n--;
			if (n)
				rel[st[n - 1].rel_len] = 0;
			continue;
		}
		name = top->sub[top->next++];
		fd = open_sub(top->fd, name);
		if (fd < 0) {
			int e2 = errno;

			/* Removed or replaced since its parent was read: a
			 * change after the sync, not ours to report. */
			if (path_gone(e2)) {
				free(name);
				continue;
			}
			/* What is under it cannot be named: a full scan. */
			if (e2 == EMFILE || e2 == ENFILE)
				rc = rx_fail(r, RX_FULL_SCAN, "%s: a directory tree deeper than %zu levels, more than the open-file limit",
					     r->mnt, n);
			else
				rc = rx_fail(r, RX_FULL_SCAN, "%s/%s%s%s: %s", r->mnt, rel, *rel ? "/" : "",
					     name, strerror(e2));
			free(name);
			break;
		}
		if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID | STATX_INO, &sx) ||
		    sx.stx_mnt_id != r->mnt_id) {
			/* Another filesystem is mounted here. */
			close(fd);
			free(name);
			continue;
		}
		nl = strlen(name);
		xgrow((void **)&rel, &rcap, top->rel_len + nl + 2, 1);
		if (top->rel_len) {
			rel[top->rel_len] = '/';
			memcpy(rel + top->rel_len + 1, name, nl + 1);
		} else {
			memcpy(rel, name, nl + 1);
		}
		xgrow((void **)&st, &cap, n + 1, sizeof(*st));
		top = &st[n - 1];
		f = &st[n++];
		memset(f, 0, sizeof(*f));
		f->fd = fd;
		f->ino = sx.stx_ino;
		f->rel_len = (top->rel_len ? top->rel_len + 1 : 0) + nl;
		free(name);
		rc = read_dir(r, f, &rel, &rcap, visit, ctx);
	}
	while (n)
		frame_free(&st[--n]);
	free(st);
	free(rel);
	return rc;
}
