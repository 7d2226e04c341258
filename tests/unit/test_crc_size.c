// SPDX-License-Identifier: GPL-2.0 OR MIT
/* CRC-32C vectors, byte-order helpers and size/number parsing. */
#include <string.h>

#include "bytes.h"
#include "suites.h"
#include "testimg.h"

START_TEST(crc_known_vectors)
{
	uint8_t buf[64];

	ck_assert_uint_eq(chj_crc32c("123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(chj_crc32c("", 0), 0);
	/* RFC 3720 (iSCSI) B.4 vectors: 32 bytes of 0x00, 0xff, 0..31. */
	memset(buf, 0, 32);
	ck_assert_uint_eq(chj_crc32c(buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, 32);
	ck_assert_uint_eq(chj_crc32c(buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = i;
	ck_assert_uint_eq(chj_crc32c(buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = 31 - i;
	ck_assert_uint_eq(chj_crc32c(buf, 32), 0x113FDB5Cu);
}
END_TEST

/* Slice-by-8 must agree with itself at every alignment and length. */
START_TEST(crc_alignment_independent)
{
	uint8_t buf[300];

	for (int i = 0; i < 300; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (int off = 0; off < 9; off++) {
		uint8_t copy[300];

		memcpy(copy + off, buf, 200);
		ck_assert_uint_eq(chj_crc32c(copy + off, 200), chj_crc32c(buf, 200));
	}
	ck_assert_uint_ne(chj_crc32c(buf, 200), chj_crc32c(buf, 199));
	ck_assert_uint_eq(chj_block_csum(buf, 100), chj_crc32c(buf + 4, 96));
}
END_TEST

START_TEST(size_parse_good)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "512", 512 }, { "4K", 4096 }, { "4k", 4096 },
		{ "4KiB", 4096 }, { "4KB", 4096 }, { "4kib", 4096 }, { "1M", 1 << 20 },
		{ "3G", 3ull << 30 }, { "1T", 1ull << 40 }, { "2P", 2ull << 50 },
		{ "512B", 512 }, { "16383P", 16383ull << 50 },
		{ "18446744073709551615", UINT64_MAX },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 1234;

		ck_assert_msg(chj_parse_size(ok[i].s, &v) == 0, "%s refused", ok[i].s);
		ck_assert_uint_eq(v, ok[i].v);
	}
}
END_TEST

START_TEST(size_parse_bad)
{
	static const char *bad[] = {
		"", "K", "-1", "1.5G", " 1", "1 ", "1X", "1KK", "1iB", "1Ki",
		"1KiBB", "0x10", "16384P", "18446744073709551616", "99999999999999999999999",
		"1e3", "+5",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 77;

		ck_assert_msg(chj_parse_size(bad[i], &v) != 0, "'%s' accepted", bad[i]);
		ck_assert_uint_eq(v, 77);
	}
	ck_assert_int_ne(chj_parse_size(NULL, NULL), 0);
}
END_TEST

START_TEST(u64_parse)
{
	uint64_t v;

	ck_assert_int_eq(chj_parse_u64("42", &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_ne(chj_parse_u64("4 2", &v), 0);
	ck_assert_int_ne(chj_parse_u64("-4", &v), 0);
	ck_assert_int_ne(chj_parse_u64("", &v), 0);
	ck_assert_int_ne(chj_parse_u64("18446744073709551616", &v), 0);
}
END_TEST

START_TEST(human_sizes)
{
	char b[32];

	ck_assert_str_eq(chj_human_size(512, b, sizeof(b)), "512 B");
	ck_assert_str_eq(chj_human_size(4096, b, sizeof(b)), "4 KiB");
	ck_assert_str_eq(chj_human_size(3ull << 39, b, sizeof(b)), "1.5 TiB");
}
END_TEST

START_TEST(default_region_size)
{
	int raised;

	ck_assert_uint_eq(chj_default_region_sectors(1ull << 21, &raised), 8);	/* 1 GiB */
	ck_assert_int_eq(raised, 0);
	/*
	 * dm-chj allocates two region bitmaps (bits and durable): 1 TiB at
	 * 4 KiB is exactly 2 x 32 MiB, not raised; a sector more is.
	 */
	ck_assert_uint_eq(chj_default_region_sectors(1ull << 31, &raised), 8);
	ck_assert_int_eq(raised, 0);
	ck_assert_uint_eq(chj_default_region_sectors((1ull << 31) + 1, &raised), 16);
	ck_assert_int_eq(raised, 1);
	ck_assert_uint_eq(chj_default_region_sectors(1ull << 32, &raised), 16);	/* 2 TiB */
	ck_assert_uint_eq(chj_default_region_sectors(1ull << 40, &raised), 4096);	/* 512 TiB */
	ck_assert_uint_le(2 * chj_regions_for(1ull << 40, 4096) / 8, 64ull << 20);
}
END_TEST

/* bytes.h: loads and stores at odd offsets, both byte orders, exact bytes. */
START_TEST(byte_order_helpers)
{
	static const unsigned char le[8] = { 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01 };
	unsigned char buf[9] = { 0 };

	ck_assert_uint_eq(le16(le), 0x0708);
	ck_assert_uint_eq(le32(le), 0x05060708u);
	ck_assert_uint_eq(le64(le), 0x0102030405060708ull);
	ck_assert_uint_eq(be16(le), 0x0807);
	ck_assert_uint_eq(be32(le), 0x08070605u);
	ck_assert_uint_eq(be64(le), 0x0807060504030201ull);
	put_le64(buf + 1, 0x0102030405060708ull);
	ck_assert_int_eq(memcmp(buf + 1, le, 8), 0);
	ck_assert_uint_eq(le64(buf + 1), 0x0102030405060708ull);
	put_be64(buf + 1, 0x0807060504030201ull);
	ck_assert_int_eq(memcmp(buf + 1, le, 8), 0);
	put_be32(buf + 1, 0xa1b2c3d4u);
	ck_assert_uint_eq(buf[1], 0xa1);
	ck_assert_uint_eq(buf[4], 0xd4);
	ck_assert_uint_eq(be32(buf + 1), 0xa1b2c3d4u);
	put_le32(buf + 1, 0xa1b2c3d4u);
	ck_assert_uint_eq(buf[1], 0xd4);
	ck_assert_uint_eq(le32(buf + 1), 0xa1b2c3d4u);
	ck_assert_uint_eq(buf[0], 0);	/* nothing written before p */
}
END_TEST

Suite *suite_crc(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("crc");

	tcase_add_test(tc, crc_known_vectors);
	tcase_add_test(tc, crc_alignment_independent);
	tcase_add_test(tc, byte_order_helpers);
	suite_add_tcase(s, tc);
	return s;
}

Suite *suite_size(void)
{
	Suite *s = suite_create("size");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, size_parse_good);
	tcase_add_test(tc, size_parse_bad);
	tcase_add_test(tc, u64_parse);
	tcase_add_test(tc, human_sizes);
	tcase_add_test(tc, default_region_size);
	suite_add_tcase(s, tc);
	return s;
}
