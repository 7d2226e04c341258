// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj check and --repair: findings, and repairs that never lose a mark. */
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "testimg.h"

static struct timg T;
static char log_buf[8192];

static void logger(void *ctx, enum chj_check_level lvl, const char *msg)
{
	(void)ctx;
	snprintf(log_buf + strlen(log_buf), sizeof(log_buf) - strlen(log_buf),
		 "%d %s\n", lvl, msg);
}

/* Epochs 1..4 with records, current epoch 5 with marks. */
static void setup(void)
{
	timg_init(&T, 2 + 9 + 40, 1ull << 21, 8);
	log_buf[0] = 0;
	for (int ep = 1; ep <= 4; ep++) {
		for (int i = 0; i < 300; i++)
			timg_mark(&T, 10000 * ep + 2 * i, 1);
		timg_checkpoint(&T);	/* 2 blocks each: seqs 2ep-2, 2ep-1 */
	}
	timg_mark(&T, 50, 10);
}

static void teardown(void)
{
	timg_free(&T);
}

static struct chj_check_result run_check(int repair)
{
	struct chj_check_result r;
	struct chj_error e = { 0 };

	ck_assert_msg(chj_check(T.m, repair, logger, NULL, &r, &e) == 0, "%s", e.msg);
	return r;
}

START_TEST(clean_metadata)
{
	struct chj_check_result r = run_check(0);

	ck_assert_uint_eq(r.problems, 0);
	ck_assert_uint_eq(r.notes, 0);
	r = run_check(1);
	ck_assert_uint_eq(r.problems, 0);
	ck_assert_uint_eq(r.fixed, 0);
	ck_assert_uint_eq(T.sb.seq, 1 + 4);	/* nothing was committed */
	timg_reload(&T);
	ck_assert_uint_eq(T.sb.seq, 1 + 4);
}
END_TEST

START_TEST(torn_other_copy_is_a_note)
{
	struct chj_check_result r;

	((uint8_t *)timg_block(&T, (T.sb.copy + 1) % 2))[300] ^= 1;
	r = run_check(0);
	ck_assert_uint_eq(r.problems, 0);
	ck_assert_uint_eq(r.notes, 1);
	ck_assert_ptr_nonnull(strstr(log_buf, "interrupted commit"));
}
END_TEST

START_TEST(no_superblock_cannot_repair)
{
	struct chj_check_result r;

	memset(T.buf, 0xab, 2 * CHJ_BLOCK_SIZE);
	r = run_check(1);
	ck_assert_uint_eq(r.problems, 1);
	ck_assert_uint_eq(r.fixed, 0);
	ck_assert_ptr_nonnull(strstr(log_buf, "cannot repair"));
}
END_TEST

/* Damage in epoch 2's record (seq 3): history up to it goes, oldest = 3. */
START_TEST(repair_drops_damaged_history)
{
	struct chj_check_result r;
	struct chj_bits before, after;
	struct chj_changes *c = NULL;
	struct chj_error e = { 0 };

	ck_assert_int_eq(timg_changes(&T, 3, &before), 0);
	((uint8_t *)timg_jblock(&T, 3))[1000] ^= 4;
	r = run_check(0);
	ck_assert_uint_eq(r.problems, 1);
	ck_assert_uint_eq(r.fixed, 0);
	ck_assert_int_eq(chj_changes_since(T.m, 1, &c, &e), CHJ_ERR_UNTRUSTED);
	r = run_check(1);
	ck_assert_uint_eq(r.problems, 1);
	ck_assert_uint_eq(r.fixed, 1);
	timg_reload(&T);
	ck_assert_uint_eq(T.sb.oldest_epoch, 3);
	ck_assert_uint_eq(T.sb.journal_head, 4);
	/* Older epochs now say "full backup"; newer ones lose nothing. */
	ck_assert_int_eq(chj_changes_since(T.m, 2, &c, &e), CHJ_ERR_NOT_RETAINED);
	ck_assert_int_eq(timg_changes(&T, 3, &after), 0);
	ck_assert_uint_eq(chj_bits_count(&after), chj_bits_count(&before));
	chj_bits_free(&before);
	chj_bits_free(&after);
	ck_assert_uint_eq(run_check(0).problems, 0);
}
END_TEST

/* Damage in the newest record: nothing intact after it, oldest = current. */
START_TEST(repair_drops_all_history_when_newest_is_damaged)
{
	struct chj_changes *c = NULL;
	struct chj_error e = { 0 };
	struct chj_bits b;

	((struct chj_journal_block *)timg_jblock(&T, 7))->magic = 0;
	ck_assert_uint_eq(run_check(1).fixed, 1);
	timg_reload(&T);
	ck_assert_uint_eq(T.sb.oldest_epoch, 5);
	ck_assert_uint_eq(T.sb.journal_head, T.sb.journal_tail);
	ck_assert_int_eq(chj_changes_since(T.m, 4, &c, &e), CHJ_ERR_NOT_RETAINED);
	ck_assert_int_eq(timg_changes(&T, 5, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 10);	/* current marks kept */
	chj_bits_free(&b);
}
END_TEST

START_TEST(repair_rewrites_damaged_bitmap_all_ones)
{
	struct chj_check_result r;
	struct chj_bits b;
	uint8_t *blk = timg_block(&T, T.sb.bitmap_start);

	blk[2000] ^= 0x80;
	r = run_check(0);
	ck_assert_uint_eq(r.problems, 1);
	r = run_check(1);
	ck_assert_uint_eq(r.fixed, 1);
	ck_assert_int_eq(chj_bitmap_block_state((void *)blk, T.sb.current_epoch), CHJ_BM_CURRENT);
	ck_assert_int_eq(timg_changes(&T, 5, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), CHJ_REGIONS_PER_BLOCK);
	chj_bits_free(&b);
	ck_assert_uint_eq(run_check(0).problems, 0);
}
END_TEST

START_TEST(repair_newer_stamp)
{
	struct chj_bitmap_block *blk = timg_block(&T, T.sb.bitmap_start + 2);

	chj_bitmap_block_fill(blk, 99, 2, T.sb.nr_regions, 0);
	ck_assert_uint_eq(run_check(0).problems, 1);
	ck_assert_ptr_nonnull(strstr(log_buf, "after the current one"));
	ck_assert_uint_eq(run_check(1).fixed, 1);
	ck_assert_uint_eq(chj_le64(blk->epoch), 5);
	ck_assert_uint_eq(blk->bits[100], 0xff);
}
END_TEST

START_TEST(repair_clears_stray_bits)
{
	uint64_t last = T.sb.bitmap_blocks - 1;
	uint64_t n = T.sb.nr_regions - last * CHJ_REGIONS_PER_BLOCK;
	struct chj_bitmap_block *blk = timg_block(&T, T.sb.bitmap_start + last);
	struct chj_bits b;

	timg_mark(&T, T.sb.nr_regions - 1, 1);
	blk->bits[n / 8 + 1] = 0x0f;	/* 4 bits past the end */
	timg_reseal(blk, CHJ_BLOCK_SIZE);
	ck_assert_uint_eq(run_check(0).problems, 1);
	ck_assert_ptr_nonnull(strstr(log_buf, "4 bits set past"));
	ck_assert_uint_eq(run_check(1).fixed, 1);
	ck_assert_uint_eq(blk->bits[n / 8 + 1], 0);
	ck_assert_int_eq(timg_changes(&T, 5, &b), 0);
	ck_assert(chj_bits_test(&b, T.sb.nr_regions - 1));	/* real mark kept */
	ck_assert(chj_bits_test(&b, 55));
	chj_bits_free(&b);
}
END_TEST

START_TEST(repair_needs_writable)
{
	struct chj_meta *m;
	struct chj_check_result r;
	struct chj_error e = { 0 };

	ck_assert_int_eq(chj_meta_open_mem(&m, T.buf, T.len, 0, &e), 0);
	ck_assert_int_eq(chj_check(m, 1, NULL, NULL, &r, &e), CHJ_ERR_INVAL);
	chj_meta_close(m);
}
END_TEST

Suite *suite_check(void)
{
	Suite *s = suite_create("check");
	TCase *tc = tcase_create("check");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, clean_metadata);
	tcase_add_test(tc, torn_other_copy_is_a_note);
	tcase_add_test(tc, no_superblock_cannot_repair);
	tcase_add_test(tc, repair_drops_damaged_history);
	tcase_add_test(tc, repair_drops_all_history_when_newest_is_damaged);
	tcase_add_test(tc, repair_rewrites_damaged_bitmap_all_ones);
	tcase_add_test(tc, repair_newer_stamp);
	tcase_add_test(tc, repair_clears_stray_bits);
	tcase_add_test(tc, repair_needs_writable);
	suite_add_tcase(s, tc);
	return s;
}
