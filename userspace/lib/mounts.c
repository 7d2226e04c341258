// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Where a block device is mounted, from the mount table through libmount
 * (which undoes mountinfo's octal escapes: a mount point with a space is
 * "\040" in the file).
 */
#include <errno.h>
#include <libmount.h>
#include <stdio.h>
#include <sys/stat.h>

#include "internal.h"

/*
 * btrfs (and fuseblk) mounts show an anonymous maj:min, not the device's:
 * then only the source names the device.
 */
int chj_mount_is_of(dev_t mnt_dev, const char *source, dev_t dev)
{
	struct stat st;

	if (mnt_dev == dev)
		return 1;
	return source && source[0] == '/' && !stat(source, &st) && S_ISBLK(st.st_mode) &&
	       st.st_rdev == dev;
}

int chj_mount_point(const char *mountinfo, dev_t dev, char *mnt, size_t len)
{
	struct libmnt_table *tb;
	struct libmnt_iter *it;
	struct libmnt_fs *fs;
	int found = 0;

	tb = mnt_new_table_from_file(mountinfo ? mountinfo : "/proc/self/mountinfo");
	it = mnt_new_iter(MNT_ITER_FORWARD);
	if (!tb || !it) {
		mnt_unref_table(tb);
		mnt_free_iter(it);
		return -1;
	}
	while (!found && !mnt_table_next_fs(tb, it, &fs)) {
		if (!mnt_fs_get_target(fs) ||
		    !chj_mount_is_of(mnt_fs_get_devno(fs), mnt_fs_get_source(fs), dev))
			continue;
		snprintf(mnt, len, "%s", mnt_fs_get_target(fs));
		found = 1;
	}
	mnt_free_iter(it);
	mnt_unref_table(tb);
	return found;
}
