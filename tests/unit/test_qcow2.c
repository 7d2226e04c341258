// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The qcow2 wrapper of chj export: header fields, and every bit of the
 * bitmap read back from the file against a per-granule overlap test of the
 * ranges; then QEMU's own qemu-img check and info on the same file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "chj_qcow2.h"
#include "suites.h"

#define CS (1ull << CHJ_QCOW2_CLUSTER_BITS)

struct rl {
	const struct chj_range *r;
	size_t n, i;
};

static int next_range(void *ctx, struct chj_range *r)
{
	struct rl *l = ctx;

	if (l->i == l->n)
		return 0;
	*r = l->r[l->i++];
	return 1;
}

static char path[64];

static int make(uint64_t size, unsigned g, const struct chj_range *r, size_t n,
		struct chj_qcow2_stats *st, struct chj_error *e)
{
	struct chj_qcow2_opts o = { size, "/dev/null", "chj", g };
	struct rl l = { r, n, 0 };
	int fd, rc;

	strcpy(path, "/tmp/chj-qcow2-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	rc = chj_qcow2_write(fd, &o, next_range, &l, st, e);
	close(fd);
	return rc;
}


/* The file, whole, in memory. */
static uint8_t *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	rewind(f);
	b = malloc(*len);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

/* Find the bitmap table through the header and the bitmaps extension. */
static const uint8_t *bitmap_table(const uint8_t *b, size_t len, uint32_t *entries,
				   unsigned *gran)
{
	uint64_t off = be32(b + 100), dir = 0;

	ck_assert_int_eq(memcmp(b, "QFI\xfb", 4), 0);
	ck_assert_uint_eq(be32(b + 4), 3);
	ck_assert_uint_eq(be32(b + 20), CHJ_QCOW2_CLUSTER_BITS);
	ck_assert_uint_eq(be64(b + 72), 4);	/* external data file */
	ck_assert_uint_eq(be64(b + 88), 3);	/* bitmaps, raw data file */
	while (be32(b + off)) {
		if (be32(b + off) == 0x23852875) {
			ck_assert_uint_eq(be32(b + off + 8), 1);
			dir = be64(b + off + 24);
		}
		off += 8 + ((be32(b + off + 4) + 7) & ~7u);
		ck_assert_uint_lt(off, CS);
	}
	ck_assert_uint_ne(dir, 0);
	ck_assert_uint_lt(dir + 24, len);
	ck_assert_uint_eq(be32(b + dir + 12), 0);	/* flags: not in use, not auto */
	ck_assert_uint_eq(b[dir + 16], 1);
	ck_assert_int_eq(memcmp(b + dir + 24, "chj", 3), 0);
	*entries = be32(b + dir + 8);
	*gran = b[dir + 17];
	return b + be64(b + dir);
}

static int bit(const uint8_t *b, size_t len, const uint8_t *table, uint64_t i)
{
	uint64_t k = i / (CS * 8), ent = be64(table + 8 * k), off = ent & ~0x1ffull;

	if (!off)
		return ent & 1;
	ck_assert_uint_eq(off % CS, 0);
	ck_assert_uint_le(off + CS, len);
	return b[off + (i % (CS * 8)) / 8] >> (i % 8) & 1;
}

/* Bits against "granule i overlaps a range", and the dirty byte count. */
static void verify(uint64_t size, unsigned g, const struct chj_range *r, size_t n,
		   const struct chj_qcow2_stats *st)
{
	uint64_t gs = 1ull << g, granules = (size + gs - 1) / gs, dirty = 0;
	uint32_t entries;
	unsigned gran;
	size_t len;
	uint8_t *b = slurp(&len);
	const uint8_t *t = bitmap_table(b, len, &entries, &gran);

	ck_assert_uint_eq(gran, g);
	ck_assert_uint_eq(entries, (granules + CS * 8 - 1) / (CS * 8));
	for (uint64_t i = 0; i < granules; i++) {
		int want = 0;

		for (size_t j = 0; j < n; j++)
			if (r[j].len && i * gs < (r[j].start + r[j].len) * 512 &&
			    (i + 1) * gs > r[j].start * 512)
				want = 1;
		ck_assert_msg(bit(b, len, t, i) == want, "granule %llu: want %d",
			      (unsigned long long)i, want);
		if (want)
			dirty += (i + 1) * gs > size ? size - i * gs : gs;
	}
	ck_assert_uint_eq(st->dirty_bytes, dirty);
	free(b);
}

/* qemu-img (from make deps) must accept the image and see the bitmap. */
static void qemu_accepts(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "qemu-img check -q %s", path);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
	snprintf(cmd, sizeof(cmd),
		 "qemu-img info --output=json %s | grep -q '\"name\": \"chj\"'", path);
	ck_assert_msg(system(cmd) == 0, "qemu-img info shows no bitmap chj");
}

START_TEST(bits_round_outward)
{
	/* 100 MiB + 512: the last granule is partial */
	static const struct chj_range r[] = {
		{ 0, 1 }, { 7, 2 }, { 100, 8 }, { 1000, 1 }, { 1001, 30 },
		{ 20000, 100000 }, { 204800, 1 },
	};
	struct chj_qcow2_stats st;
	struct chj_error e;
	uint64_t size = (100ull << 20) + 512;

	for (unsigned g = 12; g <= 16; g += 4) {
		ck_assert_int_eq(make(size, g, r, 7, &st, &e), 0);
		verify(size, g, r, 7, &st);
		qemu_accepts();
		unlink(path);
	}
	/* no changes at all */
	ck_assert_int_eq(make(size, 12, r, 0, &st, &e), 0);
	verify(size, 12, r, 0, &st);
	ck_assert_uint_eq(st.data_clusters, 0);
	unlink(path);
}
END_TEST

START_TEST(large_origin_sparse_clusters)
{
	/* 1 TiB at 4 KiB: 16 bitmap clusters of 64 GiB each; cluster 1 all
	 * ones (entry 1, no data), cluster 3 one bit, the rest zero. */
	uint64_t cl = (CS * 8) << 12 >> 9;	/* sectors per bitmap cluster */
	struct chj_range r[] = { { cl, cl }, { 3 * cl + 8, 8 } };
	struct chj_qcow2_stats st;
	struct chj_error e;
	uint32_t entries;
	unsigned gran;
	size_t len;
	uint8_t *b;
	const uint8_t *t;

	ck_assert_int_eq(make(1ull << 40, 12, r, 2, &st, &e), 0);
	ck_assert_uint_eq(st.data_clusters, 1);
	ck_assert_uint_eq(st.dirty_bytes, (64ull << 30) + 4096);
	b = slurp(&len);
	t = bitmap_table(b, len, &entries, &gran);
	ck_assert_uint_eq(entries, 16);
	ck_assert_uint_eq(be64(t), 0);
	ck_assert_uint_eq(be64(t + 8), 1);
	ck_assert_uint_eq(be64(t + 16), 0);
	ck_assert_uint_ne(be64(t + 24), 0);
	ck_assert_int_eq(bit(b, len, t, 3 * CS * 8 + 1), 1);
	ck_assert_int_eq(bit(b, len, t, 3 * CS * 8), 0);
	ck_assert_int_eq(bit(b, len, t, 3 * CS * 8 + 2), 0);
	/* header, refcount table and block, L1, 2 L2, bitmap table, directory,
	 * one bitmap cluster */
	ck_assert_uint_eq(len, 9 * CS);
	free(b);
	qemu_accepts();
	unlink(path);
}
END_TEST

START_TEST(bad_arguments)
{
	static const struct chj_range beyond[] = { { 8, 9 } };
	struct chj_qcow2_opts o = { 8192, "relative", "chj", 12 };
	struct rl l = { beyond, 1, 0 };
	struct chj_error e;

	ck_assert_int_eq(make(8192, 12, beyond, 1, NULL, &e), CHJ_ERR_INVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "beyond the end"));
	unlink(path);
	ck_assert_int_eq(make(8192, 8, beyond, 0, NULL, &e), CHJ_ERR_INVAL);
	unlink(path);
	ck_assert_int_eq(make(1000, 12, beyond, 0, NULL, &e), CHJ_ERR_INVAL);
	unlink(path);
	/* 2^33 granules of 512 B: over QEMU's 512 MiB of bitmap clusters */
	ck_assert_int_eq(make(4ull << 40, 9, beyond, 0, NULL, &e), CHJ_ERR_INVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "coarser"));
	unlink(path);
	ck_assert_int_eq(chj_qcow2_write(-1, &o, next_range, &l, NULL, &e), CHJ_ERR_INVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "absolute"));
}
END_TEST

Suite *suite_qcow2(void)
{
	Suite *s = suite_create("qcow2");
	TCase *tc = tcase_create("qcow2");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, bits_round_outward);
	tcase_add_test(tc, large_origin_sparse_clusters);
	tcase_add_test(tc, bad_arguments);
	suite_add_tcase(s, tc);
	return s;
}
