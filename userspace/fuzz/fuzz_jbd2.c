// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the jbd2 walk (resolve/jbd2.c).  Input: one byte
 * of flags, then journal blocks of 1 KiB (block 0 the journal superblock).
 * Flag bit 0 makes the superblock move after the first walk (a live
 * journal); bit 1 notes a tail at the map (the superblock's, the
 * sequence lowered by the flags' bits 2-7).  A block is "changed" when its
 * last byte is odd.
 *
 * Oracles beyond the sanitizers: the walk ends (a bounded number of
 * reads), and homes reported never exceed the tags the blocks can hold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "jbd2.h"

#define BS 1024u

struct fz {
	const uint8_t *d;
	size_t nblk;
	unsigned reads, sb_reads;
	int moving;
	uint64_t homes;
};

static int rd(void *ctx, uint64_t b, void *buf)
{
	struct fz *f = ctx;

	if (++f->reads > 1000000u)
		abort();	/* the walk must be bounded */
	if (b >= f->nblk)
		return -1;
	memcpy(buf, f->d + b * BS, BS);
	if (!b && f->moving && f->sb_reads++)
		((unsigned char *)buf)[27] ^= (unsigned char)f->sb_reads;
	return 0;
}

static int ch(void *ctx, uint64_t b)
{
	struct fz *f = ctx;

	return b < f->nblk && (f->d[b * BS + BS - 1] & 1);
}

static void home(void *ctx, uint64_t blk)
{
	struct fz *f = ctx;

	(void)blk;
	f->homes++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { 0 };
	struct jbd2_src src = { &f, BS, 0, rd, ch, home, NULL, 0, 0, 0 };
	struct jbd2_info info;

	if (size < 1 + BS)
		return 0;
	f.moving = data[0] & 1;
	f.d = data + 1;
	f.nblk = (size - 1) / BS;
	src.nblocks = f.nblk;
	if (data[0] & 2) {
		const uint8_t *sb = f.d;

		src.map_known = 1;
		src.map_seq = be32(sb + 24) - (data[0] >> 2);
		src.map_start = be32(sb + 28);
	}
	jbd2_scan(&src, &info);
	/* One walk, at most one lap, at most (BS / 8) tags per block. */
	if (f.homes > (uint64_t)f.nblk * (BS / 8))
		abort();
	return 0;
}
