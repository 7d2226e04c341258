// SPDX-License-Identifier: GPL-2.0 OR MIT
/* XFS superblock parsing and inode-number arithmetic. */
#include <string.h>

#include "suites.h"
#include "xfs.h"

static unsigned char sb[512];

static void put16(unsigned off, uint16_t v) { sb[off] = v >> 8; sb[off + 1] = v & 0xff; }
static void put32(unsigned off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		sb[off + i] = v >> (24 - 8 * i);
}
static void put64(unsigned off, uint64_t v) { put32(off, v >> 32); put32(off + 4, (uint32_t)v); }

/* 4 AGs of 25600 blocks of 4 KiB, 512-byte inodes, log at AG 2 block 10. */
static void make_sb(void)
{
	memset(sb, 0, sizeof(sb));
	put32(0, 0x58465342);
	put32(4, 4096);
	put64(8, 102400);
	put64(48, (2ull << 15) | 10);	/* agblklog 15 */
	put32(84, 25600);
	put32(88, 4);
	put32(96, 16384);
	put16(100, 0xb4a5);		/* version 5 + feature bits */
	put16(104, 512);
	put16(106, 8);
	sb[120] = 12;			/* blocklog */
	sb[123] = 3;			/* inopblog */
	sb[124] = 15;			/* agblklog */
	put32(212, 0x2 | 0x4);		/* rmapbt, reflink */
}

START_TEST(parses_geometry)
{
	struct xfs_geo g;

	make_sb();
	ck_assert_ptr_null(xfs_parse_sb(sb, &g));
	ck_assert_uint_eq(g.bs, 4096);
	ck_assert_uint_eq(g.isize, 512);
	ck_assert_uint_eq(g.fs_bytes, 102400ull * 4096);
	ck_assert_uint_eq(g.log_start, (2ull * 25600 + 10) * 4096);
	ck_assert_uint_eq(g.log_bytes, 16384ull * 4096);
	ck_assert(g.crc && g.rmapbt && g.reflink);
}
END_TEST

/*
 * 2^48 + 1 blocks of 64 KiB: dblocks * blocksize wraps to 64 KiB, and
 * every change past it was "outside the filesystem".
 */
START_TEST(refuses_a_size_that_wraps)
{
	struct xfs_geo g;

	make_sb();
	put32(4, 65536);
	sb[120] = 16;
	put16(106, 128);
	sb[123] = 7;
	put64(8, (1ull << 48) + 1);
	put32(84, 0x7fffffff);
	sb[124] = 31;
	put32(88, (1u << 17) + 1);
	put64(48, 10);			/* log at AG 0 block 10 */
	ck_assert_ptr_nonnull(xfs_parse_sb(sb, &g));
}
END_TEST

START_TEST(refuses_other_devices_and_nonsense)
{
	struct xfs_geo g;

	make_sb();
	put64(16, 1000);		/* realtime blocks */
	ck_assert_ptr_nonnull(strstr(xfs_parse_sb(sb, &g), "realtime"));
	make_sb();
	put64(48, 0);			/* external log */
	ck_assert_ptr_nonnull(strstr(xfs_parse_sb(sb, &g), "another device"));
	make_sb();
	put32(0, 0);
	ck_assert_ptr_nonnull(xfs_parse_sb(sb, &g));
	make_sb();
	sb[124] = 20;			/* agblklog inconsistent with agblocks */
	ck_assert_ptr_nonnull(xfs_parse_sb(sb, &g));
	make_sb();
	put16(106, 4);			/* inodes per block wrong */
	ck_assert_ptr_nonnull(xfs_parse_sb(sb, &g));
	make_sb();
	put64(48, (7ull << 15) | 10);	/* log in a missing AG */
	ck_assert_ptr_nonnull(xfs_parse_sb(sb, &g));
}
END_TEST

START_TEST(inode_numbers_and_bytes)
{
	struct xfs_geo g;
	/* AG 1, block 100, slot 5. */
	uint64_t ino = (1ull << 18) | (100 << 3) | 5;

	make_sb();
	ck_assert_ptr_null(xfs_parse_sb(sb, &g));
	ck_assert_uint_eq(xfs_ino_to_byte(&g, ino), (25600ull + 100) * 4096 + 5 * 512);
	ck_assert_uint_eq(xfs_byte_to_ino(&g, (25600ull + 100) * 4096 + 5 * 512 + 17), ino);
	ck_assert_uint_eq(xfs_ino_to_byte(&g, 128), 16 * 4096);
	ck_assert_uint_eq(xfs_byte_to_ino(&g, 16 * 4096), 128);
	/* Past the last AG, or past an AG's blocks: no location. */
	ck_assert_uint_eq(xfs_ino_to_byte(&g, 4ull << 18), UINT64_MAX);
	ck_assert_uint_eq(xfs_ino_to_byte(&g, (25600ull << 3)), UINT64_MAX);
	for (uint64_t b = 0; b < 102400ull * 4096; b += 7777777)
		ck_assert_uint_eq(xfs_ino_to_byte(&g, xfs_byte_to_ino(&g, b)), b - b % 512);
}
END_TEST

Suite *suite_xfs(void)
{
	Suite *s = suite_create("xfs");
	TCase *t = tcase_create("geometry");

	tcase_add_test(t, parses_geometry);
	tcase_add_test(t, refuses_other_devices_and_nonsense);
	tcase_add_test(t, refuses_a_size_that_wraps);
	tcase_add_test(t, inode_numbers_and_bytes);
	suite_add_tcase(s, t);
	return s;
}
