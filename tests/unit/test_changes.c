// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Changed ranges: merging, clipping, epochs, and the live-reader retry. */
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "testimg.h"

static struct timg T;

static void teardown(void)
{
	timg_free(&T);
}

static size_t ranges(uint64_t since, struct chj_range **v, int *rc)
{
	struct chj_changes *c;
	struct chj_error e = { 0 };
	size_t n = 0;

	*v = NULL;
	*rc = chj_changes_since(T.m, since, &c, &e);
	if (*rc)
		return 0;
	ck_assert_int_eq(chj_changes_ranges(c, v, &n, &e), 0);
	chj_changes_free(c);
	return n;
}

/* Journal extents and bitmap marks that touch merge into one range. */
START_TEST(merge_across_sources)
{
	struct chj_range *v;
	int rc;
	size_t n;

	timg_init(&T, 64, 1ull << 20, 16);	/* 8 KiB regions */
	timg_mark(&T, 10, 5);			/* epoch 1: 10..14 */
	timg_checkpoint(&T);
	timg_mark(&T, 15, 2);			/* epoch 2: 15..16 */
	timg_mark(&T, 30, 1);
	timg_checkpoint(&T);
	timg_mark(&T, 17, 1);			/* epoch 3 (bitmap): 17 */
	timg_mark(&T, 12, 1);			/* overlaps epoch 1 */
	n = ranges(1, &v, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(v[0].start, 10 * 16);
	ck_assert_uint_eq(v[0].len, 8 * 16);
	ck_assert_uint_eq(v[1].start, 30 * 16);
	ck_assert_uint_eq(v[1].len, 16);
	free(v);
	n = ranges(2, &v, &rc);
	ck_assert_uint_eq(n, 3);	/* 12, 15..17, 30 */
	ck_assert_uint_eq(v[0].start, 12 * 16);
	ck_assert_uint_eq(v[1].start, 15 * 16);
	ck_assert_uint_eq(v[1].len, 3 * 16);
	free(v);
}
END_TEST

/* The last region is partial: ranges stop at the origin's end. */
START_TEST(clip_at_origin_end)
{
	struct chj_range *v;
	struct chj_changes *c;
	struct chj_error e = { 0 };
	int rc;
	size_t n;

	timg_init(&T, 64, 1000, 64);	/* 16 regions, the last has 40 sectors */
	ck_assert_uint_eq(T.sb.nr_regions, 16);
	timg_mark(&T, 14, 2);
	n = ranges(1, &v, &rc);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(v[0].start, 14 * 64);
	ck_assert_uint_eq(v[0].len, 1000 - 14 * 64);
	free(v);
	ck_assert_int_eq(chj_changes_since(T.m, 1, &c, &e), 0);
	ck_assert_int_eq(chj_changes_test(c, 999, 1), 1);
	ck_assert_int_eq(chj_changes_test(c, 1000, 10), 0);
	ck_assert_int_eq(chj_changes_test(c, 0, 14 * 64), 0);
	ck_assert_int_eq(chj_changes_test(c, 0, 14 * 64 + 1), 1);
	ck_assert_int_eq(chj_changes_test(c, 5, UINT64_MAX), 1);
	ck_assert_int_eq(chj_changes_test(c, 900, 0), 0);
	chj_changes_free(c);
}
END_TEST

START_TEST(epoch_bounds)
{
	struct chj_changes *c = NULL;
	struct chj_error e = { 0 };

	timg_init(&T, 64, 1ull << 20, 8);
	timg_checkpoint(&T);
	timg_checkpoint(&T);	/* current 3, oldest 1 */
	ck_assert_int_eq(chj_changes_since(T.m, 4, &c, &e), CHJ_ERR_FUTURE);
	ck_assert_ptr_nonnull(strstr(e.msg, "newer than the current epoch 3"));
	ck_assert_int_eq(chj_changes_since(T.m, 0, &c, &e), CHJ_ERR_NOT_RETAINED);
	ck_assert_ptr_nonnull(strstr(e.msg, "full backup"));
	ck_assert_ptr_null(c);
	for (uint64_t ep = 1; ep <= 3; ep++) {
		ck_assert_int_eq(chj_changes_since(T.m, ep, &c, &e), 0);
		chj_changes_free(c);
	}
}
END_TEST

/* Random epochs against a plain reference model. */
START_TEST(random_against_model)
{
	enum { NR = 5000, EPOCHS = 12 };
	static uint8_t marked[EPOCHS + 2][NR];
	unsigned seed = 12345 + _i;

	memset(marked, 0, sizeof(marked));
	timg_init(&T, 2 + 1 + 200, NR * 8ull - 3, 8);
	for (int ep = 1; ep <= EPOCHS; ep++) {
		int writes = rand_r(&seed) % 300;

		for (int w = 0; w < writes; w++) {
			uint64_t r = rand_r(&seed) % NR, n = 1 + rand_r(&seed) % 20;

			if (r + n > NR)
				n = NR - r;
			timg_mark(&T, r, n);
			memset(&marked[ep][r], 1, n);
		}
		if (ep < EPOCHS)
			timg_checkpoint(&T);
	}
	ck_assert_uint_eq(T.sb.current_epoch, EPOCHS);
	for (uint64_t since = 1; since <= EPOCHS; since++) {
		struct chj_bits b;

		ck_assert_int_eq(timg_changes(&T, since, &b), 0);
		for (int r = 0; r < NR; r++) {
			int want = 0;

			for (uint64_t ep = since; ep <= EPOCHS; ep++)
				want |= marked[ep][r];
			ck_assert_msg(chj_bits_test(&b, r) == want,
				      "since %llu region %d: got %d want %d",
				      (unsigned long long)since, r, !want, want);
		}
		chj_bits_free(&b);
	}
}
END_TEST

/* The read hook checkpoints once, after the first journal/bitmap read. */
struct race {
	struct timg *t;
	int armed;
	int fired;
};

static void race_hook(void *ctx, uint64_t nr, uint64_t n)
{
	struct race *r = ctx;

	(void)n;
	if (!r->armed || nr < CHJ_SB_COPIES)
		return;
	r->armed = 0;
	r->fired++;
	timg_mark(r->t, 77, 1);
	timg_checkpoint(r->t);	/* the superblock moves under the reader */
	timg_mark(r->t, 88, 1);
}

START_TEST(live_retry_when_superblock_moves)
{
	struct race r = { &T, 1, 0 };
	struct chj_changes *c;
	struct chj_error e = { 0 };
	const struct chj_changes_info *in;

	timg_init(&T, 64, 1ull << 20, 8);
	timg_mark(&T, 5, 1);
	timg_checkpoint(&T);		/* epoch 1: region 5 */
	T.m->read_hook = race_hook;
	T.m->hook_ctx = &r;
	ck_assert_int_eq(chj_changes_since(T.m, 2, &c, &e), 0);
	in = chj_changes_info(c);
	ck_assert_int_eq(r.fired, 1);
	ck_assert_uint_eq(in->tries, 2);
	ck_assert_uint_eq(in->sb.current_epoch, 3);
	/* The answer is the post-checkpoint state: 77 (epoch 2) and 88. */
	ck_assert_int_eq(chj_changes_test(c, 77 * 8, 8), 1);
	ck_assert_int_eq(chj_changes_test(c, 88 * 8, 8), 1);
	ck_assert_int_eq(chj_changes_test(c, 5 * 8, 8), 0);
	ck_assert_uint_eq(in->changed_regions, 2);
	chj_changes_free(c);
}
END_TEST

static void always_move(void *ctx, uint64_t nr, uint64_t n)
{
	struct timg *t = ctx;
	struct chj_error e = { 0 };
	struct chj_sb sb = t->sb;

	(void)n;
	if (nr < CHJ_SB_COPIES)
		return;
	/* A move that matters: the journal tail (a checkpoint's record). */
	sb.journal_tail++;
	sb.journal_head++;
	ck_assert_int_eq(chj_sb_commit(t->m, &sb, &e), 0);
	t->sb = sb;
}

/*
 * Format 2: the target commits superblocks that only mark chunks, all the
 * time.  A reader that sees the seq move with the same epoch and journal
 * keeps its snapshot, and counts the chunks both superblocks mark.
 */
static void mark_chunk(void *ctx, uint64_t nr, uint64_t n)
{
	struct timg *t = ctx;
	struct chj_error e = { 0 };
	struct chj_sb sb = t->sb;

	(void)n;
	if (nr < CHJ_SB_COPIES || t->sb.intent[0] & 2)
		return;
	sb.intent[0] |= 2;	/* chunk 1 */
	ck_assert_int_eq(chj_sb_commit(t->m, &sb, &e), 0);
	t->sb = sb;
}

START_TEST(live_chunk_marks_kept)
{
	struct chj_changes *c = NULL;
	struct chj_error e = { 0 };
	const struct chj_changes_info *in;

	timg_init(&T, 64, 1ull << 20, 8);
	T.sb.intent[0] = 1;	/* chunk 0 marked before the read */
	ck_assert_int_eq(chj_sb_commit(T.m, &T.sb, &e), 0);
	T.m->read_hook = mark_chunk;
	T.m->hook_ctx = &T;
	ck_assert_int_eq(chj_changes_since(T.m, 1, &c, &e), 0);
	in = chj_changes_info(c);
	ck_assert_uint_eq(in->tries, 1);
	ck_assert_uint_eq(in->chunk_regions, 1ull << T.sb.chunk_shift);
	/* Both chunks: the one marked at the start and the one marked during. */
	ck_assert_uint_eq(in->changed_regions, 2 * (1ull << T.sb.chunk_shift));
	ck_assert_int_eq(chj_changes_test(c, 0, 8), 1);
	ck_assert_int_eq(chj_changes_test(c, (2ull << T.sb.chunk_shift) * 8, 8), 0);
	chj_changes_free(c);
}
END_TEST

START_TEST(live_gives_up_after_bounded_tries)
{
	struct chj_changes *c = NULL;
	struct chj_error e = { 0 };

	timg_init(&T, 64, 1ull << 20, 8);
	T.m->read_hook = always_move;
	T.m->hook_ctx = &T;
	ck_assert_int_eq(chj_changes_since(T.m, 1, &c, &e), CHJ_ERR_UNSTABLE);
	ck_assert_ptr_nonnull(strstr(e.msg, "kept changing"));
	ck_assert_ptr_null(c);
}
END_TEST

Suite *suite_changes(void)
{
	Suite *s = suite_create("changes");
	TCase *tc = tcase_create("changes");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, merge_across_sources);
	tcase_add_test(tc, clip_at_origin_end);
	tcase_add_test(tc, epoch_bounds);
	tcase_add_loop_test(tc, random_against_model, 0, 4);
	tcase_add_test(tc, live_retry_when_superblock_moves);
	tcase_add_test(tc, live_gives_up_after_bounded_tries);
	tcase_add_test(tc, live_chunk_marks_kept);
	suite_add_tcase(s, tc);
	return s;
}
