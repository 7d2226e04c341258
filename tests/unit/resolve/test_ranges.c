// SPDX-License-Identifier: GPL-2.0 OR MIT
/* A file's changed ranges from its extents (fiemap_ranges). */
#include <linux/fiemap.h>
#include <string.h>

#include "resolve.h"
#include "suites.h"

static struct item it;
static struct rangeset chg;

static void setup(void)
{
	memset(&it, 0, sizeof(it));
	rs_init(&it.ranges);
	rs_init(&chg);
	/* Device bytes written since the epoch. */
	rs_add(&chg, 1 << 20, 4096);
	rs_add(&chg, (2 << 20) + 8192, 8192);
	rs_normalize(&chg);
}

static void teardown(void)
{
	rs_free(&it.ranges);
	rs_free(&chg);
}

/* Two extents: file [0, 64K) at 1 MiB, file [128K, 192K) at 2 MiB. */
static const struct fext ext[] = {
	{ 0, 1 << 20, 65536, 0 },
	{ 131072, 2 << 20, 65536, FIEMAP_EXTENT_LAST },
};

START_TEST(data_only)
{
	fiemap_ranges(&it, ext, 2, 200000, &chg, 0);
	ck_assert_uint_eq(it.ranges.n, 2);
	ck_assert_uint_eq(it.ranges.v[0].start, 0);
	ck_assert_uint_eq(it.ranges.v[0].len, 4096);
	ck_assert_uint_eq(it.ranges.v[1].start, 131072 + 8192);
	ck_assert_uint_eq(it.ranges.v[1].len, 8192);
}
END_TEST

START_TEST(mapping_changed_adds_holes)
{
	/* Holes [64K, 128K) and [192K, 200000) read as zeros: may be new. */
	fiemap_ranges(&it, ext, 2, 200000, &chg, 1);
	ck_assert_uint_eq(it.ranges.n, 4);
	ck_assert_uint_eq(it.ranges.v[0].start, 0);
	ck_assert_uint_eq(it.ranges.v[0].len, 4096);
	ck_assert_uint_eq(it.ranges.v[1].start, 65536);
	ck_assert_uint_eq(it.ranges.v[1].len, 65536);
	ck_assert_uint_eq(it.ranges.v[2].start, 131072 + 8192);
	ck_assert_uint_eq(it.ranges.v[2].len, 8192);
	ck_assert_uint_eq(it.ranges.v[3].start, 196608);
	ck_assert_uint_eq(it.ranges.v[3].len, 200000 - 196608);
}
END_TEST

START_TEST(unwritten_shared_uncertain)
{
	struct fext e[] = {
		{ 0, 5 << 20, 4096, FIEMAP_EXTENT_UNWRITTEN },
		{ 4096, 6 << 20, 4096, FIEMAP_EXTENT_SHARED },
		{ 8192, 0, 4096, FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_LAST },
	};

	/* Unchanged blocks: only the one without an address counts... */
	fiemap_ranges(&it, e, 3, 12288, &chg, 0);
	ck_assert_uint_eq(it.ranges.n, 1);
	ck_assert_uint_eq(it.ranges.v[0].start, 8192);
	rs_clear(&it.ranges);
	/* ...unless the mapping may have changed. */
	fiemap_ranges(&it, e, 3, 12288, &chg, 1);
	ck_assert_uint_eq(it.ranges.n, 1);
	ck_assert_uint_eq(it.ranges.v[0].start, 0);
	ck_assert_uint_eq(it.ranges.v[0].len, 12288);
}
END_TEST

START_TEST(clipped_at_size)
{
	fiemap_ranges(&it, ext, 2, 2000, &chg, 1);
	ck_assert_uint_eq(it.ranges.n, 1);
	ck_assert_uint_eq(it.ranges.v[0].len, 2000);
}
END_TEST

Suite *suite_ranges(void)
{
	Suite *s = suite_create("ranges");
	TCase *t = tcase_create("fiemap_ranges");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, data_only);
	tcase_add_test(t, mapping_changed_adds_holes);
	tcase_add_test(t, unwritten_shared_uncertain);
	tcase_add_test(t, clipped_at_size);
	suite_add_tcase(s, t);
	return s;
}
