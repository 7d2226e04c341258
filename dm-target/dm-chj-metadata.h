/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-chj metadata: format, load, mark commit, checkpoint.
 *
 * The target calls every function that stages or writes from one thread at
 * a time: the holder of its committer token, or a holder of its lock while
 * commits are paused.  So there is exactly one writer; chj_md_durable() is
 * the lock-free read used on the bio fast path.
 */
#ifndef DM_CHJ_METADATA_H
#define DM_CHJ_METADATA_H

#include <linux/blkdev.h>
#include <linux/bitops.h>
#include "chj_format.h"

struct chj_metadata;

/*
 * Read-only look at the metadata device for the constructor.  Returns 0 and
 * sets *blank when the superblock area is all zero; returns 0 with *sb filled
 * for a valid superblock; else -errno with *error set.  Writes nothing.
 */
int chj_md_peek(struct block_device *bdev, struct chj_superblock *sb,
		bool *blank, char **error);

/*
 * Load (formatting a blank device) for an origin of origin_sectors tracked
 * in regions of region_sectors.  Grows the tracked size when the origin grew.
 * Called from preresume: the previous table's instance has stopped writing.
 */
struct chj_metadata *chj_md_open(struct block_device *bdev, u64 origin_sectors,
				 u32 region_sectors, bool mark_all,
				 char **error);
void chj_md_close(struct chj_metadata *md);

/* Lock-free: is every region in [first, last] durably marked? */
bool chj_md_durable(struct chj_metadata *md, u64 first, u64 last);

/*
 * Stage marks for regions [first, last] of the current epoch.  Returns 1 when
 * the staging buffers are full (the caller writes them and stages the rest
 * later), 0 when everything was staged.  *next is the first region not yet
 * staged.
 */
int chj_md_stage(struct chj_metadata *md, u64 first, u64 last, u64 *next);

/* Called once the staged blocks' writes ended, in any context. */
typedef void (*chj_md_done_fn)(void *ctx, int err);

/*
 * Start writing the staged bitmap blocks with FUA and return how many; 0
 * when nothing is staged (done is then not called).  It allocates nothing,
 * so the bio path may call it; done(ctx, err) runs when the last write
 * ended.  Until chj_md_end_staged() nothing may be staged.
 */
unsigned int chj_md_write_staged(struct chj_metadata *md, chj_md_done_fn done,
				 void *ctx);

/*
 * After done(ctx, err): without error, publish the staged bits to the
 * lock-free bitmap; else drop them (their regions stay unmarked in core).
 */
void chj_md_end_staged(struct chj_metadata *md, int err);

/*
 * At module load: build the table the incremental bitmap checksum needs and
 * check it against a whole-block CRC.  -errno refuses the module.
 */
int chj_md_init(void);

/* End the current epoch: journal its change set, switch the superblock. */
int chj_md_checkpoint(struct chj_metadata *md, u64 *new_epoch);

/* Mark every region in the current epoch, durably. */
int chj_md_mark_all(struct chj_metadata *md);

/* Best effort after a write failure: flag the epoch as all-changed. */
void chj_md_flag_all_changed(struct chj_metadata *md);

struct chj_md_stats {
	u64 current_epoch;
	u64 oldest_epoch;
	u64 marked;
	u64 nr_regions;
	u64 journal_used;
	u64 journal_blocks;
	/* Blocks written since load, for benchmarks. */
	u64 bitmap_writes;
	u64 journal_writes;
	u64 sb_writes;
};

void chj_md_stats(struct chj_metadata *md, struct chj_md_stats *st);

#endif
