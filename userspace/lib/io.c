// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Metadata device access.  The target writes its metadata with bios that
 * bypass the page cache, so a buffered read could return stale blocks from
 * the cache: reads use O_DIRECT with block-aligned buffers.  Files on file
 * systems without O_DIRECT (tmpfs) fall back to buffered I/O, which is
 * fine for images nothing else is writing.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

void *chj_blocks_alloc(uint64_t n)
{
	void *p = NULL;

	if (!n || n > SIZE_MAX / CHJ_BLOCK_SIZE)
		return NULL;
	if (posix_memalign(&p, CHJ_BLOCK_SIZE, n * CHJ_BLOCK_SIZE))
		return NULL;
	return p;
}

int chj_dev_size(const char *path, uint64_t *bytes, dev_t *rdev,
		 struct chj_error *e)
{
	struct stat st;
	int fd, rc = CHJ_OK;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return chj_err(e, errno == ENOENT ? CHJ_ERR_NOT_FOUND : CHJ_ERR_IO,
			       "%s: %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		rc = chj_err(e, CHJ_ERR_IO, "%s: %s", path, strerror(errno));
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, bytes))
			rc = chj_err(e, CHJ_ERR_IO, "%s: cannot get size: %s",
				     path, strerror(errno));
	} else if (S_ISREG(st.st_mode)) {
		*bytes = st.st_size;
	} else {
		rc = chj_err(e, CHJ_ERR_INVAL,
			     "%s: not a block device or regular file", path);
	}
	if (rdev)
		*rdev = S_ISBLK(st.st_mode) ? st.st_rdev : 0;
	close(fd);
	return rc;
}

static int open_direct(const char *path, int flags, int *direct)
{
	int fd = open(path, flags | O_DIRECT);

	*direct = fd >= 0;
	if (fd < 0 && errno == EINVAL)
		fd = open(path, flags);
	return fd;
}

int chj_meta_open(struct chj_meta **mp, const char *path, int writable,
		  struct chj_error *e)
{
	struct chj_meta *m;
	struct stat st;
	int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
	int rc;

	if (stat(path, &st))
		return chj_err(e, errno == ENOENT ? CHJ_ERR_NOT_FOUND : CHJ_ERR_IO,
			       "%s: %s", path, strerror(errno));
	/* O_EXCL on a block device fails while a target or mount holds it. */
	if (writable && S_ISBLK(st.st_mode))
		flags |= O_EXCL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", path);
	snprintf(m->path, sizeof(m->path), "%s", path);
	m->writable = writable;
	m->fd = open_direct(path, flags, &m->direct);
	if (m->fd < 0) {
		rc = chj_err(e, errno == EBUSY ? CHJ_ERR_BUSY : CHJ_ERR_IO,
			     "%s: %s%s", path, strerror(errno),
			     errno == EBUSY ? " (in use by a live device?)" : "");
		free(m);
		return rc;
	}
	rc = chj_dev_size(path, &m->size, NULL, e);
	if (rc) {
		chj_meta_close(m);
		return rc;
	}
	m->dev_blocks = m->size / CHJ_BLOCK_SIZE;
	*mp = m;
	return CHJ_OK;
}

int chj_meta_open_mem(struct chj_meta **mp, void *buf, size_t len,
		      int writable, struct chj_error *e)
{
	struct chj_meta *m = calloc(1, sizeof(*m));

	if (!m)
		return chj_err(e, CHJ_ERR_NOMEM, "memory image: out of memory");
	m->fd = -1;
	m->mem = buf;
	m->size = len;
	m->dev_blocks = len / CHJ_BLOCK_SIZE;
	m->writable = writable;
	snprintf(m->path, sizeof(m->path), "memory image");
	*mp = m;
	return CHJ_OK;
}

void chj_meta_close(struct chj_meta *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		close(m->fd);
	free(m);
}

uint64_t chj_meta_dev_blocks(const struct chj_meta *m)
{
	return m->dev_blocks;
}

/* Check that [nr, nr + n) lies inside the device. */
static int in_device(struct chj_meta *m, uint64_t nr, uint64_t n,
		     struct chj_error *e)
{
	if (nr > m->dev_blocks || n > m->dev_blocks - nr)
		return chj_err(e, CHJ_ERR_CORRUPT,
			       "%s: block %llu is past the end of the device (%llu blocks)",
			       m->path, (unsigned long long)(nr + n - 1),
			       (unsigned long long)m->dev_blocks);
	return CHJ_OK;
}

/* pread/pwrite all of it; retry buffered once if O_DIRECT is refused. */
static int xfer(struct chj_meta *m, int wr, uint64_t nr, uint64_t n,
		void *buf, struct chj_error *e)
{
	size_t len = n * CHJ_BLOCK_SIZE, done = 0;
	off_t off = (off_t)(nr * CHJ_BLOCK_SIZE);

	while (done < len) {
		ssize_t r = wr ? pwrite(m->fd, (char *)buf + done, len - done, off + done)
			       : pread(m->fd, (char *)buf + done, len - done, off + done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EINVAL && m->direct) {
			/* Some file systems accept O_DIRECT opens but not I/O. */
			int fl = fcntl(m->fd, F_GETFL);

			if (fl >= 0 && !fcntl(m->fd, F_SETFL, fl & ~O_DIRECT)) {
				m->direct = 0;
				continue;
			}
		}
		if (r <= 0)
			return chj_err(e, CHJ_ERR_IO, "%s: %s error at block %llu: %s",
				       m->path, wr ? "write" : "read",
				       (unsigned long long)(nr + done / CHJ_BLOCK_SIZE),
				       r < 0 ? strerror(errno) : "unexpected end of device");
		done += r;
	}
	return CHJ_OK;
}

int chj_read_blocks(struct chj_meta *m, uint64_t nr, uint64_t n, void *buf,
		    struct chj_error *e)
{
	int rc = in_device(m, nr, n, e);

	if (rc)
		return rc;
	if (m->read_hook)
		m->read_hook(m->hook_ctx, nr, n);
	if (m->mem) {
		memcpy(buf, m->mem + nr * CHJ_BLOCK_SIZE, n * CHJ_BLOCK_SIZE);
		return CHJ_OK;
	}
	return xfer(m, 0, nr, n, buf, e);
}

int chj_write_blocks(struct chj_meta *m, uint64_t nr, uint64_t n,
		     const void *buf, struct chj_error *e)
{
	int rc = in_device(m, nr, n, e);

	if (rc)
		return rc;
	if (!m->writable)
		return chj_err(e, CHJ_ERR_INVAL, "%s: opened read-only", m->path);
	if (m->mem) {
		memcpy(m->mem + nr * CHJ_BLOCK_SIZE, buf, n * CHJ_BLOCK_SIZE);
		return CHJ_OK;
	}
	return xfer(m, 1, nr, n, (void *)buf, e);
}

int chj_meta_sync(struct chj_meta *m, struct chj_error *e)
{
	if (m->fd >= 0 && fsync(m->fd))
		return chj_err(e, CHJ_ERR_IO, "%s: flush failed: %s", m->path,
			       strerror(errno));
	return CHJ_OK;
}
