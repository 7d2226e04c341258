// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Bitmap blocks: epoch stamps, damage read as all ones, bit layout. */
#include <string.h>

#include "suites.h"
#include "testimg.h"

static struct timg T;

/* 100000 regions: 4 bitmap blocks, the last one partial. */
static void setup(void)
{
	timg_init(&T, 64, 100000 * 8, 8);
}

static void teardown(void)
{
	timg_free(&T);
}

static uint64_t count_since(uint64_t since, struct chj_changes_info *info)
{
	struct chj_changes *c;
	struct chj_error e = { 0 };
	uint64_t n;

	ck_assert_msg(chj_changes_since(T.m, since, &c, &e) == 0, "%s", e.msg);
	n = chj_changes_info(c)->changed_regions;
	if (info)
		*info = *chj_changes_info(c);
	chj_changes_free(c);
	return n;
}

START_TEST(bit_layout_little_endian)
{
	struct chj_bitmap_block *b;

	timg_mark(&T, 0, 1);
	timg_mark(&T, 9, 1);
	timg_mark(&T, CHJ_REGIONS_PER_BLOCK + 2, 1);
	b = timg_block(&T, T.sb.bitmap_start);
	ck_assert_uint_eq(b->bits[0], 0x01);
	ck_assert_uint_eq(b->bits[1], 0x02);
	ck_assert_uint_eq(chj_le64(b->epoch), 1);
	b = timg_block(&T, T.sb.bitmap_start + 1);
	ck_assert_uint_eq(b->bits[0], 0x04);
	ck_assert_uint_eq(count_since(1, NULL), 3);
}
END_TEST

START_TEST(format_stamps_epoch_zero)
{
	for (uint64_t i = 0; i < T.sb.bitmap_blocks; i++) {
		struct chj_bitmap_block *b = timg_block(&T, T.sb.bitmap_start + i);

		ck_assert_int_eq(chj_bitmap_block_state(b, 1), CHJ_BM_STALE);
		ck_assert_uint_eq(chj_le64(b->epoch), 0);
	}
	ck_assert_uint_eq(count_since(1, NULL), 0);
}
END_TEST

START_TEST(stale_stamp_reads_empty)
{
	timg_mark(&T, 500, 20);
	timg_checkpoint(&T);
	/* Block 0 still says epoch 1 with 20 bits: empty for epoch 2. */
	ck_assert_uint_eq(count_since(2, NULL), 0);
	ck_assert_uint_eq(count_since(1, NULL), 20);
}
END_TEST

START_TEST(zero_block_reads_all_ones)
{
	struct chj_changes_info in;

	memset(timg_block(&T, T.sb.bitmap_start + 2), 0, CHJ_BLOCK_SIZE);
	ck_assert_uint_eq(count_since(1, &in), CHJ_REGIONS_PER_BLOCK);
	ck_assert_uint_eq(in.damaged_bitmap_blocks, 1);
}
END_TEST

START_TEST(damaged_block_reads_all_ones)
{
	struct chj_changes_info in;
	uint8_t *b = timg_block(&T, T.sb.bitmap_start + 3);

	b[3000] ^= 0x40;	/* checksum mismatch in the partial last block */
	ck_assert_uint_eq(count_since(1, &in), 100000 - 3 * CHJ_REGIONS_PER_BLOCK);
	ck_assert_uint_eq(in.damaged_bitmap_blocks, 1);
	b = timg_block(&T, T.sb.bitmap_start);
	((struct chj_bitmap_block *)b)->magic = chj_cpu32(CHJ_JOURNAL_MAGIC);
	timg_reseal(b, CHJ_BLOCK_SIZE);
	ck_assert_uint_eq(count_since(1, &in),
			  100000 - 3 * CHJ_REGIONS_PER_BLOCK + CHJ_REGIONS_PER_BLOCK);
	ck_assert_uint_eq(in.damaged_bitmap_blocks, 2);
}
END_TEST

/* Offline, a newer stamp than the superblock's epoch is damage: all ones. */
START_TEST(newer_stamp_offline_is_damage)
{
	struct chj_changes_info in;
	struct chj_bitmap_block *b = timg_block(&T, T.sb.bitmap_start + 1);

	chj_bitmap_block_fill(b, 2, 1, T.sb.nr_regions, 0);
	ck_assert_uint_eq(count_since(1, &in), CHJ_REGIONS_PER_BLOCK);
	ck_assert_uint_eq(in.damaged_bitmap_blocks, 1);
	ck_assert_uint_eq(in.tries, 1);
}
END_TEST

START_TEST(all_changed_flag)
{
	struct chj_sb sb = T.sb;
	struct chj_error e = { 0 };

	sb.flags |= CHJ_SB_F_ALL_CHANGED;
	ck_assert_int_eq(chj_sb_commit(T.m, &sb, &e), 0);
	ck_assert_uint_eq(count_since(1, NULL), 100000);
}
END_TEST

/* A block filled "all ones" keeps bits past nr_regions clear. */
START_TEST(fill_all_ones_stays_in_range)
{
	struct chj_bitmap_block *b = timg_block(&T, T.sb.bitmap_start + 3);
	uint64_t n = 100000 - 3 * CHJ_REGIONS_PER_BLOCK;

	chj_bitmap_block_fill(b, 1, 3, T.sb.nr_regions, 1);
	ck_assert_uint_eq(b->bits[n / 8 - 1], 0xff);
	ck_assert_uint_eq(b->bits[n / 8] , (1u << (n % 8)) - 1);
	ck_assert_uint_eq(b->bits[n / 8 + 1], 0);
	ck_assert_int_eq(chj_bitmap_block_state(b, 1), CHJ_BM_CURRENT);
	ck_assert_uint_eq(count_since(1, NULL), n);
}
END_TEST

/* The region bitset's range test reads only its range, at word edges too. */
START_TEST(bits_any_edges)
{
	struct chj_bits b;
	struct chj_error e = { 0 };

	ck_assert_int_eq(chj_bits_init(&b, 200, &e), 0);
	ck_assert_int_eq(chj_bits_any(&b, 0, 199), 0);
	chj_bits_set_range(&b, 64, 1);
	chj_bits_set_range(&b, 127, 1);
	ck_assert_int_eq(chj_bits_any(&b, 0, 63), 0);
	ck_assert_int_eq(chj_bits_any(&b, 63, 63), 0);
	ck_assert_int_eq(chj_bits_any(&b, 63, 64), 1);
	ck_assert_int_eq(chj_bits_any(&b, 65, 126), 0);
	ck_assert_int_eq(chj_bits_any(&b, 127, 127), 1);
	ck_assert_int_eq(chj_bits_any(&b, 128, 5000), 0);
	ck_assert_int_eq(chj_bits_any(&b, 100, 50), 0);
	chj_bits_set_range(&b, 130, 70);	/* to the end */
	ck_assert_int_eq(chj_bits_count(&b), 72);
	ck_assert_int_eq(chj_bits_any(&b, 199, UINT64_MAX), 1);
	chj_bits_free(&b);
}
END_TEST

Suite *suite_bitmap(void)
{
	Suite *s = suite_create("bitmap");
	TCase *tc = tcase_create("bitmap");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bit_layout_little_endian);
	tcase_add_test(tc, format_stamps_epoch_zero);
	tcase_add_test(tc, stale_stamp_reads_empty);
	tcase_add_test(tc, zero_block_reads_all_ones);
	tcase_add_test(tc, damaged_block_reads_all_ones);
	tcase_add_test(tc, newer_stamp_offline_is_damage);
	tcase_add_test(tc, all_changed_flag);
	tcase_add_test(tc, fill_all_ones_stays_in_range);
	tcase_add_test(tc, bits_any_edges);
	suite_add_tcase(s, tc);
	return s;
}
