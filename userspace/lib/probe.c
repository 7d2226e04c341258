// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Signatures on a would-be metadata device, via libblkid: chj create and
 * chj format refuse to overwrite a file system, RAID member, partition
 * table or the like unless forced.
 */
#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* A chj superblock magic in either copy, but no valid superblock. */
static int damaged_chj(const char *path, struct chj_error *e)
{
	struct chj_meta *m;
	struct chj_sb_copies c;
	int found = 0;

	if (chj_meta_open(&m, path, 0, e))
		return -1;
	if (!chj_sb_read_copies(m, &c, NULL) && c.best < 0)
		for (unsigned i = 0; i < CHJ_SB_COPIES; i++)
			found |= c.state[i] == CHJ_SB_BAD_CSUM ||
				 c.state[i] == CHJ_SB_BAD_FIELDS ||
				 c.state[i] == CHJ_SB_MISPLACED;
	chj_meta_close(m);
	return found;
}

int chj_probe_signature(const char *path, int *found, char *what,
			size_t len, struct chj_error *e)
{
	blkid_probe pr;
	const char *v = NULL;
	int r = damaged_chj(path, e);

	if (r < 0)
		return e ? e->rc : CHJ_ERR_IO;
	*found = r;
	if (r) {
		snprintf(what, len, "damaged chj metadata");
		return CHJ_OK;
	}
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return chj_err(e, CHJ_ERR_IO, "%s: cannot probe for signatures: %s",
			       path, strerror(errno ? errno : EIO));
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	r = blkid_do_safeprobe(pr);
	if (r == 0) {
		if (blkid_probe_lookup_value(pr, "TYPE", &v, NULL) &&
		    blkid_probe_lookup_value(pr, "PTTYPE", &v, NULL))
			v = "unknown signature";
		*found = 1;
		snprintf(what, len, "%s", v);
	} else if (r == -2) {
		*found = 1;
		snprintf(what, len, "several signatures");
	}
	blkid_free_probe(pr);
	if (r == -1)
		return chj_err(e, CHJ_ERR_IO, "%s: probing for signatures failed", path);
	return CHJ_OK;
}

int chj_wipe_signatures(const char *path, struct chj_error *e)
{
	blkid_probe pr;
	struct stat st;
	int fd, rc = CHJ_OK;

	if (stat(path, &st))
		return chj_err(e, CHJ_ERR_IO, "%s: %s", path, strerror(errno));
	fd = open(path, O_RDWR | O_CLOEXEC | (S_ISBLK(st.st_mode) ? O_EXCL : 0));
	if (fd < 0)
		return chj_err(e, errno == EBUSY ? CHJ_ERR_BUSY : CHJ_ERR_IO,
			       "%s: %s", path, strerror(errno));
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0)) {
		rc = chj_err(e, CHJ_ERR_IO, "%s: cannot probe for signatures", path);
		goto out;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	while (blkid_do_probe(pr) == 0)
		if (blkid_do_wipe(pr, 0)) {
			rc = chj_err(e, CHJ_ERR_IO, "%s: cannot erase a signature: %s",
				     path, strerror(errno));
			break;
		}
	if (!rc && fsync(fd))
		rc = chj_err(e, CHJ_ERR_IO, "%s: flush failed: %s", path, strerror(errno));
out:
	if (pr)
		blkid_free_probe(pr);
	close(fd);
	return rc;
}
