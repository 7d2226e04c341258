// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the XFS log scan (resolve/xfslog.c): record headers
 * found in changed log blocks, the head, the records and the transactions
 * in them.  Input: one byte of flags (bit 0: v5 log with CRCs; bits 1-7:
 * which eighth of the log is "changed", 0 = all), then the log itself (an
 * in-memory device, the log at its start).  Oracles beyond the sanitizers:
 * inodes and ranges reported are counted (bounded by the log's size), and
 * a scan that reports success names ranges inside the filesystem; the
 * directory-entry inode numbers are each reported once, at most two per
 * byte of log.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xfs.h"

static uint64_t inos, ranges, fs_bytes;

static void on_inode(void *ctx, uint64_t ino, unsigned reasons)
{
	(void)ctx;
	(void)ino;
	(void)reasons;
	inos++;
}

static void on_range(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	(void)start;
	(void)len;
	ranges++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;

	return (p > q) - (p < q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct resolver r;
	struct xfs_geo g;
	struct rangeset ch;
	struct xlog_out out;
	size_t logsz;
	int fd;

	if (size < 1 + 4096)
		return 0;
	logsz = (size - 1) / 512 * 512;
	fd = memfd_create("xfslog", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	/* The filesystem: 4 AGs of 16384 blocks of 4 KiB; the log at 0. */
	if (write(fd, data + 1, logsz) != (ssize_t)logsz || ftruncate(fd, 256ll << 20)) {
		close(fd);
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.dev_fd = fd;
	r.dev_bytes = 256ull << 20;
	r.dev_lbs = 512;
	memset(&g, 0, sizeof(g));
	g.bs = 4096;
	g.agblocks = 16384;
	g.agcount = 4;
	g.agblklog = 14;
	g.inopblog = 3;
	g.isize = 512;
	g.dblocks = 65536;
	fs_bytes = g.fs_bytes = g.dblocks * g.bs;
	g.log_start = 0;
	g.log_bytes = logsz;
	g.crc = data[0] & 1;
	/* The filesystem's UUID: the one in the log's first block (records
	 * of another UUID are not this log's; with an all-zero UUID the
	 * seed's records were never parsed). */
	memcpy(g.uuid, data + 1 + 304, sizeof(g.uuid));
	rs_init(&ch);
	if (data[0] >> 1) {
		uint64_t part = logsz / 8 / 512 * 512;

		rs_add(&ch, ((data[0] >> 1) & 7) * part, part ? part : 512);
	} else {
		rs_add(&ch, 0, logsz);
	}
	rs_normalize(&ch);
	memset(&out, 0, sizeof(out));
	out.inode = on_inode;
	out.range = on_range;
	inos = ranges = 0;
	xlog_scan(&r, &g, &ch, &out);
	/* Each directory-entry inode number once over the log (short-form
	 * scanning tries two values per byte: without the dedup, a log of
	 * short-form directories gave a value per byte per transaction). */
	if (out.nentry_inos > 1) {
		qsort(out.entry_inos, out.nentry_inos, sizeof(*out.entry_inos), cmp_u64);
		for (size_t i = 1; i < out.nentry_inos; i++)
			if (out.entry_inos[i] == out.entry_inos[i - 1])
				abort();
	}
	if (out.nentry_inos > 2 * logsz)
		abort();
	free(out.entry_inos);
	u64set_free(&out.entry_seen);
	rs_free(&ch);
	close(fd);
	return 0;
}
