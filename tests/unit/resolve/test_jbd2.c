// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The jbd2 walk over synthetic journals. */
#include <stdio.h>
#include <string.h>

#include "jbd2.h"
#include "suites.h"

#define BS	1024
#define NBLK	64

static unsigned char j[NBLK][BS];
static int changed[NBLK];
static uint64_t homes[256];
static int nhomes;

static void p32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static int rd(void *ctx, uint64_t b, void *buf)
{
	(void)ctx;
	if (b >= NBLK)
		return -1;
	memcpy(buf, j[b], BS);
	return 0;
}

static int ch(void *ctx, uint64_t b)
{
	(void)ctx;
	return b < NBLK && changed[b];
}

static void home(void *ctx, uint64_t b)
{
	(void)ctx;
	if (nhomes < (int)(sizeof(homes) / sizeof(homes[0])))
		homes[nhomes] = b;
	nhomes++;
}

static const struct jbd2_src src = { NULL, BS, NBLK, rd, ch, home, NULL, 0, 0, 0 };

static void hdr(unsigned b, uint32_t type, uint32_t seq)
{
	p32(j[b], JBD2_MAGIC);
	p32(j[b] + 4, type);
	p32(j[b] + 8, seq);
}

static void superblock(uint32_t start, uint32_t seq, uint32_t incompat)
{
	memset(j, 0, sizeof(j));
	memset(changed, 0, sizeof(changed));
	nhomes = 0;
	hdr(0, JBD2_SB_V2, 0);
	p32(j[0] + 12, BS);
	p32(j[0] + 16, NBLK);
	p32(j[0] + 20, 1);
	p32(j[0] + 24, seq);
	p32(j[0] + 28, start);
	p32(j[0] + 40, incompat);
}

/* A descriptor at b with tags (csum v3, 64bit), data blocks after it, then
 * a commit; returns the block after the commit.  Wraps at NBLK to 1. */
static unsigned trans(unsigned b, uint32_t seq, const uint64_t *h, int n, int commit)
{
	unsigned off = 12;

	hdr(b, JBD2_DESCRIPTOR, seq);
	for (int i = 0; i < n; i++) {
		uint32_t flags = (i ? JBD2_TAG_SAME_UUID : 0) | (i == n - 1 ? JBD2_TAG_LAST : 0);

		p32(j[b] + off, (uint32_t)h[i]);
		p32(j[b] + off + 4, flags);
		p32(j[b] + off + 8, (uint32_t)(h[i] >> 32));
		off += 16 + (i ? 0 : 16);
	}
	for (int i = 0; i <= n; i++)
		b = b + 1 >= NBLK ? 1 : b + 1;	/* data blocks hold anything */
	if (commit) {
		hdr(b, JBD2_COMMIT, seq);
		b = b + 1 >= NBLK ? 1 : b + 1;
	}
	return b;
}

START_TEST(counts_only_touched_transactions)
{
	const uint64_t a[] = { 1000, 1001, 0x100000002ull }, c[] = { 2000 };
	struct jbd2_info in;
	unsigned b;

	superblock(5, 10, JBD2_IN_64BIT | JBD2_IN_CSUM_V3);
	b = trans(5, 10, a, 3, 1);		/* blocks 5..9 */
	b = trans(b, 11, c, 1, 1);		/* blocks 10..12 */
	hdr(b, JBD2_DESCRIPTOR, 99);		/* stale: ends the log */
	changed[7] = 1;				/* a data block of 10 */
	ck_assert_int_eq(jbd2_scan(&src, &in), 0);
	ck_assert_uint_eq(in.transactions, 2);
	ck_assert_uint_eq(in.counted, 1);
	ck_assert_int_eq(nhomes, 3);
	ck_assert_uint_eq(homes[0], 1000);
	ck_assert_uint_eq(homes[2], 0x100000002ull);

	nhomes = 0;
	memset(changed, 0, sizeof(changed));
	changed[12] = 1;			/* the commit block of 11 */
	ck_assert_int_eq(jbd2_scan(&src, &in), 0);
	ck_assert_int_eq(nhomes, 1);
	ck_assert_uint_eq(homes[0], 2000);
}
END_TEST

START_TEST(wraps_and_counts_an_uncommitted_tail)
{
	const uint64_t a[] = { 7, 8 }, c[] = { 9 };
	struct jbd2_info in;
	unsigned b;

	superblock(61, 3, JBD2_IN_64BIT | JBD2_IN_CSUM_V3);
	b = trans(61, 3, a, 2, 1);		/* 61, 62, 63, 1(commit) */
	ck_assert_uint_eq(b, 2);
	trans(b, 4, c, 1, 0);			/* 2, 3: no commit yet */
	changed[1] = changed[3] = 1;
	ck_assert_int_eq(jbd2_scan(&src, &in), 0);
	ck_assert_uint_eq(in.counted, 2);
	ck_assert_int_eq(nhomes, 3);
	ck_assert_uint_eq(homes[2], 9);
}
END_TEST

START_TEST(clean_unknown_and_tag_sizes)
{
	struct jbd2_info in;

	superblock(0, 1, 0);
	ck_assert_int_eq(jbd2_scan(&src, &in), 0);
	ck_assert_int_eq(in.clean, 1);
	superblock(5, 1, 0x40);			/* a feature from the future */
	ck_assert_int_eq(jbd2_scan(&src, &in), -1);
	ck_assert_ptr_nonnull(strstr(in.why, "unknown"));
	superblock(70, 1, 0);			/* start past the end */
	ck_assert_int_eq(jbd2_scan(&src, &in), -1);
	ck_assert_uint_eq(jbd2_tag_bytes(0), 8);
	ck_assert_uint_eq(jbd2_tag_bytes(JBD2_IN_64BIT), 12);
	ck_assert_uint_eq(jbd2_tag_bytes(JBD2_IN_CSUM_V2), 10);
	ck_assert_uint_eq(jbd2_tag_bytes(JBD2_IN_CSUM_V2 | JBD2_IN_64BIT), 14);
	ck_assert_uint_eq(jbd2_tag_bytes(JBD2_IN_CSUM_V3), 16);
}
END_TEST

/*
 * A live journal, by the kernel's rule (jbd2.c's head comment): space is
 * reused only once the superblock's tail went past it.  The map was read
 * with the tail at block 5, sequence 10: transactions 10 (5..7) and 11
 * (8..10, a changed data block) live, not home.  Before the walk the
 * kernel checkpointed both (their homes written, after the map: in no
 * mark) and moved the tail: to 11, sequence 12, or to 0 (an fsfreeze
 * emptied the journal).  A walk from that tail (what chj-resolve did
 * before it noted the map's) sees neither: home 2000 silently missing.
 */
static void two_transactions(void)
{
	const uint64_t a[] = { 1000 }, c[] = { 2000 };

	superblock(5, 10, JBD2_IN_64BIT | JBD2_IN_CSUM_V3);
	trans(trans(5, 10, a, 1, 1), 11, c, 1, 1);	/* 5..7, 8..10 */
	changed[9] = 1;				/* a data block of 11 */
}

static int has_home(uint64_t h)
{
	for (int i = 0; i < nhomes && i < (int)(sizeof(homes) / sizeof(homes[0])); i++)
		if (homes[i] == h)
			return 1;
	return 0;
}

START_TEST(walks_from_the_tail_noted_at_the_map)
{
	struct jbd2_src noted = src;
	struct jbd2_info in;
	const uint32_t now[][2] = { { 12, 11 }, { 12, 0 } };	/* sequence, start */

	noted.map_known = 1;
	noted.map_seq = 10;
	noted.map_start = 5;
	for (size_t k = 0; k < 2; k++) {
		two_transactions();
		p32(j[0] + 24, now[k][0]);
		p32(j[0] + 28, now[k][1]);
		/* The walk of the walk's own tail: the gap. */
		ck_assert_int_eq(jbd2_scan(&src, &in), 0);
		ck_assert_int_eq(has_home(2000), 0);
		nhomes = 0;
		ck_assert_int_eq(jbd2_scan(&noted, &in), 0);
		ck_assert_int_eq(has_home(2000), 1);
		ck_assert_int_eq(in.moved, 1);
		ck_assert_uint_eq(in.seq_from, 10);
		ck_assert_uint_eq(in.seq_now, 12);
		ck_assert_uint_eq(in.counted, 1);
	}
	/* Clean when the map was read: nothing then was left to walk (what
	 * the journal holds now came after the sync). */
	two_transactions();
	noted.map_start = 0;
	ck_assert_int_eq(jbd2_scan(&noted, &in), 0);
	ck_assert_int_eq(in.clean, 1);
	ck_assert_int_eq(nhomes, 0);
}
END_TEST

/* The kernel then went round: block 5 reused by transaction 20 (a header)
 * or by a data block (escaped: no magic).  Transactions 10 and 11 are gone:
 * the walk from the map's tail must say so, not end there quietly. */
START_TEST(a_lap_over_the_maps_transactions_fails)
{
	struct jbd2_src noted = src;
	struct jbd2_info in;

	noted.map_known = 1;
	noted.map_seq = 10;
	noted.map_start = 5;
	for (int k = 0; k < 2; k++) {
		two_transactions();
		p32(j[0] + 24, 20);
		p32(j[0] + 28, 5);
		if (k)
			memset(j[5], 0x5a, BS);
		else
			hdr(5, JBD2_DESCRIPTOR, 20);
		ck_assert_int_eq(jbd2_scan(&noted, &in), -1);
		ck_assert_int_eq(in.lapped, 1);
		ck_assert_ptr_nonnull(strstr(in.why, "went round"));
	}
	/* A tail older than the map's: not this journal's history. */
	two_transactions();
	p32(j[0] + 24, 9);
	ck_assert_int_eq(jbd2_scan(&noted, &in), -1);
	ck_assert_int_eq(in.lapped, 1);
}
END_TEST

/*
 * The tail moving during the walk: the walk ends at 11 expecting sequence
 * 12; before the superblock is re-read the kernel writes 12 there and
 * 13, and checkpoints up to 13.  Block 11 holding 12's header shows the
 * end was the log's end when read: complete.  Block 11 reused once more
 * (a later sequence there): what it held when read cannot be told: -1.
 */
static int race_kind;

static void race(void *ctx)
{
	const uint64_t d[] = { 3000 };

	(void)ctx;
	trans(trans(11, 12, d, 1, 1), 13, d, 1, 1);	/* 11..13, 14..16 */
	if (race_kind)
		hdr(11, JBD2_DESCRIPTOR, 40);
	p32(j[0] + 24, 13);
	p32(j[0] + 28, 14);
}

START_TEST(a_tail_moved_during_the_walk_is_checked_at_its_end)
{
	struct jbd2_src live = src;
	struct jbd2_info in;

	live.before_reread = race;
	for (race_kind = 0; race_kind < 2; race_kind++) {
		two_transactions();
		hdr(11, JBD2_DESCRIPTOR, 2);		/* an older lap: the end */
		ck_assert_int_eq(jbd2_scan(&live, &in), race_kind ? -1 : 0);
		ck_assert_int_eq(in.lapped, race_kind);
		ck_assert_int_eq(has_home(2000), 1);
		ck_assert_uint_eq(in.transactions, 2);
	}
	/* Moved, but not past the walk's end: the end stands unread. */
	two_transactions();
	live.before_reread = NULL;
	p32(j[0] + 24, 12);
	p32(j[0] + 28, 11);
	live.map_known = 1;
	live.map_seq = 10;
	live.map_start = 5;
	ck_assert_int_eq(jbd2_scan(&live, &in), 0);
	ck_assert_int_eq(in.moved, 1);
}
END_TEST

START_TEST(superblock_tail)
{
	uint32_t seq = 0, start = 0;

	superblock(17, 0x1234, 0);
	ck_assert_int_eq(jbd2_sb_tail(j[0], BS, &seq, &start), 0);
	ck_assert_uint_eq(seq, 0x1234);
	ck_assert_uint_eq(start, 17);
	p32(j[0] + 4, JBD2_DESCRIPTOR);
	ck_assert_int_eq(jbd2_sb_tail(j[0], BS, &seq, &start), -1);
	p32(j[0], 0);
	ck_assert_int_eq(jbd2_sb_tail(j[0], BS, &seq, &start), -1);
}
END_TEST

/*
 * The fuzz seeds (fuzz-seeds.sh, jbd2-seed.py) must be live logs that the
 * walk goes through: a seed stopped at the superblock (a checkpointed
 * journal, or one longer than the file) leaves fuzz_jbd2 exploring nothing
 * past it, as happened once for a million runs.  Every block counts as
 * changed, so each committed transaction counts.
 */
static int all_changed(void *ctx, uint64_t b)
{
	(void)ctx;
	(void)b;
	return 1;
}

START_TEST(fuzz_seeds_are_live_logs)
{
	static const char *const seeds[] = { "fuzz/seeds/jbd2/live", "fuzz/seeds/jbd2/moving" };
	const struct jbd2_src seed = { NULL, BS, NBLK, rd, all_changed, home, NULL, 0, 0, 0 };
	struct jbd2_info in;

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		FILE *f = fopen(seeds[i], "rb");

		ck_assert_msg(f != NULL, "%s: cannot open", seeds[i]);
		ck_assert_int_ne(fgetc(f), EOF);	/* the harness's flag byte */
		ck_assert_uint_eq(fread(j, BS, NBLK, f), NBLK);
		fclose(f);
		nhomes = 0;
		ck_assert_int_eq(jbd2_scan(&seed, &in), 0);
		ck_assert_msg(!in.clean && in.counted > 0 && in.homes > 0,
			      "%s: the walk stops at the superblock", seeds[i]);
	}
}
END_TEST

Suite *suite_jbd2(void)
{
	Suite *s = suite_create("jbd2");
	TCase *t = tcase_create("walk");

	tcase_add_test(t, counts_only_touched_transactions);
	tcase_add_test(t, wraps_and_counts_an_uncommitted_tail);
	tcase_add_test(t, clean_unknown_and_tag_sizes);
	tcase_add_test(t, walks_from_the_tail_noted_at_the_map);
	tcase_add_test(t, a_lap_over_the_maps_transactions_fails);
	tcase_add_test(t, a_tail_moved_during_the_walk_is_checked_at_its_end);
	tcase_add_test(t, superblock_tail);
	tcase_add_test(t, fuzz_seeds_are_live_logs);
	suite_add_tcase(s, t);
	return s;
}
