// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Where an ext4 inode's record is (ext4_inode_block, read ahead before
 * the stats): the block debugfs names for it, in the first group, a later
 * one, at a group's edges; nothing for inode 0 or past the last.
 */
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"
#include "suites.h"

/* debugfs's answer: "Inode N is part of block group G\n\tlocated at
 * block B, offset 0x...". */
static uint64_t debugfs_imap(const char *img, uint64_t ino)
{
	char cmd[512], line[256];
	unsigned long long b = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "debugfs -R 'imap <%llu>' '%s' 2>/dev/null", (unsigned long long)ino, img);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " located at block %llu", &b) == 1)
			break;
	pclose(f);
	return b;
}

START_TEST(ext4_inode_block_is_where_debugfs_says)
{
	char *t = scratch_dir("ext4"), img[256], cmd[512];
	ext2_filsys fs;
	uint64_t ipg, last;

	snprintf(img, sizeof(img), "%s/fs.img", t);
	/* Small groups, so that a few MiB hold several. */
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext4 -b 1024 -g 1024 -N 2048 -I 256 '%s' 8M >/dev/null 2>&1", img);
	if (system(cmd)) {
		/* e2fsprogs not installed: nothing to compare with. */
		scratch_rm(t);
		free(t);
		return;
	}
	ck_assert_int_eq(ext2fs_open(img, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs), 0);
	ipg = EXT2_INODES_PER_GROUP(fs->super);
	last = fs->super->s_inodes_count;
	ck_assert_uint_gt(fs->group_desc_count, 2);
	{
		const uint64_t v[] = { 1, 2, 11, 12, ipg - 1, ipg, ipg + 1, 2 * ipg + 5, last - 1, last };

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			ck_assert_uint_eq(ext4_inode_block(fs, v[i]), debugfs_imap(img, v[i]));
	}
	ck_assert_uint_eq(ext4_inode_block(fs, 0), 0);
	ck_assert_uint_eq(ext4_inode_block(fs, last + 1), 0);
	ck_assert_uint_eq(ext4_inode_block(fs, UINT64_MAX), 0);
	ext2fs_close_free(&fs);
	scratch_rm(t);
	free(t);
}
END_TEST

Suite *suite_ext4(void)
{
	Suite *s = suite_create("ext4");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ext4_inode_block_is_where_debugfs_says);
	suite_add_tcase(s, tc);
	return s;
}
