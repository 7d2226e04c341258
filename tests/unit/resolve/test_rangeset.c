// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Range sets: merging, queries, mapping device overlaps into file ranges. */
#include "resolve.h"
#include "suites.h"

static void set(struct rangeset *s, const uint64_t *v, size_t n)
{
	rs_init(s);
	for (size_t i = 0; i < n; i += 2)
		rs_add(s, v[i], v[i + 1]);
	rs_normalize(s);
}

static void expect(const struct rangeset *s, const uint64_t *v, size_t n)
{
	ck_assert_uint_eq(s->n, n / 2);
	for (size_t i = 0; i < n / 2; i++) {
		ck_assert_uint_eq(s->v[i].start, v[2 * i]);
		ck_assert_uint_eq(s->v[i].len, v[2 * i + 1]);
	}
}

START_TEST(merge_sorts_and_joins)
{
	struct rangeset s;
	const uint64_t in[] = { 100, 10, 0, 5, 5, 5, 50, 10, 55, 20, 200, 0, 110, 1 };
	const uint64_t out[] = { 0, 10, 50, 25, 100, 11 };

	set(&s, in, sizeof(in) / sizeof(in[0]));
	expect(&s, out, sizeof(out) / sizeof(out[0]));
	ck_assert_uint_eq(rs_total(&s), 46);
	rs_free(&s);
}
END_TEST

START_TEST(in_order_appends_stay_normal)
{
	struct rangeset s;

	rs_init(&s);
	rs_add(&s, 0, 4096);
	rs_add(&s, 4096, 4096);
	rs_add(&s, 12288, 4096);
	ck_assert_int_eq(s.dirty, 0);
	ck_assert_uint_eq(s.n, 2);
	rs_add(&s, 0, 1);	/* out of order */
	ck_assert_int_eq(s.dirty, 1);
	rs_normalize(&s);
	ck_assert_uint_eq(s.n, 2);
	rs_free(&s);
}
END_TEST

START_TEST(queries)
{
	struct rangeset s;
	const uint64_t in[] = { 10, 10, 40, 10 };

	set(&s, in, 4);
	ck_assert(!rs_overlaps(&s, 0, 10));
	ck_assert(rs_overlaps(&s, 0, 11));
	ck_assert(rs_overlaps(&s, 19, 1));
	ck_assert(!rs_overlaps(&s, 20, 20));
	ck_assert(rs_overlaps(&s, 20, 21));
	ck_assert(!rs_overlaps(&s, 15, 0));
	ck_assert(rs_covers(&s, 10, 10));
	ck_assert(rs_covers(&s, 12, 3));
	ck_assert(!rs_covers(&s, 15, 10));
	ck_assert(!rs_covers(&s, 5, 10));
	ck_assert_uint_eq(rs_overlap_bytes(&s, 0, 100), 20);
	ck_assert_uint_eq(rs_overlap_bytes(&s, 15, 30), 10);
	ck_assert_uint_eq(rs_find(&s, 0), 0);
	ck_assert_uint_eq(rs_find(&s, 20), 1);
	ck_assert_uint_eq(rs_find(&s, 50), 2);
	rs_free(&s);
}
END_TEST

START_TEST(map_overlaps_to_file_offsets)
{
	struct rangeset chg, f;
	const uint64_t in[] = { 1000, 100, 1500, 100, 5000, 10 };
	const uint64_t out[] = { 50, 100, 550, 100 };

	set(&chg, in, 6);
	rs_init(&f);
	/* A device extent [950, 1650) holding file bytes [0, 700). */
	ck_assert_uint_eq(rs_map_overlaps(&f, &chg, 950, 700, 0), 200);
	rs_normalize(&f);
	expect(&f, out, 4);
	rs_free(&chg);
	rs_free(&f);
}
END_TEST

START_TEST(subtract_and_clip)
{
	struct rangeset a, b, d;
	const uint64_t ia[] = { 0, 100, 200, 100 };
	const uint64_t ib[] = { 10, 10, 50, 200, 290, 20 };
	const uint64_t out[] = { 0, 10, 20, 30, 250, 40 };
	const uint64_t clipped[] = { 0, 10, 20, 30, 250, 10 };

	set(&a, ia, 4);
	set(&b, ib, 6);
	rs_init(&d);
	rs_subtract(&d, &a, &b);
	expect(&d, out, 6);
	rs_clip(&d, 260);
	expect(&d, clipped, 6);
	rs_clip(&d, 0);
	ck_assert_uint_eq(d.n, 0);
	rs_free(&a);
	rs_free(&b);
	rs_free(&d);
}
END_TEST

START_TEST(add_clamps_at_the_top)
{
	struct rangeset s;

	rs_init(&s);
	rs_add(&s, UINT64_MAX - 10, 100);
	ck_assert_uint_eq(s.v[0].start + s.v[0].len, UINT64_MAX);
	rs_free(&s);
}
END_TEST

Suite *suite_rangeset(void)
{
	Suite *s = suite_create("rangeset");
	TCase *t = tcase_create("rangeset");

	tcase_add_test(t, merge_sorts_and_joins);
	tcase_add_test(t, in_order_appends_stay_normal);
	tcase_add_test(t, queries);
	tcase_add_test(t, map_overlaps_to_file_offsets);
	tcase_add_test(t, subtract_and_clip);
	tcase_add_test(t, add_clamps_at_the_top);
	suite_add_tcase(s, t);
	return s;
}
