// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The one rule (settle.c): each row of the table decides what its bytes
 * mean, and the expectation for each row is written here, apart from the
 * table: a row changed without this list changing fails.  A mutation (a
 * category wrongly declared neutral) is caught by the row tests; and a
 * run's answer is that of its worst category.
 */
#include <string.h>

#include "resolve.h"
#include "suites.h"

/* The verdict a run with bytes in that category alone must get. */
static const enum verdict expected[AT_NR] = {
	[AT_DATA] = SETTLE_LISTED,
	[AT_INODES] = SETTLE_LISTED,
	[AT_DIR] = SETTLE_LISTED,
	[AT_XATTR] = SETTLE_LISTED,
	[AT_MAPPING] = SETTLE_LISTED,
	[AT_TREE] = SETTLE_LISTED,
	[AT_JOURNAL] = SETTLE_LISTED,
	[AT_FREE] = SETTLE_LISTED,
	[AT_META] = SETTLE_LISTED,
	[AT_ORPHAN] = SETTLE_LISTED,
	[AT_FREED] = SETTLE_LISTED,
	[AT_GRAIN] = SETTLE_LISTED,
	[AT_UNMAPPED] = SETTLE_CONSERVATIVE,
	[AT_NOFSMAP] = SETTLE_CONSERVATIVE,
	[AT_OUTSIDE] = SETTLE_FULL_SCAN,
	[AT_UNOWNED] = SETTLE_FULL_SCAN,
	[AT_UNNAMED] = SETTLE_FULL_SCAN,
	[AT_UNKNOWN] = SETTLE_FULL_SCAN,
};

/* How many rows of table give another verdict than expected. */
static int rows_wrong(const struct settle_row *table)
{
	int wrong = 0;

	for (int a = 0; a < AT_NR; a++) {
		struct tally t = { 0 };
		char why[256];

		tally_add(&t, a, 4096);
		wrong += settle(&t, table, why, sizeof(why)) != expected[a];
	}
	return wrong;
}

/* One test per row (the loop's index): its bytes alone, its verdict. */
START_TEST(row)
{
	struct tally t = { 0 };
	char why[256];
	enum verdict v;

	ck_assert_ptr_nonnull(settle_rows[_i].name);
	ck_assert_ptr_nonnull(settle_rows[_i].why);
	ck_assert_uint_gt(strlen(settle_rows[_i].why), 20);
	tally_add(&t, _i, 512);
	v = settle(&t, settle_rows, why, sizeof(why));
	ck_assert_msg(v == expected[_i], "row %s: verdict %d, expected %d", settle_rows[_i].name, v,
		      expected[_i]);
	if (v != SETTLE_LISTED)
		ck_assert_ptr_nonnull(strstr(why, settle_rows[_i].name));
	/* Owned and neutral rows say nothing; the rest say what. */
	if (v == SETTLE_LISTED)
		ck_assert_str_eq(why, "");
}
END_TEST

/* Nothing changed: listed. */
START_TEST(empty)
{
	struct tally t = { 0 };
	char why[64];

	ck_assert_int_eq(settle(&t, settle_rows, why, sizeof(why)), SETTLE_LISTED);
	ck_assert_int_eq(rows_wrong(settle_rows), 0);
}
END_TEST

/* Each full-scan or conservative row declared neutral: the row tests catch it. */
START_TEST(mutation_caught)
{
	int mutated = 0;

	for (int a = 0; a < AT_NR; a++) {
		struct settle_row m[AT_NR];

		if (settle_rows[a].rule == SR_OWNED || settle_rows[a].rule == SR_NEUTRAL)
			continue;
		memcpy(m, settle_rows, sizeof(m));
		m[a].rule = SR_NEUTRAL;
		ck_assert_msg(rows_wrong(m) == 1, "%s wrongly neutral: not caught", m[a].name);
		mutated++;
	}
	ck_assert_int_ge(mutated, 4);
}
END_TEST

/* The worst category decides; a full scan gives its first note. */
START_TEST(worst_decides)
{
	struct tally t = { 0 };
	char why[256];

	tally_add(&t, AT_DATA, 1 << 20);
	tally_add(&t, AT_FREE, 4096);
	tally_add(&t, AT_UNMAPPED, 8192);
	ck_assert_int_eq(settle(&t, settle_rows, why, sizeof(why)), SETTLE_CONSERVATIVE);
	ck_assert_ptr_nonnull(strstr(why, "8192 bytes"));
	tally_note(&t, AT_UNOWNED, 4096, "block %d has no owner", 7);
	tally_note(&t, AT_UNOWNED, 4096, "block %d has no owner", 9);
	ck_assert_uint_eq(t.bytes[AT_UNOWNED], 8192);
	ck_assert_int_eq(settle(&t, settle_rows, why, sizeof(why)), SETTLE_FULL_SCAN);
	ck_assert_str_eq(why, "block 7 has no owner");
	/* A note of no bytes is no find. */
	memset(&t, 0, sizeof(t));
	tally_note(&t, AT_OUTSIDE, 0, "nothing");
	ck_assert_int_eq(settle(&t, settle_rows, why, sizeof(why)), SETTLE_LISTED);
}
END_TEST

/* The installed table is the one the rows test (no hook in this build). */
START_TEST(table_in_force)
{
	ck_assert_ptr_eq(settle_table(), settle_rows);
}
END_TEST

Suite *suite_settle(void)
{
	Suite *s = suite_create("settle");
	TCase *tc = tcase_create("rule");

	tcase_add_loop_test(tc, row, 0, AT_NR);
	tcase_add_test(tc, empty);
	tcase_add_test(tc, mutation_caught);
	tcase_add_test(tc, worst_decides);
	tcase_add_test(tc, table_in_force);
	suite_add_tcase(s, tc);
	return s;
}
