// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The XFS log scan's work bound (xfslog.c).  A crafted log whose every
 * 512-byte block is shaped like a record header (magic, its own block in
 * the LSN, the filesystem's UUID) claiming a 256 KiB record, none with a
 * valid CRC: before the bound, each of them was read whole and CRC-checked
 * (twice: looking for the head, then for the run's first record), 520
 * times the log's size for this one (2 GiB of reads for a 4 MiB log;
 * 1 TiB for a 2 GiB log).  Now the work spent on blocks that turn out not
 * to be records is bounded by twice the log plus a few records, and past
 * it the scan ends in exit 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libchj.h"
#include "suites.h"
#include "xfs.h"

#define LOG_BYTES	(4u << 20)
#define BB		512u

static unsigned char img[LOG_BYTES];

static void p32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static void p64(unsigned char *p, uint64_t v)
{
	p32(p, v >> 32);
	p32(p + 4, (uint32_t)v);
}

/* Every block a record header claiming len bytes (size: the log buffer,
 * which sets the extension headers). */
static void fake_headers(uint32_t len, uint32_t size, uint32_t version)
{
	memset(img, 0, sizeof(img));
	for (uint32_t b = 0; b < LOG_BYTES / BB; b++) {
		unsigned char *h = img + (size_t)b * BB;

		p32(h, 0xfeedbabeu);
		p32(h + 4, 5);				/* cycle */
		p32(h + 8, version);
		p32(h + 12, len);
		p64(h + 16, (5ull << 32) | b);		/* lsn: its own block */
		p64(h + 24, 5ull << 32);		/* tail */
		p32(h + 32, 0x12345678);		/* a CRC that never matches */
		p32(h + 300, 1);			/* little-endian items */
		p32(h + 320, size);
	}
}

/*
 * Scan the log of logsz bytes at the start of fd (a memfd of 256 MiB) as
 * the log of a small filesystem, the whole log changed; out's callbacks
 * are the caller's, and so is out->entry_inos (and entry_seen) to free.
 * Closes fd.
 */
static size_t changed_bytes;	/* of the log, from its start; 0: all */

static int scan_fd_keep(int fd, size_t logsz, int crc, const unsigned char *uuid,
			struct xlog_out *out, char *why, size_t whylen)
{
	static struct resolver r;
	struct xfs_geo g;
	struct rangeset ch;
	int rc;

	ck_assert_int_eq(ftruncate(fd, 256ll << 20), 0);
	memset(&r, 0, sizeof(r));
	r.dev_fd = fd;
	snprintf(r.dev_path, sizeof(r.dev_path), "memfd");
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
	g.fs_bytes = g.dblocks * g.bs;
	g.log_start = 0;
	g.log_bytes = logsz;
	g.crc = crc;
	if (uuid)
		memcpy(g.uuid, uuid, sizeof(g.uuid));
	rs_init(&ch);
	rs_add(&ch, 0, changed_bytes ? changed_bytes : logsz);	/* default: the whole log */
	rs_normalize(&ch);
	rc = xlog_scan(&r, &g, &ch, out);
	snprintf(why, whylen, "%s", r.err);
	rs_free(&ch);
	close(fd);
	return rc;
}

/* The same, out->entry_inos freed. */
static int scan_fd(int fd, size_t logsz, int crc, const unsigned char *uuid,
		   struct xlog_out *out, char *why, size_t whylen)
{
	int rc = scan_fd_keep(fd, logsz, crc, uuid, out, why, whylen);

	free(out->entry_inos);
	u64set_free(&out->entry_seen);
	return rc;
}

static int scan_log(struct xlog_out *out, char *why, size_t whylen)
{
	int fd = memfd_create("xfslog", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
	memset(out, 0, sizeof(*out));
	return scan_fd(fd, LOG_BYTES, 1, NULL, out, why, whylen);
}

START_TEST(header_shaped_blocks_cost_a_bounded_read)
{
	struct xlog_out out;
	char why[1024];
	int rc;

	/* 8192 headers, each claiming 256 KiB (8 headers' worth of cycle
	 * words): 2.2 GB of reads without the bound. */
	fake_headers(256u * 1024, 256u * 1024, 2);
	rc = scan_log(&out, why, sizeof(why));
	ck_assert_int_eq(rc, RX_FULL_SCAN);
	ck_assert_msg(strstr(why, "header-shaped"), "why: %s", why);
	ck_assert_msg(out.read_bytes <= 3ull * LOG_BYTES,
		      "%llu bytes read for a log of %u", (unsigned long long)out.read_bytes,
		      LOG_BYTES);
}
END_TEST

/*
 * The bound is relative to the log: headers that claim little (one block
 * of data each, as a log's zeroed tail can look) are all tried, and the
 * scan ends as before: nothing readable, exit 3 for that reason.
 */
START_TEST(small_false_headers_are_all_tried)
{
	struct xlog_out out;
	char why[1024];
	int rc;

	fake_headers(BB, 32768, 2);
	rc = scan_log(&out, why, sizeof(why));
	ck_assert_int_eq(rc, RX_FULL_SCAN);
	ck_assert_msg(strstr(why, "no readable record"), "why: %s", why);
	ck_assert_uint_eq(out.read_bytes, 2ull * LOG_BYTES);
}
END_TEST

/*
 * A changed log with no record in it (all zeros): no candidate header,
 * so the candidate array was never allocated, and it was sorted as
 * qsort(NULL, 0, ...), undefined behaviour that UBSan (the asan variant
 * of these tests) stops on.  The scan must end cleanly: nothing logged,
 * nothing to name (header-shaped blocks that are not records are exit 3,
 * above).
 */
START_TEST(a_zeroed_log_sorts_no_candidates)
{
	struct xlog_out out;
	char why[1024];

	memset(img, 0, sizeof(img));
	ck_assert_int_eq(scan_log(&out, why, sizeof(why)), RX_OK);
	ck_assert_uint_eq(out.records, 0);
	ck_assert_uint_eq(out.transactions, 0);
}
END_TEST

/*
 * A live log: if the head went a lap while the records were read, what was
 * read may mix laps, and the scan must end in exit 3 (issue 14).  The log
 * is the fuzz seed made from a real filesystem (fuzz-seeds.sh: a flags
 * byte, then the log); the seam rewrites the head record's first block
 * between the scan and its re-read of the head.
 */
static int seam_fd;
static int seam_zero;
static unsigned seam_calls;

static void move_head(void *ctx, uint64_t head)
{
	unsigned char blk[BB];

	(void)ctx;
	seam_calls++;
	ck_assert_int_eq(pread(seam_fd, blk, BB, (off_t)head), BB);
	if (seam_zero)
		memset(blk, 0, BB);	/* overwritten by a later lap */
	ck_assert_int_eq(pwrite(seam_fd, blk, BB, (off_t)head), BB);
}

static void on_inode(void *ctx, uint64_t ino, unsigned reasons)
{
	(void)ctx;
	(void)ino;
	(void)reasons;
}

static void on_range(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	(void)start;
	(void)len;
}

static int scan_seed(int zero, struct xlog_out *out, char *why, size_t whylen)
{
	static unsigned char seed[1 << 20];
	FILE *f = fopen("fuzz/seeds/xfslog/live", "rb");
	size_t n, logsz;

	ck_assert_ptr_nonnull(f);
	n = fread(seed, 1, sizeof(seed), f);
	fclose(f);
	ck_assert_uint_gt(n, 1 + 4096);
	logsz = (n - 1) / BB * BB;
	seam_fd = memfd_create("xfslog", MFD_CLOEXEC);
	ck_assert_int_ge(seam_fd, 0);
	ck_assert_int_eq(write(seam_fd, seed + 1, logsz), (ssize_t)logsz);
	memset(out, 0, sizeof(*out));
	out->inode = on_inode;
	out->range = on_range;
	out->before_head_reread = move_head;
	seam_zero = zero;
	seam_calls = 0;
	/* The UUID: the first record's. */
	return scan_fd(seam_fd, logsz, seed[0] & 1, seed + 1 + 304, out, why, whylen);
}

START_TEST(head_moved_a_lap_during_the_scan)
{
	struct xlog_out out;
	char why[1024];

	/* The control: the head rewritten as it was: a good scan. */
	ck_assert_int_eq(scan_seed(0, &out, why, sizeof(why)), RX_OK);
	ck_assert_uint_eq(seam_calls, 1);
	ck_assert_uint_gt(out.records, 0);
	ck_assert_uint_gt(out.transactions, 0);
	/* Overwritten meanwhile: exit 3, not the records read taken whole. */
	ck_assert_int_eq(scan_seed(1, &out, why, sizeof(why)), RX_FULL_SCAN);
	ck_assert_uint_eq(seam_calls, 1);
	ck_assert_msg(strstr(why, "lap"), "why: %s", why);
}
END_TEST

/*
 * Short-form directories in the XFS log (issue 14): an inode item logged
 * with XFS_ILOG_DDATA carries the directory's data fork, whose entries
 * pack 4- or 8-byte inode numbers at any offset, so the scan takes a
 * 32-bit and a 64-bit value at every byte of it.  Before the dedup every
 * transaction re-logging the same directory added its ~2 values per byte
 * again.  The log below is written as XFS writes it: v2 records of up to
 * REC_DATA bytes (their cycle words stamped, CRC'd, the filesystem's UUID),
 * each checkpoint a start op, its transaction header, its items and a
 * commit op, regions split across records with the continuation flags.
 */
#define REC_DATA	4096u		/* record data bytes at most (8 blocks) */
#define REC_HDR		328u		/* struct xlog_rec_header, x86-64 */
#define SF_TRANS	128		/* transactions re-logging the directories */
#define SF_ENTRIES	10		/* entries of each directory */
#define SF_DIR_A	129ull		/* 4-byte entry numbers, parent the root */
#define SF_DIR_B	(7ull << 32 | 131)	/* 8-byte numbers, parent dir A */

#define OP_START	0x01		/* XLOG_START_TRANS */
#define OP_COMMIT	0x02		/* XLOG_COMMIT_TRANS */
#define OP_CONTINUE	0x04		/* XLOG_CONTINUE_TRANS */
#define OP_WAS_CONT	0x08		/* XLOG_WAS_CONT_TRANS */
#define OP_END		0x10		/* XLOG_END_TRANS */

static const unsigned char sf_uuid[16] = {
	0x3b, 0x5e, 0x41, 0x0c, 0x91, 0x7a, 0x4f, 0x02,
	0xa6, 0x58, 0x1d, 0xe3, 0x77, 0x20, 0xc4, 0x9f,
};

/* A log being written into img: the record being filled and where. */
static struct lw {
	uint64_t b, prev;		/* its header block; the previous one's */
	unsigned char data[REC_DATA];
	size_t len;
	uint32_t nops;
	unsigned records;
	unsigned split_sf;		/* data-fork regions split across records */
} lw;

static void l16(unsigned char *p, uint16_t v)
{
	p[0] = v; p[1] = v >> 8;
}

static void l32(unsigned char *p, uint32_t v)
{
	l16(p, (uint16_t)v);
	l16(p + 2, v >> 16);
}

static void l64(unsigned char *p, uint64_t v)
{
	l32(p, (uint32_t)v);
	l32(p + 4, v >> 32);
}

/* Write the record being filled (cycle 1, the tail at block 0). */
static void rec_flush(void)
{
	static unsigned char crcbuf[REC_HDR + REC_DATA];
	uint32_t len = (lw.len + BB - 1) / BB * BB;	/* v2: padded to a block */
	unsigned char *h = img + lw.b * BB, *d = h + BB;

	if (!lw.nops)
		return;
	ck_assert_uint_le((lw.b + 1) * BB + len, LOG_BYTES);
	memset(h, 0, BB + len);
	p32(h, 0xfeedbabeu);
	p32(h + 4, 1);				/* cycle */
	p32(h + 8, 2);				/* version 2 */
	p32(h + 12, len);
	p64(h + 16, 1ull << 32 | lw.b);		/* lsn */
	p64(h + 24, 1ull << 32);		/* tail: block 0 */
	p32(h + 36, (uint32_t)lw.prev);
	p32(h + 40, lw.nops);
	p32(h + 300, 1);			/* little-endian items */
	memcpy(h + 304, sf_uuid, sizeof(sf_uuid));
	p32(h + 320, 32768);			/* the log buffer size */
	memcpy(d, lw.data, lw.len);
	/* The first word of each data block into the header, the cycle in
	 * its place (xlog_pack_data), then the CRC over both as written. */
	for (uint32_t i = 0; i < len / BB; i++) {
		memcpy(h + 44 + 4 * i, d + i * BB, 4);
		p32(d + i * BB, 1);
	}
	memcpy(crcbuf, h, REC_HDR);
	memcpy(crcbuf + REC_HDR, d, len);
	l32(h + 32, chj_crc32c(crcbuf, REC_HDR + len));
	lw.prev = lw.b;
	lw.b += 1 + len / BB;
	lw.len = 0;
	lw.nops = 0;
	lw.records++;
}

/* One op of transaction tid: split across records when it does not fit
 * (the first part XLOG_CONTINUE_TRANS, the last XLOG_WAS_CONT_TRANS |
 * XLOG_END_TRANS, as xlog_write_partial does).  Returns the parts. */
static unsigned add_op(uint32_t tid, unsigned flags, const unsigned char *p, size_t n)
{
	size_t done = 0;
	unsigned parts = 0;

	do {
		size_t room = REC_DATA - lw.len, take;
		unsigned f = flags;
		unsigned char *o;

		if (room < 12 + (n ? 16 : 0)) {
			rec_flush();
			continue;
		}
		take = n - done < room - 12 ? n - done : room - 12;
		if (parts)
			f |= OP_WAS_CONT | (done + take < n ? OP_CONTINUE : OP_END);
		else if (take < n)
			f |= OP_CONTINUE;
		o = lw.data + lw.len;
		p32(o, tid);
		p32(o + 4, (uint32_t)take);
		o[8] = 0x69;				/* XFS_TRANSACTION */
		o[9] = f;
		o[10] = o[11] = 0;
		if (take)
			memcpy(o + 12, p + done, take);
		lw.len += 12 + take;
		lw.nops++;
		done += take;
		parts++;
	} while (done < n);
	return parts;
}

/*
 * The data fork of a short-form directory (xfs_dir2_sf_hdr, then each
 * entry's namelen, offset, name, ftype and inode number, big-endian), as
 * logged: rounded up to 4 bytes.  Its inode numbers are 8 bytes when i8.
 */
static size_t sf_dir(unsigned char *p, uint64_t parent, const uint64_t *ino, int i8)
{
	unsigned isz = i8 ? 8 : 4;
	size_t o = 0;

	p[o++] = SF_ENTRIES;			/* count */
	p[o++] = i8 ? SF_ENTRIES : 0;		/* i8count */
	if (i8)
		p64(p + o, parent);
	else
		p32(p + o, (uint32_t)parent);
	o += isz;
	for (unsigned k = 0; k < SF_ENTRIES; k++) {
		p[o++] = 6;				/* namelen */
		p[o++] = (0x60 + 24 * k) >> 8;		/* offset in a data block */
		p[o++] = (uint8_t)(0x60 + 24 * k);
		memcpy(p + o, "entry", 5);		/* name */
		p[o + 5] = 'a' + k;
		o += 6;
		p[o++] = 1;				/* ftype: regular file */
		if (i8)
			p64(p + o, ino[k]);
		else
			p32(p + o, (uint32_t)ino[k]);
		o += isz;
	}
	while (o % 4)
		p[o++] = 0;
	return o;
}

/* An inode item: format (xfs_inode_log_format), core, data fork. */
static void log_inode(uint32_t tid, uint64_t ino, uint32_t fields, const unsigned char *fork,
		      size_t len)
{
	unsigned char f[56], core[176];

	memset(f, 0, sizeof(f));
	l16(f, 0x123b);				/* XFS_LI_INODE */
	l16(f + 2, 3);				/* ilf_size: 3 regions */
	l32(f + 4, fields);
	l16(f + 10, (uint16_t)len);		/* ilf_dsize */
	l64(f + 16, ino);
	memset(core, 0, sizeof(core));		/* xfs_log_dinode, v3 */
	l16(core, 0x494e);			/* "IN" */
	l16(core + 2, 040755);
	core[4] = 3;				/* di_version */
	core[5] = 1;				/* di_format: local */
	add_op(tid, 0, f, sizeof(f));
	add_op(tid, 0, core, sizeof(core));
	if (add_op(tid, 0, fork, len) > 1)
		lw.split_sf++;
}

static uint64_t sf_ino_a[SF_ENTRIES], sf_ino_b[SF_ENTRIES];
static unsigned char sf_fork_a[256], sf_fork_b[256];
static size_t sf_len_a, sf_len_b;

/* ntrans checkpoints, each logging both directories with fields. */
static void sf_log(int ntrans, uint32_t fields)
{
	memset(img, 0, sizeof(img));
	memset(&lw, 0, sizeof(lw));
	for (unsigned k = 0; k < SF_ENTRIES; k++) {
		sf_ino_a[k] = 133 + 4093 * k;
		sf_ino_b[k] = (7ull << 32) + 777 + 1009 * k;
	}
	sf_len_a = sf_dir(sf_fork_a, 128, sf_ino_a, 0);
	sf_len_b = sf_dir(sf_fork_b, SF_DIR_A, sf_ino_b, 1);
	for (int t = 0; t < ntrans; t++) {
		uint32_t tid = 0x5f000000u + (uint32_t)t;
		unsigned char th[16];

		l32(th, 0x5452414eu);			/* XFS_TRANS_HEADER_MAGIC */
		l32(th + 4, 40);			/* XFS_TRANS_CHECKPOINT */
		l32(th + 8, tid);
		l32(th + 12, 2);			/* th_num_items */
		add_op(tid, OP_START, NULL, 0);
		add_op(tid, 0, th, sizeof(th));
		log_inode(tid, SF_DIR_A, fields, sf_fork_a, sf_len_a);
		log_inode(tid, SF_DIR_B, fields, sf_fork_b, sf_len_b);
		add_op(tid, OP_COMMIT, NULL, 0);
	}
	rec_flush();
}

static uint64_t sf_dir_inodes;

static void sf_on_inode(void *ctx, uint64_t ino, unsigned reasons)
{
	(void)ctx;
	(void)reasons;
	if (ino == SF_DIR_A || ino == SF_DIR_B)
		sf_dir_inodes++;
}

static int sf_scan(struct xlog_out *out, char *why, size_t whylen)
{
	int fd = memfd_create("xfslog", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
	memset(out, 0, sizeof(*out));
	out->inode = sf_on_inode;
	out->range = on_range;
	sf_dir_inodes = 0;
	return scan_fd_keep(fd, LOG_BYTES, 1, sf_uuid, out, why, whylen);
}

static unsigned times_reported(const struct xlog_out *out, uint64_t ino)
{
	unsigned n = 0;

	for (size_t i = 0; i < out->nentry_inos; i++)
		n += out->entry_inos[i] == ino;
	return n;
}

/*
 * 128 checkpoints each re-log the same two short-form directories (10
 * entries each, one with 4-byte inode numbers and one with 8-byte ones).
 * Each entry's inode number, and each parent, must come out exactly once,
 * and the numbers in all at most two per byte of the two data forks (the
 * distinct data logged), not per byte of every transaction: without the
 * dedup (push_val's per-transaction set, emit_trans's over the log) each
 * number came out 128 times and the total was 128 times the bound.  The
 * control, the same log with XFS_ILOG_DDATA cleared, reports none of these
 * numbers: the short-form path is what found them.
 */
START_TEST(short_form_directory_entries_once_each)
{
	struct xlog_out out;
	uint64_t want[2 + 2 * SF_ENTRIES];
	size_t nwant = 0, bound;
	char why[1024];

	sf_log(SF_TRANS, 0x001 | 0x002);	/* XFS_ILOG_CORE | XFS_ILOG_DDATA */
	ck_assert_uint_gt(lw.records, 10);
	ck_assert_uint_gt(lw.split_sf, 0);	/* a data fork across records */
	bound = 2 * (sf_len_a + sf_len_b);
	ck_assert_msg(sf_scan(&out, why, sizeof(why)) == RX_OK, "why: %s", why);
	ck_assert_uint_eq(out.records, lw.records);
	ck_assert_uint_eq(out.transactions, SF_TRANS);
	ck_assert_uint_eq(sf_dir_inodes, 2 * SF_TRANS);
	want[nwant++] = 128;
	want[nwant++] = SF_DIR_A;
	for (unsigned k = 0; k < SF_ENTRIES; k++) {
		want[nwant++] = sf_ino_a[k];
		want[nwant++] = sf_ino_b[k];
	}
	for (size_t i = 0; i < nwant; i++)
		ck_assert_msg(times_reported(&out, want[i]) == 1,
			      "inode %llu reported %u times (%zu numbers in all, bound %zu)",
			      (unsigned long long)want[i], times_reported(&out, want[i]),
			      out.nentry_inos, bound);
	ck_assert_msg(out.nentry_inos <= bound, "%zu numbers from %zu bytes of directories",
		      out.nentry_inos, sf_len_a + sf_len_b);
	free(out.entry_inos);
	u64set_free(&out.entry_seen);

	/* The control: the same checkpoints, the data forks not flagged. */
	sf_log(SF_TRANS, 0x001);
	ck_assert_msg(sf_scan(&out, why, sizeof(why)) == RX_OK, "why: %s", why);
	ck_assert_uint_eq(out.transactions, SF_TRANS);
	ck_assert_uint_eq(sf_dir_inodes, 2 * SF_TRANS);
	for (size_t i = 0; i < nwant; i++)
		ck_assert_uint_eq(times_reported(&out, want[i]), 0);
	ck_assert_uint_eq(out.nentry_inos, 0);
	free(out.entry_inos);
	u64set_free(&out.entry_seen);
}
END_TEST

static uint64_t lap_now;

static int lap_now_head(void *ctx, uint64_t *lsn)
{
	(void)ctx;
	*lsn = lap_now;
	return 0;
}

/*
 * The change map was read with the log's head right after the records it
 * marks (blocks 0 to end, the run); the kernel went on writing into no
 * mark.  Once the head went bbs - end blocks from there, it is back at
 * the run's start and writes over it: the scan then reads a later lap
 * where the marked records were, as well-formed and in sequence (the
 * churn16 miss of host-check's live log: exit 0, round 2's records gone).
 * The log here is the same in every case, as a later lap would look to
 * the scan: what differs is only where the head is after the scan.  1024
 * blocks short of the run: the answer stands (exit 0, complete); at the
 * run's start: exit 3 naming the log.  Without the check (before it) the
 * second case answered exit 0, complete, with these records only.
 */
START_TEST(a_head_gone_round_since_the_map_is_a_full_scan)
{
	const uint64_t bbs = LOG_BYTES / BB;
	struct xlog_out out;
	char why[1024];
	uint64_t end;
	int rc;

	sf_log(4, 0x001);
	end = lw.b;
	ck_assert_uint_gt(end, 4);
	changed_bytes = end * BB;
	/* Less than round, by more than a record (the head's own record
	 * may be on disk already): the records read are those the map marks. */
	lap_now = 1ull << 32 | (bbs - 1024);
	memset(&out, 0, sizeof(out));
	out.inode = sf_on_inode;
	out.range = on_range;
	out.map_known = 1;
	out.map_head = 1ull << 32 | end;
	out.map_tail = 1ull << 32;
	out.now_head = lap_now_head;
	{
		int fd = memfd_create("xfslog", MFD_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
		rc = scan_fd(fd, LOG_BYTES, 1, sf_uuid, &out, why, sizeof(why));
	}
	ck_assert_msg(rc == RX_OK, "why: %s", why);
	ck_assert_int_eq(out.complete, 1);
	ck_assert_uint_eq(out.transactions, 4);
	/* Round to the run's start (cycle 2, block 0): a later lap may be
	 * what was read there. */
	lap_now = 2ull << 32;
	out.transactions = 0;
	{
		int fd = memfd_create("xfslog", MFD_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
		rc = scan_fd(fd, LOG_BYTES, 1, sf_uuid, &out, why, sizeof(why));
	}
	ck_assert_msg(rc == RX_FULL_SCAN && strstr(why, "XFS log") && strstr(why, "went round"),
		      "rc %d, why: %s", rc, why);
	/* The head gone back (another filesystem, a restored image): exit 3. */
	lap_now = 1ull << 32 | (end - 1);
	{
		int fd = memfd_create("xfslog", MFD_CLOEXEC);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, img, sizeof(img)), (ssize_t)sizeof(img));
		rc = scan_fd(fd, LOG_BYTES, 1, sf_uuid, &out, why, sizeof(why));
	}
	ck_assert_msg(rc == RX_FULL_SCAN && strstr(why, "went back"), "rc %d, why: %s", rc, why);
	changed_bytes = 0;
}
END_TEST

Suite *suite_xfslog(void)
{
	Suite *s = suite_create("xfslog");
	TCase *t = tcase_create("bound");
	TCase *live = tcase_create("live");
	TCase *sf = tcase_create("shortform");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, header_shaped_blocks_cost_a_bounded_read);
	tcase_add_test(t, small_false_headers_are_all_tried);
	tcase_add_test(t, a_zeroed_log_sorts_no_candidates);
	suite_add_tcase(s, t);
	tcase_add_test(live, head_moved_a_lap_during_the_scan);
	tcase_add_test(live, a_head_gone_round_since_the_map_is_a_full_scan);
	suite_add_tcase(s, live);
	tcase_add_test(sf, short_form_directory_entries_once_each);
	suite_add_tcase(s, sf);
	return s;
}
