// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for chj-resolve's btrfs item parsers (resolve/btrfs.c):
 * the walk over a BTRFS_IOC_TREE_SEARCH_V2 result buffer, and each item
 * parser over it (root backrefs, chunk items, extent and metadata items,
 * root items, inode refs and extrefs turned into paths, inode items, leaf
 * items, file extent items).  The input is the result buffer: a 32-byte
 * search header (transid, objectid, offset, type, len) and len bytes of
 * item, repeated.  The items are what the kernel read from a filesystem a
 * user may have crafted.  Oracles: btrfs_fuzz_items().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int btrfs_fuzz_items(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int bad = btrfs_fuzz_items(data, size);

	if (bad) {
		fprintf(stderr, "btrfs_fuzz_items: oracle %d failed\n", bad);
		abort();
	}
	return 0;
}
