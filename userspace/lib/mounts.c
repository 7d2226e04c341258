// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Where a block device is mounted, from the mount table through libmount
 * (which undoes mountinfo's octal escapes: a mount point with a space is
 * "\040" in the file).
 */
#include <errno.h>
#include <libmount.h>
#include <stdio.h>

#include "internal.h"

int chj_mount_point(const char *mountinfo, dev_t dev, char *mnt, size_t len)
{
	struct libmnt_table *tb;
	struct libmnt_fs *fs;
	int found = 0;

	tb = mnt_new_table_from_file(mountinfo ? mountinfo : "/proc/self/mountinfo");
	if (!tb)
		return -1;
	fs = mnt_table_find_devno(tb, dev, MNT_ITER_FORWARD);
	if (fs && mnt_fs_get_target(fs)) {
		snprintf(mnt, len, "%s", mnt_fs_get_target(fs));
		found = 1;
	}
	mnt_unref_table(tb);
	return found;
}
