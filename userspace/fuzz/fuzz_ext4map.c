// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the ext4 extent-tree and block-map walks
 * (resolve/ext4.c, inode_blocks): the input is a filesystem image, opened
 * by libext2fs through its unix io channel on a memfd (so every read the
 * walk makes comes from the input); the first inodes' maps are walked.
 * Oracle beyond the sanitizers: the work per inode is bounded (each
 * mapping block read once, a block's worth of entries per block), the
 * shared-node amplification of a few KiB into 4 x 340^3 callbacks is gone.
 */
#include <ext2fs/ext2fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int ext4_fuzz_maps(ext2_filsys fs, unsigned max_inodes);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ext2_filsys fs = NULL;
	char path[64];
	int fd;

	if (size < 2048)
		return 0;
	fd = memfd_create("ext4", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!ext2fs_open2(path, NULL,
			  EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			  0, 0, unix_io_manager, &fs)) {
		if (ext4_fuzz_maps(fs, 64))
			abort();
		ext2fs_close_free(&fs);
	}
	close(fd);
	return 0;
}
