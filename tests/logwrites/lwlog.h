/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * lwlog: a bounds-checked reader of dm-log-writes logs, for the test tools
 * that read them (lw-replay, order-check) and its fuzzer (fuzz_lwlog.c).
 *
 * Format (drivers/md/dm-log-writes.c): little-endian, in units of the
 * logged device's logical block size S.  Block 0: super {magic, version,
 * nr_entries, sectorsize}.  Then per entry one header block {sector,
 * nr_sectors, flags, data_len} (a mark's label follows the 32-byte header)
 * and nr_sectors blocks of data (none for discards and marks).  Sectors
 * and counts are in units of S; lwlog converts them to 512-byte sectors.
 *
 * The log's bytes are untrusted: every entry must lie inside the log, its
 * sector range must not overflow, and the entry count is bounded by the
 * log's size (each entry takes a header block).
 */
#ifndef CHJ_LWLOG_H
#define CHJ_LWLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LW_MAGIC	0x6a736677736872ULL
#define LW_VERSION	1ULL
#define LW_FLUSH	(1u << 0)
#define LW_FUA		(1u << 1)
#define LW_DISCARD	(1u << 2)
#define LW_MARK		(1u << 3)
#define LW_METADATA	(1u << 4)

/* Reads len bytes at off into buf; 0, or -1 with errno (short read: EIO). */
typedef int (*lwlog_read_fn)(void *ctx, void *buf, size_t len, uint64_t off);

struct lwlog {
	lwlog_read_fn read;
	void *ctx;
	uint64_t size;		/* bytes of log that may be read */
	uint32_t ss;		/* the log's sector size, bytes */
	uint64_t nr_entries;
	uint64_t next;		/* index of the next entry */
	uint64_t pos;		/* byte offset of the next entry's header */
	uint8_t *hdr;		/* one header block */
};

struct lwlog_entry {
	uint64_t idx;
	uint64_t sector;	/* 512-byte units */
	uint64_t nr;		/* 512-byte units; 0 for flushes, marks */
	uint64_t flags;		/* LW_* */
	uint64_t data_off;	/* byte offset of the data in the log */
	char label[256];	/* a mark's label */
};

/*
 * Open a log of size bytes read through read(ctx, ...).  Returns 0, or -1
 * with a message in err.
 */
int lwlog_open(struct lwlog *l, lwlog_read_fn read, void *ctx, uint64_t size,
	       char *err, size_t errlen);
/* The next entry: 1, 0 at the end, -1 with a message in err. */
int lwlog_next(struct lwlog *l, struct lwlog_entry *e, char *err, size_t errlen);
void lwlog_close(struct lwlog *l);

/* A reader over a file descriptor (ctx: a pointer to the int). */
int lwlog_read_fd(void *ctx, void *buf, size_t len, uint64_t off);

#endif
