// SPDX-License-Identifier: GPL-2.0 OR MIT
/* FIEMAP of an open file: its extents, data fork or (xattr) attribute fork. */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

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
