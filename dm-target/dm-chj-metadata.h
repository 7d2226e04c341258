/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-chj metadata: format, load, the two tiers of marks, checkpoint.
 *
 * The two tiers (docs/format.md): the intent map (one bit per chunk, in the
 * superblock block), written ahead of the data, and the exact map (one bit
 * per region), set in core before a write is issued and written lazily.
 * When a write may be issued, and every state a chunk or a region goes
 * through: the state table at the top of dm-chj-metadata.c.
 *
 * Context: every function that writes the metadata or changes the chunk
 * state sleeps and is called with the target's lock held, so there is one
 * writer.  chj_md_set_exact_may_issue() is the lock-free call of the bio
 * fast path.
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
 * Load (formatting a blank device, upgrading format 1) for an origin of
 * origin_sectors tracked in regions of region_sectors, with chunks of at
 * least 2^chunk_shift regions.  Grows the tracked size when the origin grew.
 * A recovered intent map (an unclean stop) becomes exact bits, and the
 * epoch is flagged coarse.  Called from preresume: the previous table's
 * instance has stopped writing.
 */
struct chj_metadata *chj_md_open(struct block_device *bdev, u64 origin_sectors,
				 u32 region_sectors, u32 chunk_shift,
				 bool mark_all, char **error);
void chj_md_close(struct chj_metadata *md);

/*
 * Lock-free, any context: set the exact bits of regions [first, last] in
 * core, then say whether the write may be issued now: every region's exact
 * bit is durable, or its chunk is marked durably and not being retired.
 * The bits are set either way (a write that goes on to wait is still
 * recorded).
 */
bool chj_md_set_exact_may_issue(struct chj_metadata *md, u64 first, u64 last);

/* Note that regions [first, last] need their chunks marked. */
void chj_md_want(struct chj_metadata *md, u64 first, u64 last);

/*
 * Commit the wanted chunk marks: one superblock write with FUA (no flush:
 * it depends on no earlier write).  Once CHJ_GROUP_AFTER chunks were
 * marked since the last clean pass, each wanted chunk brings the rest of
 * its aligned group of group chunks (1: none).  0 also when nothing was
 * wanted.
 */
int chj_md_commit_marks(struct chj_metadata *md, unsigned int group);

/*
 * Write the exact map lazily and retire chunk marks: retire every marked
 * chunk (all) or those without a write since the last call; write the
 * bitmap blocks that hold bits not yet written and those of the chunks
 * retired, then commit the superblock without those chunks, with PREFLUSH
 * so that the bitmap blocks are durable first.
 */
int chj_md_clean(struct chj_metadata *md, bool all);

/*
 * Write every bitmap block whose bits changed since it was last written
 * (plain writes, not flushed): a reader of the device then finds the exact
 * bit of every write issued before the call, without the chunk marks.
 */
int chj_md_write_exact(struct chj_metadata *md);

/* Is there anything for chj_md_clean() to do? */
bool chj_md_needs_clean(struct chj_metadata *md);

/* End the current epoch: journal its change set, switch the superblock. */
int chj_md_checkpoint(struct chj_metadata *md, bool carry, u64 *new_epoch);

/* Mark every region in the current epoch, durably; writes drained. */
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
	u64 chunk_regions;
	u64 marked_chunks;	/* in the intent map on disk */
	bool coarse;		/* the current epoch holds recovered chunks */
	/* Since load, for benchmarks. */
	u64 bitmap_writes;
	u64 journal_writes;
	u64 sb_writes;
	u64 chunk_marks;
	u64 chunk_retires;
};

void chj_md_stats(struct chj_metadata *md, struct chj_md_stats *st);

#endif
