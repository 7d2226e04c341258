/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* libchj internals shared between its files (and the unit tests). */
#ifndef CHJ_INTERNAL_H
#define CHJ_INTERNAL_H

#include "libchj.h"

struct chj_meta {
	int fd;			/* -1 for memory images */
	uint8_t *mem;		/* memory image, or NULL */
	uint64_t size;		/* bytes */
	uint64_t dev_blocks;	/* whole 4 KiB blocks */
	int writable;
	int direct;		/* fd opened with O_DIRECT */
	char path[256];
	/*
	 * chj_meta_open_live(): the target's current epoch when it wrote its
	 * exact map for this reader ("sync" message), else 0.
	 */
	uint64_t synced_epoch;
	/* Tests: called before each read, to change the image under a reader. */
	void (*read_hook)(void *ctx, uint64_t nr, uint64_t n);
	void *hook_ctx;
};

/* Aligned buffer for O_DIRECT I/O of n blocks; free with free(). */
void *chj_blocks_alloc(uint64_t n);
/* Read/write n blocks starting at block nr; short transfers are errors. */
int chj_read_blocks(struct chj_meta *m, uint64_t nr, uint64_t n, void *buf,
		    struct chj_error *e);
int chj_write_blocks(struct chj_meta *m, uint64_t nr, uint64_t n,
		     const void *buf, struct chj_error *e);
int chj_meta_sync(struct chj_meta *m, struct chj_error *e);

/* Fill a bitmap block: stamp, bits, magic, csum. */
void chj_bitmap_block_fill(struct chj_bitmap_block *b, uint64_t epoch,
			   uint64_t block_idx, uint64_t nr_regions, int ones);
/* Seal a block: write magic and csum. */
void chj_journal_block_seal(struct chj_journal_block *b);

/* ---- region bitset: the union every answer is built in ---- */
struct chj_bits {
	uint64_t *w;
	uint64_t nbits;
};
int chj_bits_init(struct chj_bits *b, uint64_t nbits, struct chj_error *e);
void chj_bits_free(struct chj_bits *b);
/* Set [start, start + n); the caller has checked the bounds. */
void chj_bits_set_range(struct chj_bits *b, uint64_t start, uint64_t n);
int chj_bits_test(const struct chj_bits *b, uint64_t i);
/* Set the regions of sb's marked chunks (format 2's intent map) in b. */
void chj_sb_intent_regions(const struct chj_sb *sb, struct chj_bits *b);
/* First run of set bits at or after *pos: returns 0 when none. */
int chj_bits_next_run(const struct chj_bits *b, uint64_t *pos,
		      uint64_t *start, uint64_t *n);
uint64_t chj_bits_count(const struct chj_bits *b);
/* Any bit set in [first, last]?  Only the words of that range are read. */
int chj_bits_any(const struct chj_bits *b, uint64_t first, uint64_t last);

/* ---- journal walk ---- */
struct chj_jblock {
	uint64_t seq, epoch;
	uint32_t flags, nr_extents;
	const struct chj_extent *ext;	/* on-disk (little-endian) */
};

struct chj_jwalk {
	/* called for every block that passed all checks */
	int (*block)(void *ctx, const struct chj_jblock *b);
	/* called for each problem; seq is the block it was found at */
	void (*problem)(void *ctx, uint64_t seq, const char *why);
	void *ctx;
	int stop_at_problem;	/* stop the walk at the first problem */
	/* results */
	unsigned problems;
	uint64_t last_bad_seq;	/* highest seq with a problem */
};
/*
 * Walk journal blocks [head, tail) in order, checking each block (seq,
 * magic, csum, epoch range, flags, extents) and the record structure
 * (FIRST..LAST, epochs non-decreasing, extents sorted across a record).
 * Returns CHJ_OK unless reading failed or a callback returned non-zero.
 */
int chj_journal_walk(struct chj_meta *m, const struct chj_sb *sb,
		     struct chj_jwalk *w, struct chj_error *e);

/* ---- bitmap scan ---- */
enum chj_bm_state {
	CHJ_BM_CURRENT,		/* stamped with the current epoch */
	CHJ_BM_STALE,		/* older stamp: empty for this epoch */
	CHJ_BM_NEWER,		/* newer stamp than the superblock's epoch */
	CHJ_BM_DAMAGED,		/* bad magic or checksum */
};
struct chj_bmscan {
	/* per block callback (may be NULL) */
	void (*block)(void *ctx, uint64_t idx, enum chj_bm_state st,
		      const struct chj_bitmap_block *b);
	void *ctx;
	struct chj_bits *out;	/* where current bits go (may be NULL) */
	unsigned reread;	/* re-reads of a damaged block (live races) */
	uint64_t damaged, newer, stray;	/* stray: bits past nr_regions */
};
int chj_bitmap_scan(struct chj_meta *m, const struct chj_sb *sb,
		    struct chj_bmscan *s, struct chj_error *e);
enum chj_bm_state chj_bitmap_block_state(const struct chj_bitmap_block *b,
					 uint64_t current_epoch);

/* How many times a snapshot is retried when the superblock moves. */
#define CHJ_SNAPSHOT_TRIES	50

#endif /* CHJ_INTERNAL_H */
