// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Parsing of the target's table and status lines (no kernel needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "suites.h"
#include "testimg.h"

START_TEST(status_line)
{
	struct chj_dm_status s;
	struct chj_error e = { 0 };

	ck_assert_int_eq(chj_parse_status_params("8 5 2 100/262144 7/2037 ok", &s, &e), 0);
	ck_assert_uint_eq(s.region_sectors, 8);
	ck_assert_uint_eq(s.current_epoch, 5);
	ck_assert_uint_eq(s.oldest_epoch, 2);
	ck_assert_uint_eq(s.marked, 100);
	ck_assert_uint_eq(s.nr_regions, 262144);
	ck_assert_uint_eq(s.journal_used, 7);
	ck_assert_uint_eq(s.journal_blocks, 2037);
	ck_assert_int_eq(s.failed, 0);
	ck_assert_int_eq(chj_parse_status_params("8 5 2 100/262144 7/2037 fail\n", &s, &e), 0);
	ck_assert_int_eq(s.failed, 1);
}
END_TEST

START_TEST(status_line_bad)
{
	static const char *bad[] = {
		"", "8 5 2 100/262144 7/2037", "8 5 2 100 262144 7/2037 ok",
		"8 5 2 100/262144 7/2037 maybe", "8 5 2 100/262144 7/2037 ok extra",
		"x 5 2 100/262144 7/2037 ok",
	};
	struct chj_dm_status s;
	struct chj_error e = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(chj_parse_status_params(bad[i], &s, &e) == CHJ_ERR_INVAL,
			      "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(table_line)
{
	struct chj_dm_table t = { 0 };
	struct chj_error e = { 0 };

	ck_assert_int_eq(chj_parse_table_params("254:16 254:0 8", &t, &e), 0);
	ck_assert_uint_eq(t.metadata, makedev(254, 16));
	ck_assert_uint_eq(t.origin, makedev(254, 0));
	ck_assert_uint_eq(t.region_sectors, 8);
	ck_assert_uint_eq(t.mark_ahead, 0);
	ck_assert_str_eq(t.other_features, "");
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 64 0", &t, &e), 0);
	ck_assert_uint_eq(t.region_sectors, 64);
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 64 2 mark_ahead 256", &t, &e), 0);
	ck_assert_uint_eq(t.mark_ahead, 256);
	ck_assert_str_eq(t.other_features, "");
	/* Features this library does not know are kept, in order. */
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 64 4 zap mark_ahead 9 zip", &t, &e), 0);
	ck_assert_uint_eq(t.mark_ahead, 9);
	ck_assert_str_eq(t.other_features, "zap zip");
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 64 3 mark_ahead 9", &t, &e), CHJ_ERR_INVAL);
	/* chunk_sectors, as dm-chj echoes it (before mark_ahead). */
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 8 4 chunk_sectors 32768 mark_ahead 9", &t, &e), 0);
	ck_assert_uint_eq(t.chunk_sectors, 32768);
	ck_assert_uint_eq(t.mark_ahead, 9);
	ck_assert_str_eq(t.other_features, "");
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 8", &t, &e), 0);
	ck_assert_uint_eq(t.chunk_sectors, 0);
	ck_assert_int_eq(chj_parse_table_params("7:1 7:2 12", &t, &e), CHJ_ERR_INVAL);
	ck_assert_int_eq(chj_parse_table_params("7:1 8", &t, &e), CHJ_ERR_INVAL);
	ck_assert_int_eq(chj_parse_table_params("/nonexistent 7:2 8", &t, &e), CHJ_ERR_INVAL);
}
END_TEST

/* The chunk shift dm-chj derives from a table's chunk_sectors. */
START_TEST(chunk_shift)
{
	/* 4 KiB regions: default 4 MiB = 2^10 regions; 16 MiB = 2^12. */
	ck_assert_uint_eq(chj_chunk_shift(8, 0, 1000), 10);
	ck_assert_uint_eq(chj_chunk_shift(8, 32768, 1000), 12);
	ck_assert_uint_eq(chj_chunk_shift(8, 8, 1000), 0);
	/* Regions bigger than the default chunk: one region per chunk. */
	ck_assert_uint_eq(chj_chunk_shift(16384, 0, 1000), 0);
	/* 1 TiB of 4 KiB regions: raised so 28480 chunks hold it (64 MiB). */
	ck_assert_uint_eq(chj_chunk_shift(8, 0, 1ull << 28), 14);
	ck_assert_uint_eq(chj_chunk_shift(8, 0, 1ull << 28), chj_default_chunk_shift(8, 1ull << 28));
}
END_TEST

/* The table a create loads, parsed back, is the same table. */
START_TEST(table_round_trip)
{
	static const char *lines[] = {
		"7:1 7:2 8", "7:1 7:2 64 2 mark_ahead 256", "7:1 7:2 64 3 mark_ahead 1 zip",
		"7:1 7:2 64 1 zip", "7:1 7:2 8 2 chunk_sectors 32768",
		"7:1 7:2 8 5 chunk_sectors 16 mark_ahead 4 zip",
	};
	struct chj_dm_table t = { 0 };
	struct chj_error e = { 0 };
	char buf[256];

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		ck_assert_int_eq(chj_parse_table_params(lines[i], &t, &e), 0);
		ck_assert_int_eq(chj_dm_table_params(&t, buf, sizeof(buf)), 0);
		ck_assert_str_eq(buf, lines[i]);
	}
	ck_assert_int_eq(chj_dm_table_params(&t, buf, 8), -1);
}
END_TEST

/*
 * chj status names the mount of a device that bypasses the tracker: the
 * kernel writes a mount point's space, tab, newline and backslash as
 * octal escapes in mountinfo, and the name printed is the real one.
 */
START_TEST(mount_point_escaped)
{
	char path[] = "/tmp/chj-mountinfo-XXXXXX", mnt[256];
	FILE *f;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fputs("22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n", f);
	fputs("31 1 253:2 / /mnt/first\\040copy rw,relatime shared:1 - ext4 /dev/mapper/b rw\n", f);
	fputs("32 1 253:2 / /mnt/second rw,relatime shared:1 - ext4 /dev/mapper/b rw\n", f);
	fputs("33 1 253:3 /sub /mnt/tab\\011and\\134slash rw - xfs /dev/dm-3 rw\n", f);
	fclose(f);
	ck_assert_int_eq(chj_mount_point(path, makedev(253, 2), mnt, sizeof(mnt)), 1);
	ck_assert_str_eq(mnt, "/mnt/first copy");
	ck_assert_int_eq(chj_mount_point(path, makedev(253, 3), mnt, sizeof(mnt)), 1);
	ck_assert_str_eq(mnt, "/mnt/tab\tand\\slash");
	ck_assert_int_eq(chj_mount_point(path, makedev(253, 4), mnt, sizeof(mnt)), 0);
	unlink(path);
	ck_assert_int_eq(chj_mount_point(path, makedev(253, 2), mnt, sizeof(mnt)), -1);
}
END_TEST

/*
 * A btrfs mount shows an anonymous maj:min: chj status finds it by its
 * source, a block node of the device.  Needs root for the node (skipped
 * otherwise).
 */
START_TEST(mount_point_by_source)
{
	char dir[] = "/tmp/chj-mounts-XXXXXX", node[64], path[64], mnt[256];
	FILE *f;

	if (geteuid())
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(node, sizeof(node), "%s/by name", dir);
	snprintf(path, sizeof(path), "%s/mountinfo", dir);
	ck_assert_int_eq(mknod(node, S_IFBLK | 0600, makedev(253, 7)), 0);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("40 1 0:45 / /mnt/other rw - btrfs /dev/mapper/other rw\n", f);
	fprintf(f, "41 1 0:46 / /mnt/btr\\040fs rw - btrfs %s/by\\040name rw\n", dir);
	fclose(f);
	ck_assert_int_eq(chj_mount_point(path, makedev(253, 7), mnt, sizeof(mnt)), 1);
	ck_assert_str_eq(mnt, "/mnt/btr fs");
	ck_assert_int_eq(chj_mount_point(path, makedev(253, 8), mnt, sizeof(mnt)), 0);
	ck_assert_int_eq(chj_mount_is_of(makedev(0, 46), node, makedev(253, 7)), 1);
	ck_assert_int_eq(chj_mount_is_of(makedev(0, 46), path, makedev(253, 7)), 0);
	ck_assert_int_eq(chj_mount_is_of(makedev(0, 46), NULL, makedev(253, 7)), 0);
	ck_assert_int_eq(chj_mount_is_of(makedev(253, 7), NULL, makedev(253, 7)), 1);
	unlink(node);
	unlink(path);
	rmdir(dir);
}
END_TEST

Suite *suite_dmparse(void)
{
	Suite *s = suite_create("dm-parse");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, status_line);
	tcase_add_test(tc, status_line_bad);
	tcase_add_test(tc, table_line);
	tcase_add_test(tc, table_round_trip);
	tcase_add_test(tc, chunk_shift);
	tcase_add_test(tc, mount_point_escaped);
	tcase_add_test(tc, mount_point_by_source);
	suite_add_tcase(s, tc);
	return s;
}
