// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Journal records: what the kernel writes is read back; every defect is caught. */
#include <string.h>

#include "suites.h"
#include "testimg.h"

static struct timg T;

/* 1 GiB origin at 4 KiB: 262144 regions; 40 journal blocks. */
static void setup(void)
{
	timg_init(&T, 2 + 9 + 40, 1ull << 21, 8);
}

static void teardown(void)
{
	timg_free(&T);
}

/* Epoch 1: regions 10..19 and 100; epoch 2: 600 extents (3 blocks). */
static void two_epochs(void)
{
	timg_mark(&T, 10, 10);
	timg_mark(&T, 100, 1);
	timg_checkpoint(&T);
	for (uint64_t i = 0; i < 600; i++)
		timg_mark(&T, 1000 + 2 * i, 1);
	timg_checkpoint(&T);
}

static int changes_rc(uint64_t since, char *msg)
{
	struct chj_changes *c = NULL;
	struct chj_error e = { 0 };
	int rc = chj_changes_since(T.m, since, &c, &e);

	if (msg)
		strcpy(msg, rc ? e.msg : "");
	chj_changes_free(c);
	return rc;
}

START_TEST(records_round_trip)
{
	struct chj_bits b;

	two_epochs();
	ck_assert_uint_eq(T.sb.current_epoch, 3);
	ck_assert_uint_eq(T.sb.journal_tail, 1 + 3);
	ck_assert_uint_eq(chj_le32(timg_jblock(&T, 1)->flags), CHJ_JF_FIRST);
	ck_assert_uint_eq(chj_le32(timg_jblock(&T, 2)->flags), 0);
	ck_assert_uint_eq(chj_le32(timg_jblock(&T, 3)->flags), CHJ_JF_LAST);
	ck_assert_int_eq(timg_changes(&T, 1, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 10 + 1 + 600);
	ck_assert(chj_bits_test(&b, 10) && chj_bits_test(&b, 19) && chj_bits_test(&b, 100));
	ck_assert(!chj_bits_test(&b, 20) && !chj_bits_test(&b, 1001));
	ck_assert(chj_bits_test(&b, 1000 + 2 * 599));
	chj_bits_free(&b);
	ck_assert_int_eq(timg_changes(&T, 2, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 600);
	ck_assert(!chj_bits_test(&b, 10));
	chj_bits_free(&b);
	ck_assert_int_eq(timg_changes(&T, 3, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 0);
	chj_bits_free(&b);
}
END_TEST

/* The ring wraps and the oldest epochs are dropped, raising oldest_epoch. */
START_TEST(wrap_and_drop)
{
	struct chj_bits b;

	for (int ep = 0; ep < 30; ep++) {
		for (uint64_t i = 0; i < 300; i++)	/* 2 blocks per epoch */
			timg_mark(&T, 5000 * ep + 3 * i, 1);
		timg_checkpoint(&T);
	}
	ck_assert_uint_eq(T.sb.current_epoch, 31);
	ck_assert_uint_le(T.sb.journal_tail - T.sb.journal_head, 40);
	ck_assert_uint_gt(T.sb.journal_tail, 40);	/* wrapped */
	ck_assert_uint_eq(T.sb.oldest_epoch, 31 - 20);
	ck_assert_int_eq(changes_rc(T.sb.oldest_epoch - 1, NULL), CHJ_ERR_NOT_RETAINED);
	ck_assert_int_eq(timg_changes(&T, T.sb.oldest_epoch, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 20 * 300);
	ck_assert(chj_bits_test(&b, 5000 * 29 + 3 * 299));
	ck_assert(!chj_bits_test(&b, 5000 * 9));
	chj_bits_free(&b);
}
END_TEST

START_TEST(empty_epochs_have_no_record)
{
	struct chj_bits b;

	timg_mark(&T, 7, 1);
	timg_checkpoint(&T);		/* epoch 1: one record */
	timg_checkpoint(&T);		/* epoch 2: nothing */
	timg_checkpoint(&T);		/* epoch 3: nothing */
	ck_assert_uint_eq(T.sb.journal_tail, 1);
	ck_assert_int_eq(timg_changes(&T, 2, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 0);
	chj_bits_free(&b);
	ck_assert_int_eq(timg_changes(&T, 1, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 1);
	chj_bits_free(&b);
}
END_TEST

/* Each defect, made on block seq 2 (middle of epoch 2's record). */
typedef void (*jmut_fn)(struct chj_journal_block *b);
#define JMUT(name, body) static void name(struct chj_journal_block *b) { body; }
JMUT(j_magic, b->magic = 0)
JMUT(j_csum, b->ext[5].count ^= 1)
JMUT(j_seq, b->seq = chj_cpu64(2 + 40))
JMUT(j_epoch_old, b->epoch = 0)
JMUT(j_epoch_cur, b->epoch = chj_cpu64(3))
JMUT(j_epoch_mismatch, b->epoch = chj_cpu64(1))
JMUT(j_flags_unknown, b->flags = chj_cpu32(0x80))
JMUT(j_flags_first, b->flags = chj_cpu32(CHJ_JF_FIRST))
JMUT(j_flags_last, b->flags = chj_cpu32(CHJ_JF_LAST))
JMUT(j_nr_ext, b->nr_extents = chj_cpu32(CHJ_JOURNAL_EXTENTS + 1))
JMUT(j_unsorted, struct chj_extent x = b->ext[3]; b->ext[3] = b->ext[4]; b->ext[4] = x)
JMUT(j_overlap, b->ext[3].count = chj_cpu64(5))
JMUT(j_adjacent, b->ext[3].count = chj_cpu64(1); b->ext[4].start = chj_cpu64(chj_le64(b->ext[3].start) + 1))
JMUT(j_zero_count, b->ext[0].count = 0)
JMUT(j_past_end, b->ext[253].start = chj_cpu64(262144); b->ext[253].count = chj_cpu64(1))
JMUT(j_count_past_end, b->ext[253].count = chj_cpu64(UINT64_MAX))
JMUT(j_zero_block, memset(b, 0, CHJ_BLOCK_SIZE))
JMUT(j_across_blocks, b->ext[0].start = chj_cpu64(1000))

static const struct { const char *name; jmut_fn fn; int reseal; const char *why; } jmuts[] = {
	{ "magic", j_magic, 1, "magic" },
	{ "csum", j_csum, 0, "checksum" },
	{ "seq", j_seq, 1, "stale" },
	{ "epoch 0", j_epoch_old, 1, "outside" },
	{ "epoch current", j_epoch_cur, 1, "outside" },
	{ "epoch mismatch", j_epoch_mismatch, 1, "inside the record" },
	{ "unknown flag", j_flags_unknown, 1, "flags" },
	{ "FIRST inside", j_flags_first, 1, "no last block" },
	{ "LAST inside", j_flags_last, 1, "no first block" },
	{ "extent count", j_nr_ext, 1, "extent count" },
	{ "unsorted", j_unsorted, 1, "not sorted" },
	{ "overlap", j_overlap, 1, "not sorted" },
	{ "adjacent", j_adjacent, 1, "not sorted" },
	{ "zero count", j_zero_count, 1, "outside the" },
	{ "past end", j_past_end, 1, "outside the" },
	{ "count overflow", j_count_past_end, 1, "outside the" },
	{ "zero block", j_zero_block, 0, "magic" },
	{ "unsorted across blocks", j_across_blocks, 1, "across the record" },
};

START_TEST(journal_defect)
{
	struct chj_journal_block *b;
	char msg[512];

	two_epochs();
	b = timg_jblock(&T, 2);
	jmuts[_i].fn(b);
	if (jmuts[_i].reseal)
		timg_reseal(b, CHJ_BLOCK_SIZE);
	/* Any E whose answer needs the journal is refused, never short. */
	ck_assert_msg(changes_rc(1, msg) == CHJ_ERR_UNTRUSTED, "%s: accepted", jmuts[_i].name);
	ck_assert_msg(strstr(msg, jmuts[_i].why), "%s: message '%s'", jmuts[_i].name, msg);
	ck_assert_int_eq(changes_rc(2, NULL), CHJ_ERR_UNTRUSTED);
	/* The current epoch alone does not need the journal. */
	ck_assert_int_eq(changes_rc(3, NULL), 0);
}
END_TEST

START_TEST(last_record_unterminated)
{
	struct chj_journal_block *b;
	char msg[512];

	two_epochs();
	b = timg_jblock(&T, 3);
	b->flags = 0;
	timg_reseal(b, CHJ_BLOCK_SIZE);
	ck_assert_int_eq(changes_rc(1, msg), CHJ_ERR_UNTRUSTED);
	ck_assert_ptr_nonnull(strstr(msg, "no last block"));
}
END_TEST

START_TEST(epochs_must_not_decrease)
{
	struct chj_journal_block *b;
	char msg[512];

	two_epochs();
	timg_mark(&T, 5, 1);
	timg_checkpoint(&T);	/* epoch 3 record at seq 4 */
	b = timg_jblock(&T, 4);
	b->epoch = chj_cpu64(1);
	timg_reseal(b, CHJ_BLOCK_SIZE);
	ck_assert_int_eq(changes_rc(1, msg), CHJ_ERR_UNTRUSTED);
	ck_assert_ptr_nonnull(strstr(msg, "comes after"));
}
END_TEST

/* Seq numbers near 2^64 keep working: block = start + seq % blocks. */
START_TEST(huge_sequence_numbers)
{
	struct chj_sb sb = T.sb;
	struct chj_error e = { 0 };
	struct chj_bits b;

	sb.journal_head = sb.journal_tail = UINT64_MAX - 10;
	ck_assert_int_eq(chj_sb_commit(T.m, &sb, &e), 0);
	timg_reload(&T);
	timg_mark(&T, 42, 3);
	timg_checkpoint(&T);
	ck_assert_int_eq(timg_changes(&T, 1, &b), 0);
	ck_assert_uint_eq(chj_bits_count(&b), 3);
	chj_bits_free(&b);
}
END_TEST

Suite *suite_journal(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, records_round_trip);
	tcase_add_test(tc, wrap_and_drop);
	tcase_add_test(tc, empty_epochs_have_no_record);
	tcase_add_loop_test(tc, journal_defect, 0, sizeof(jmuts) / sizeof(jmuts[0]));
	tcase_add_test(tc, last_record_unterminated);
	tcase_add_test(tc, epochs_must_not_decrease);
	tcase_add_test(tc, huge_sequence_numbers);
	suite_add_tcase(s, tc);
	return s;
}
