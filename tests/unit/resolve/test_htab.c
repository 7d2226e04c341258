// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The shared hash index (htab.c) and the result table built on it. */
#include <stdio.h>
#include <stdlib.h>

#include "resolve.h"
#include "suites.h"

/* Every index added under hash, each once, in some order. */
static size_t count_under(const struct htab *h, uint64_t hash, size_t n, unsigned char *seen)
{
	size_t c, k = 0;

	memset(seen, 0, n);
	for (size_t i = ht_first(h, hash, &c); i != HT_NONE; i = ht_next(h, hash, &c)) {
		ck_assert_uint_lt(i, n);
		ck_assert_msg(!seen[i], "index %zu yielded twice", i);
		seen[i] = 1;
		k++;
	}
	return k;
}

START_TEST(every_index_found_through_growth_and_collisions)
{
	/* 7 hashes for 6000 entries: long probe chains, many growths; and
	 * hashes equal in their low 32 bits only (the slot keeps those). */
	enum { N = 6000 };
	struct htab h = { 0 };
	unsigned char *seen = calloc(N, 1);
	size_t c;

	for (size_t i = 0; i < N; i++)
		ht_add(&h, (i % 7) | ((uint64_t)(i % 3) << 32), i);
	ck_assert_uint_eq(h.n, N);
	ck_assert_uint_ge(h.cap, 2 * N);
	for (uint64_t k = 0; k < 7; k++) {
		size_t got = count_under(&h, k, N, seen);

		ck_assert_uint_eq(got, N / 7 + (k < N % 7));
		for (size_t i = 0; i < N; i++)
			ck_assert_uint_eq(seen[i], i % 7 == k);
	}
	ck_assert_uint_eq(ht_first(&h, 7, &c), HT_NONE);
	ck_assert_uint_eq(ht_next(&h, 7, &c), HT_NONE);
	ht_free(&h);
	ck_assert_ptr_null(h.s);
	ck_assert_uint_eq(ht_first(&h, 1, &c), HT_NONE);
	free(seen);
}
END_TEST

START_TEST(empty_table_finds_nothing)
{
	struct htab h = { 0 };
	size_t c;

	ck_assert_uint_eq(ht_first(&h, 0, &c), HT_NONE);
	ck_assert_uint_eq(ht_next(&h, 0, &c), HT_NONE);
	ht_free(&h);
}
END_TEST

START_TEST(hashes_spread_pairs_and_strings)
{
	/* Swapped pairs and near strings must not collide as a rule. */
	ck_assert_uint_ne(ht_hash_pair(1, 2), ht_hash_pair(2, 1));
	ck_assert_uint_ne(ht_hash_pair(0, 5), ht_hash_pair(5, 0));
	ck_assert_uint_ne(ht_hash_str("ab"), ht_hash_str("ba"));
	ck_assert_uint_ne(ht_hash_str(""), ht_hash_str("a"));
	ck_assert_uint_ne(ht_hash_u64(1), ht_hash_u64(2));
}
END_TEST

/* The set on the table: any key (0 and UINT64_MAX too), indices kept,
 * clear keeps nothing, many keys past several growths. */
START_TEST(u64set_keys)
{
	struct u64set s = { 0 };

	ck_assert_int_eq(u64set_has(&s, 0), 0);
	ck_assert_uint_eq(u64set_index(&s, 5), HT_NONE);
	ck_assert_int_eq(u64set_add(&s, 0), 1);
	ck_assert_int_eq(u64set_add(&s, UINT64_MAX), 1);
	ck_assert_int_eq(u64set_add(&s, 0), 0);
	ck_assert_int_eq(u64set_add(&s, UINT64_MAX), 0);
	ck_assert_uint_eq(u64set_index(&s, UINT64_MAX), 1);
	for (uint64_t k = 1; k < 100000; k++)
		ck_assert_int_eq(u64set_add(&s, k * 4096), 1);
	ck_assert_uint_eq(s.n, 100001);
	for (uint64_t k = 1; k < 100000; k++) {
		ck_assert_uint_eq(u64set_index(&s, k * 4096), k + 1);
		ck_assert_int_eq(u64set_has(&s, k * 4096 + 1), 0);
	}
	u64set_clear(&s);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(u64set_has(&s, 4096), 0);
	ck_assert_int_eq(u64set_has(&s, 0), 0);
	ck_assert_int_eq(u64set_add(&s, 4096), 1);
	ck_assert_uint_eq(u64set_index(&s, 4096), 0);
	u64set_free(&s);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(u64set_has(&s, 4096), 0);
}
END_TEST

START_TEST(results_find_by_root_and_inode)
{
	/* Same inode numbers in two roots are different items; the loop
	 * every caller uses (over cap, skipping NULL) sees each once. */
	enum { N = 5000 };
	struct results rs;
	size_t seen = 0;

	res_init(&rs);
	ck_assert_ptr_null(res_find(&rs, 0, 1));
	for (uint64_t ino = 1; ino <= N; ino++) {
		struct item *a = res_get(&rs, 0, ino), *b = res_get(&rs, 5, ino);

		ck_assert_ptr_ne(a, b);
		ck_assert_uint_eq(a->ino, ino);
		ck_assert_uint_eq(b->root, 5);
		ck_assert_uint_eq(a->size, UINT64_MAX);
		ck_assert_ptr_eq(res_get(&rs, 0, ino), a);
	}
	ck_assert_uint_eq(rs.n, 2 * N);
	for (uint64_t ino = 1; ino <= N; ino++) {
		ck_assert_ptr_nonnull(res_find(&rs, 0, ino));
		ck_assert_uint_eq(res_find(&rs, 5, ino)->root, 5);
	}
	ck_assert_ptr_null(res_find(&rs, 0, N + 1));
	ck_assert_ptr_null(res_find(&rs, 1, 1));
	for (size_t i = 0; i < rs.cap; i++)
		if (rs.tab[i]) {
			ck_assert_ptr_eq(res_find(&rs, rs.tab[i]->root, rs.tab[i]->ino), rs.tab[i]);
			seen++;
		}
	ck_assert_uint_eq(seen, 2 * N);
	res_free(&rs);
	ck_assert_uint_eq(rs.n, 0);
}
END_TEST

START_TEST(paths_deduplicated_past_the_index_threshold)
{
	/* 16 paths and more switch to the index: duplicates added before and
	 * after the switch stay out; clearing starts over. */
	struct results rs;
	struct item *it;
	char p[32];

	res_init(&rs);
	it = res_get(&rs, 0, 12);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 1000; i++) {
			snprintf(p, sizeof(p), "d/link%d", i);
			item_add_path(it, p);
		}
	ck_assert_uint_eq(it->npaths, 1000);
	for (uint32_t i = 0; i < it->npaths; i++) {
		snprintf(p, sizeof(p), "d/link%u", i);
		ck_assert_str_eq(it->paths[i], p);
	}
	ck_assert_uint_ne(it->pidx.cap, 0);
	item_clear_paths(it);
	ck_assert_uint_eq(it->npaths, 0);
	ck_assert_uint_eq(it->pidx.cap, 0);
	item_add_path(it, "x");
	item_add_path(it, "x");
	ck_assert_uint_eq(it->npaths, 1);
	res_free(&rs);
}
END_TEST

Suite *suite_htab(void)
{
	Suite *s = suite_create("htab");
	TCase *tc = tcase_create("core");

	/* Quadratic probing on purpose: seconds under ASan on a busy machine. */
	tcase_set_timeout(tc, 30);

	tcase_add_test(tc, every_index_found_through_growth_and_collisions);
	tcase_add_test(tc, empty_table_finds_nothing);
	tcase_add_test(tc, hashes_spread_pairs_and_strings);
	tcase_add_test(tc, u64set_keys);
	tcase_add_test(tc, results_find_by_root_and_inode);
	tcase_add_test(tc, paths_deduplicated_past_the_index_threshold);
	suite_add_tcase(s, tc);
	return s;
}
