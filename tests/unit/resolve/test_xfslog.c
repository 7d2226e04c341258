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
 * are the caller's.  Closes fd.
 */
static int scan_fd(int fd, size_t logsz, int crc, const unsigned char *uuid,
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
	rs_add(&ch, 0, logsz);		/* the whole log changed */
	rs_normalize(&ch);
	rc = xlog_scan(&r, &g, &ch, out);
	snprintf(why, whylen, "%s", r.err);
	free(out->entry_inos);
	u64set_free(&out->entry_seen);
	rs_free(&ch);
	close(fd);
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

Suite *suite_xfslog(void)
{
	Suite *s = suite_create("xfslog");
	TCase *t = tcase_create("bound");
	TCase *live = tcase_create("live");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, header_shaped_blocks_cost_a_bounded_read);
	tcase_add_test(t, small_false_headers_are_all_tried);
	suite_add_tcase(s, t);
	tcase_add_test(live, head_moved_a_lap_during_the_scan);
	suite_add_tcase(s, live);
	return s;
}
