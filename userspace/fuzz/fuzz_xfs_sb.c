// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the XFS superblock parser and inode arithmetic
 * (resolve/xfs_sb.c).  Oracles: an accepted geometry's byte sizes did not
 * wrap (the filesystem covers its log; every AG's inodes map inside it),
 * and inode number <-> byte offset round-trips.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char sb[512];
	struct xfs_geo g;

	if (size < sizeof(sb) + 8)
		return 0;
	memcpy(sb, data, sizeof(sb));
	if (xfs_parse_sb(sb, &g))
		return 0;
	if (g.fs_bytes / g.bs != g.dblocks || g.log_start + g.log_bytes < g.log_start ||
	    g.log_start + g.log_bytes > g.fs_bytes)
		abort();
	{
		uint64_t ino = 0, off;

		memcpy(&ino, data + sizeof(sb), 8);
		off = xfs_ino_to_byte(&g, ino);
		if (off != UINT64_MAX && xfs_byte_to_ino(&g, off) != ino)
			abort();
	}
	return 0;
}
