/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Test images in memory: formatted with the same code as chj format, then
 * changed the way the kernel target changes them (marks in the current
 * bitmap, checkpoints appending journal records and dropping the oldest
 * when the journal is full).  Plus helpers to damage them.
 */
#ifndef CHJ_TESTIMG_H
#define CHJ_TESTIMG_H

#include <check.h>

#include "internal.h"

struct timg {
	uint8_t *buf;
	size_t len;
	struct chj_meta *m;	/* writable handle on buf */
	struct chj_sb sb;	/* superblock in force */
};

/* Format a dev_blocks image for origin_sectors at region_sectors. */
void timg_init(struct timg *t, uint64_t dev_blocks, uint64_t origin_sectors,
	       uint32_t region_sectors);
void timg_free(struct timg *t);
/* Mark regions [r, r + n) in the current epoch, as a first write would. */
void timg_mark(struct timg *t, uint64_t r, uint64_t n);
/* End the current epoch as the kernel does; returns the new epoch. */
uint64_t timg_checkpoint(struct timg *t);
/* Re-read t->sb from the image. */
void timg_reload(struct timg *t);
/* Block pointer into the image. */
void *timg_block(struct timg *t, uint64_t nr);
/* Journal block holding seq. */
struct chj_journal_block *timg_jblock(struct timg *t, uint64_t seq);
/* Recompute a block's checksum after editing it. */
void timg_reseal(void *block, size_t len);
/*
 * Rewrite both superblock copies from sb without any check (tests of bad
 * fields); copy i keeps its own seq parity.
 */
void timg_write_sb_raw(struct timg *t, const struct chj_sb *sb);
/* Changed regions since e as a bitset; returns the library's rc. */
int timg_changes(struct timg *t, uint64_t since, struct chj_bits *out);

#endif
