/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* XFS geometry (from the superblock) and the log scan (xfslog.c). */
#ifndef CHJ_RESOLVE_XFS_H
#define CHJ_RESOLVE_XFS_H

#include <stdint.h>

#include "resolve.h"

struct xfs_geo {
	uint64_t bs;			/* block size */
	uint64_t agblocks, agcount;
	unsigned agblklog, inopblog;
	uint64_t isize;			/* inode size */
	uint64_t dblocks, fs_bytes;
	uint64_t log_start, log_bytes;	/* internal log, device bytes */
	uint8_t uuid[16];
	int crc;			/* v5: checksummed log records */
	int rmapbt, reflink;
};

/* Device byte offset of inode ino, or UINT64_MAX if out of range. */
uint64_t xfs_ino_to_byte(const struct xfs_geo *g, uint64_t ino);
/* Inode number of the inode slot at device byte off (inside an AG). */
uint64_t xfs_byte_to_ino(const struct xfs_geo *g, uint64_t off);
/* Parse a superblock (512 bytes, big-endian); NULL or why not usable. */
const char *xfs_parse_sb(const unsigned char *sb, struct xfs_geo *g);

struct xlog_out {
	void *ctx;
	void (*inode)(void *ctx, uint64_t ino, unsigned reasons);
	void (*range)(void *ctx, uint64_t start, uint64_t len);	/* device bytes */
	/* Tests only: called after the records are read, before the head
	 * record (at device byte head) is read again, to move the log under
	 * the scan (unit tests; xfs.c's log_race for CHJ_RESOLVE_LOG_RACE). */
	void (*before_head_reread)(void *ctx, uint64_t head);
	/*
	 * The log's head and tail LSNs (the kernel's) just before the change
	 * map was read (map_known), and the head now (now_head: 0, or -1 if
	 * it cannot be read), called after every record was read.  The map
	 * marks no record written after it was read: the records it does
	 * mark are only what was read if the head went less than a lap from
	 * there meanwhile (xfslog.c, lapped_since_map).  Unknown: not checked.
	 */
	int map_known;
	uint64_t map_head, map_tail;
	int (*now_head)(void *ctx, uint64_t *lsn);
	uint64_t transactions, records, head_lsn, tail_lsn;
	uint64_t read_bytes;	/* bytes of records read (and CRC-checked) */
	/*
	 * Every transaction written since the epoch was read whole: the log
	 * has not wrapped over any of them.  Then every metadata change since
	 * the epoch is among what was reported (XFS logs all of them).
	 */
	int complete;
	/*
	 * Every inode number that may have been written into a directory
	 * entry by a transaction reported (unsorted, no repeats; the caller
	 * frees it).
	 */
	uint64_t *entry_inos;
	size_t nentry_inos, entry_cap;
	struct u64set entry_seen;	/* entry_inos, once each (the caller
					   frees it) */
};

/* Transactions in changed log blocks: their inodes and buffer ranges. */
int xlog_scan(struct resolver *r, const struct xfs_geo *g, const struct rangeset *changed,
	      struct xlog_out *out);

#endif
