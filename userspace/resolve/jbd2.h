/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The ext4 journal (jbd2): which home blocks the transactions written in
 * changed journal blocks carry.  Pure parsing over callbacks, so that the
 * unit tests can feed it synthetic journals.
 */
#ifndef CHJ_RESOLVE_JBD2_H
#define CHJ_RESOLVE_JBD2_H

#include <stdint.h>

#define JBD2_MAGIC		0xc03b3998u
#define JBD2_DESCRIPTOR		1
#define JBD2_COMMIT		2
#define JBD2_SB_V1		3
#define JBD2_SB_V2		4
#define JBD2_REVOKE		5

#define JBD2_IN_REVOKE		0x1u
#define JBD2_IN_64BIT		0x2u
#define JBD2_IN_ASYNC_COMMIT	0x4u
#define JBD2_IN_CSUM_V2		0x8u
#define JBD2_IN_CSUM_V3		0x10u
#define JBD2_IN_FAST_COMMIT	0x20u
#define JBD2_IN_KNOWN		0x3fu

#define JBD2_TAG_ESCAPE		0x1u
#define JBD2_TAG_SAME_UUID	0x2u
#define JBD2_TAG_DELETED	0x4u
#define JBD2_TAG_LAST		0x8u

#define JBD2_FC_DEFAULT_BLOCKS	256u

struct jbd2_src {
	void *ctx;
	uint32_t bs;		/* journal (= filesystem) block size */
	uint64_t nblocks;	/* blocks of the journal inode */
	/* Read journal block jblk (0 = journal superblock) into buf (bs bytes). */
	int (*read)(void *ctx, uint64_t jblk, void *buf);
	/* Is journal block jblk inside a changed region? */
	int (*changed)(void *ctx, uint64_t jblk);
	/* A home block carried by a transaction that counts. */
	void (*home)(void *ctx, uint64_t fsblk);
	/* Optional: called after the walk, before the superblock is read
	 * again (chj-resolve-test's CHJ_RESOLVE_LOG_RACE). */
	void (*before_reread)(void *ctx);
	/*
	 * The journal superblock's tail (s_sequence, s_start) read before the
	 * change map was (jbd2_sb_tail): the walk starts there, not at the
	 * tail of the walk's time (jbd2.c says why).  map_known 0: the
	 * superblock's tail at the walk (the unit tests, the fuzzer).
	 */
	int map_known;
	uint32_t map_seq, map_start;
};

struct jbd2_info {
	uint64_t transactions;	/* transactions walked */
	uint64_t counted;	/* of those, with a block in a changed region */
	uint64_t homes;		/* home blocks reported */
	int clean;		/* s_start == 0 (at the map, when noted):
				   nothing live in the journal */
	int moved;		/* the superblock's sequence changed between
				   the start (map_seq) and the walk's end */
	uint32_t seq_from, seq_now;	/* those two sequences */
	int lapped;		/* -1 because the journal went round: a
				   transaction live at the map is gone */
	char why[200];		/* set when the result is -1 (lapped: what
				   the journal did, "went round ...") */
};

/*
 * Walk the live part of the journal (from the tail noted at the map, or
 * s_start, following sequence numbers), and report the home blocks of
 * every transaction (committed or not) that has any of its blocks in a
 * changed region.  0 on success, -1 with info->why when the journal cannot
 * be read, is of an unknown kind, or went round since the map
 * (info->lapped: then what it held is lost).
 */
int jbd2_scan(const struct jbd2_src *src, struct jbd2_info *info);

/* The tail (s_sequence, s_start) of the journal superblock in b (bs
 * bytes): 0, or -1 if b is no journal superblock. */
int jbd2_sb_tail(const unsigned char *b, uint32_t bs, uint32_t *seq, uint32_t *start);

/* Tag size in descriptor blocks for the incompat features. */
unsigned jbd2_tag_bytes(uint32_t incompat);

#endif
