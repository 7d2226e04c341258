// SPDX-License-Identifier: GPL-2.0 OR MIT
/* FIEMAP of an open file: its extents, data fork or (xattr) attribute fork. */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve.h"

#define FM_BATCH 256

int fiemap_get(int fd, int xattr, struct fext **v, size_t *n)
{
	size_t sz = sizeof(struct fiemap) + FM_BATCH * sizeof(struct fiemap_extent);
	struct fiemap *fm = xmalloc(sz);
	uint64_t start = 0;
	size_t cap = 0;
	int last = 0;

	*v = NULL;
	*n = 0;
	while (!last) {
		memset(fm, 0, sz);
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_flags = xattr ? FIEMAP_FLAG_XATTR : 0;
		fm->fm_extent_count = FM_BATCH;
		if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
			int err = errno;

			free(fm);
			free(*v);
			*v = NULL;
			*n = 0;
			errno = err;
			return -1;
		}
		if (!fm->fm_mapped_extents || fm->fm_mapped_extents > FM_BATCH)
			break;
		for (uint32_t i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *x = &fm->fm_extents[i];

			xgrow((void **)v, &cap, *n + 1, sizeof(**v));
			(*v)[*n].logical = x->fe_logical;
			(*v)[*n].physical = x->fe_physical;
			(*v)[*n].len = x->fe_length;
			(*v)[*n].flags = x->fe_flags;
			(*n)++;
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
		}
		{
			struct fiemap_extent *x = &fm->fm_extents[fm->fm_mapped_extents - 1];
			uint64_t next = x->fe_logical + x->fe_length;

			/* No progress means a confused filesystem: stop. */
			if (next <= start)
				break;
			start = next;
		}
	}
	free(fm);
	return 0;
}

void fiemap_ranges(struct item *it, const struct fext *v, size_t n, uint64_t size,
		   const struct rangeset *changed, int map_changed)
{
	struct rangeset mapped, holes, all;

	rs_init(&mapped);
	rs_init(&holes);
	rs_init(&all);
	for (size_t i = 0; i < n; i++) {
		const struct fext *x = &v[i];
		uint32_t uncertain = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
				     FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_INLINE |
				     FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_NOT_ALIGNED;

		rs_add(&mapped, x->logical, x->len);
		if (x->flags & uncertain) {
			/* No usable physical address: count it as changed. */
			rs_add(&it->ranges, x->logical, x->len);
		} else if (map_changed && (x->flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_SHARED))) {
			rs_add(&it->ranges, x->logical, x->len);
		} else {
			rs_map_overlaps(&it->ranges, changed, x->physical, x->len, x->logical);
		}
	}
	if (map_changed) {
		rs_normalize(&mapped);
		rs_add(&all, 0, size);
		rs_subtract(&holes, &all, &mapped);
		for (size_t i = 0; i < holes.n; i++)
			rs_add(&it->ranges, holes.v[i].start, holes.v[i].len);
	}
	rs_normalize(&it->ranges);
	rs_clip(&it->ranges, size);
	rs_free(&mapped);
	rs_free(&holes);
	rs_free(&all);
}

int fiemap_item_ranges(struct resolver *r, struct dircur *cur, struct item *it,
		       const struct rangeset *changed, int map_changed)
{
	struct fext *v = NULL;
	struct stat st;
	size_t n = 0;
	int fd;

	if (!it->npaths)
		return RX_OK;
	fd = dircur_open(cur, it->paths[0], O_RDONLY | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (path_gone(errno))
			return RX_OK;	/* gone since: whatever is there is new */
		/* Under another process's lease: its extents cannot be read
		 * now, so the whole file counts. */
		if (errno == EWOULDBLOCK && !dircur_lstat(cur, it->paths[0], &st) &&
		    S_ISREG(st.st_mode)) {
			rs_add(&it->ranges, 0, (uint64_t)st.st_size);
			rs_normalize(&it->ranges);
			it->size = (uint64_t)st.st_size;
			return RX_OK;
		}
		/* Its ranges would be short. */
		return rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, it->paths[0], strerror(errno));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || fiemap_get(fd, 0, &v, &n)) {
		/* Replaced since: whatever is there now is new. */
		if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
			rs_add(&it->ranges, 0, (uint64_t)st.st_size);
			rs_normalize(&it->ranges);
		}
		close(fd);
		return RX_OK;
	}
	close(fd);
	it->size = (uint64_t)st.st_size;
	fiemap_ranges(it, v, n, it->size, changed, map_changed);
	free(v);
	return RX_OK;
}
