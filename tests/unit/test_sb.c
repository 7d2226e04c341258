// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Superblocks: format round trip, copy selection, every bad field. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "suites.h"
#include "testimg.h"

#define DEV_BLOCKS 64
#define ORIGIN (1ull << 20)	/* 512 MiB: 131072 regions, 5 bitmap blocks */

static struct timg T;

static void setup(void)
{
	timg_init(&T, DEV_BLOCKS, ORIGIN, 8);
}

static void teardown(void)
{
	timg_free(&T);
}

START_TEST(format_layout)
{
	struct chj_sb *sb = &T.sb;

	ck_assert_uint_eq(sb->seq, 1);
	ck_assert_uint_eq(sb->copy, 1);
	ck_assert_uint_eq(sb->region_sectors, 8);
	ck_assert_uint_eq(sb->nr_regions, ORIGIN / 8);
	ck_assert_uint_eq(sb->origin_sectors, ORIGIN);
	ck_assert_uint_eq(sb->bitmap_start, 2);
	ck_assert_uint_eq(sb->bitmap_blocks, chj_bitmap_blocks_for(ORIGIN / 8));
	ck_assert_uint_eq(sb->journal_start, 2 + sb->bitmap_blocks);
	ck_assert_uint_eq(sb->journal_start + sb->journal_blocks, DEV_BLOCKS);
	ck_assert_uint_eq(sb->metadata_blocks, DEV_BLOCKS);
	ck_assert_uint_eq(sb->current_epoch, 1);
	ck_assert_uint_eq(sb->oldest_epoch, 1);
	ck_assert_uint_eq(sb->journal_head, 0);
	ck_assert_uint_eq(sb->journal_tail, 0);
	ck_assert_uint_eq(sb->format_time, 1700000000);
	/* RFC 4122 version 4 uuid. */
	ck_assert_uint_eq(sb->uuid[6] >> 4, 4);
	/* Both copies valid, and each passes the shared header's check. */
	for (unsigned i = 0; i < 2; i++) {
		struct chj_superblock *r = timg_block(&T, i);

		ck_assert_uint_eq(chj_le32(r->magic), CHJ_SB_MAGIC);
		ck_assert_uint_eq(chj_le64(r->seq), i);
		ck_assert_ptr_null(chj_sb_check(r, DEV_BLOCKS));
	}
}
END_TEST

START_TEST(format_too_small)
{
	struct timg t2 = { 0 };
	uint8_t *buf = calloc(1, 8 * CHJ_BLOCK_SIZE);
	struct chj_meta *m;
	struct chj_error e = { 0 };
	struct chj_format_opts o = { .origin_sectors = ORIGIN, .region_sectors = 8 };

	(void)t2;
	ck_assert_int_eq(chj_meta_open_mem(&m, buf, 8 * CHJ_BLOCK_SIZE, 1, &e), 0);
	ck_assert_int_eq(chj_format(m, &o, &e), CHJ_ERR_INVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "too small"));
	o.region_sectors = 12;
	ck_assert_int_eq(chj_format(m, &o, &e), CHJ_ERR_INVAL);
	o.region_sectors = 8;
	o.origin_sectors = 0;
	ck_assert_int_eq(chj_format(m, &o, &e), CHJ_ERR_INVAL);
	chj_meta_close(m);
	free(buf);
}
END_TEST

START_TEST(highest_valid_seq_wins)
{
	struct chj_sb sb = T.sb;
	struct chj_error e = { 0 };

	sb.current_epoch = 5;
	sb.oldest_epoch = 5;
	ck_assert_int_eq(chj_sb_commit(T.m, &sb, &e), 0);	/* seq 2 -> block 0 */
	ck_assert_uint_eq(sb.seq, 2);
	ck_assert_uint_eq(sb.copy, 0);
	timg_reload(&T);
	ck_assert_uint_eq(T.sb.seq, 2);
	ck_assert_uint_eq(T.sb.current_epoch, 5);
	/* Tear the newest copy: the previous one is in force again. */
	((uint8_t *)timg_block(&T, 0))[100] ^= 1;
	timg_reload(&T);
	ck_assert_uint_eq(T.sb.seq, 1);
	ck_assert_uint_eq(T.sb.current_epoch, 1);
}
END_TEST

START_TEST(misplaced_copy_refused)
{
	struct chj_sb_copies c;
	struct chj_error e = { 0 };
	struct chj_superblock *r = timg_block(&T, 0);

	/* A valid superblock with an odd seq in block 0 is not trusted. */
	r->seq = chj_cpu64(7);
	timg_reseal(r, CHJ_SB_BYTES);
	ck_assert_int_eq(chj_sb_read_copies(T.m, &c, &e), 0);
	ck_assert_int_eq(c.state[0], CHJ_SB_MISPLACED);
	ck_assert_int_eq(c.best, 1);
}
END_TEST

START_TEST(no_valid_copy)
{
	struct chj_sb sb;
	struct chj_error e = { 0 };

	((struct chj_superblock *)timg_block(&T, 0))->magic = 0;
	((uint8_t *)timg_block(&T, 1))[200] ^= 0x10;	/* csum */
	ck_assert_int_eq(chj_sb_read(T.m, &sb, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "bad magic"));
	ck_assert_ptr_nonnull(strstr(e.msg, "checksum"));
	memset(T.buf, 0, 2 * CHJ_BLOCK_SIZE);
	ck_assert_int_eq(chj_sb_read(T.m, &sb, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "not formatted"));
}
END_TEST

/* Each mutation applied to both copies must make the metadata unusable. */
typedef void (*mutate_fn)(struct chj_sb *sb);
#define MUT(name, body) static void name(struct chj_sb *sb) { body; }
MUT(m_flags, sb->flags = 0x100)
MUT(m_rs_zero, sb->region_sectors = 0)
MUT(m_rs_small, sb->region_sectors = 4)
MUT(m_rs_npow2, sb->region_sectors = 24)
MUT(m_rs_huge, sb->region_sectors = CHJ_MAX_REGION_SECTORS * 2)
MUT(m_nr_zero, sb->nr_regions = 0)
MUT(m_nr_huge, sb->nr_regions = (1ull << 40) + 1)
MUT(m_nr_max, sb->nr_regions = UINT64_MAX)
MUT(m_origin_zero, sb->origin_sectors = 0)
MUT(m_origin_big, sb->origin_sectors = sb->nr_regions * sb->region_sectors + 1)
MUT(m_origin_small, sb->origin_sectors = (sb->nr_regions - 1) * sb->region_sectors)
MUT(m_mb_big, sb->metadata_blocks = DEV_BLOCKS + 1; sb->journal_blocks++)
MUT(m_bs, sb->bitmap_start = 3; sb->journal_start++; sb->journal_blocks--)
MUT(m_bb, sb->bitmap_blocks++; sb->journal_start++; sb->journal_blocks--)
MUT(m_js, sb->journal_start++)
MUT(m_jb_small, sb->journal_blocks = 7; sb->metadata_blocks = sb->journal_start + 7)
MUT(m_jb_sum, sb->journal_blocks--)
MUT(m_cur_zero, sb->current_epoch = 0; sb->oldest_epoch = 0)
MUT(m_old_zero, sb->oldest_epoch = 0)
MUT(m_old_gt_cur, sb->oldest_epoch = 3; sb->current_epoch = 2)
MUT(m_head_gt_tail, sb->journal_head = 5; sb->journal_tail = 4)
MUT(m_journal_overfull, sb->current_epoch = 9; sb->journal_tail = sb->journal_blocks + 1)
MUT(m_journal_unretained, sb->journal_tail = 1)
MUT(m_huge_everything, sb->nr_regions = 1ull << 40; sb->origin_sectors = 1ull << 43;
    sb->bitmap_blocks = chj_bitmap_blocks_for(1ull << 40);
    sb->journal_start = 2 + sb->bitmap_blocks; sb->journal_blocks = 1ull << 50;
    sb->metadata_blocks = sb->journal_start + sb->journal_blocks)
/* journal_start past the device and journal_blocks wrapping the sum. */
MUT(m_journal_wrap, sb->nr_regions = 1ull << 40; sb->origin_sectors = 1ull << 43;
    sb->bitmap_blocks = chj_bitmap_blocks_for(1ull << 40);
    sb->journal_start = 2 + sb->bitmap_blocks;
    sb->journal_blocks = DEV_BLOCKS - sb->journal_start)

static const struct { const char *name; mutate_fn fn; const char *why; } muts[] = {
	{ "flags", m_flags, "flags" },
	{ "rs 0", m_rs_zero, "region size" },
	{ "rs 4", m_rs_small, "region size" },
	{ "rs 24", m_rs_npow2, "region size" },
	{ "rs 4M", m_rs_huge, "region size" },
	{ "nr 0", m_nr_zero, "region count" },
	{ "nr 2^40+1", m_nr_huge, "region count" },
	{ "nr max", m_nr_max, "region count" },
	{ "origin 0", m_origin_zero, "origin size" },
	{ "origin big", m_origin_big, "origin size" },
	{ "origin small", m_origin_small, "origin size" },
	{ "metadata blocks", m_mb_big, "smaller than" },
	{ "bitmap start", m_bs, "bitmap area" },
	{ "bitmap blocks", m_bb, "bitmap area" },
	{ "journal start", m_js, "journal area" },
	{ "journal small", m_jb_small, "journal area" },
	{ "journal sum", m_jb_sum, "journal area" },
	{ "current 0", m_cur_zero, "epoch" },
	{ "oldest 0", m_old_zero, "epoch" },
	{ "oldest > current", m_old_gt_cur, "epoch" },
	{ "head > tail", m_head_gt_tail, "journal pointers" },
	{ "overfull", m_journal_overfull, "journal pointers" },
	{ "unretained", m_journal_unretained, "not retained" },
	{ "huge", m_huge_everything, "smaller than" },
	{ "journal size wraps", m_journal_wrap, "journal area" },
};

START_TEST(bad_field)
{
	struct chj_sb sb = T.sb, got;
	struct chj_error e = { 0 };
	struct chj_changes *c = NULL;

	muts[_i].fn(&sb);
	timg_write_sb_raw(&T, &sb);
	ck_assert_msg(chj_sb_read(T.m, &got, &e) == CHJ_ERR_CORRUPT, "%s accepted", muts[_i].name);
	ck_assert_msg(strstr(e.msg, muts[_i].why), "%s: message '%s'", muts[_i].name, e.msg);
	ck_assert_int_eq(chj_changes_since(T.m, 1, &c, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_null(c);
}
END_TEST

START_TEST(bad_field_in_one_copy_falls_back)
{
	struct chj_sb sb = T.sb, got;
	struct chj_error e = { 0 };

	muts[_i].fn(&sb);
	sb.seq = 3;	/* newer than the good copy 0 (seq 0), in block 1 */
	chj_sb_encode(&sb, timg_block(&T, 1));
	ck_assert_int_eq(chj_sb_read(T.m, &got, &e), 0);
	ck_assert_uint_eq(got.seq, 0);
}
END_TEST

START_TEST(version_and_block_size)
{
	struct chj_sb got;
	struct chj_error e = { 0 };

	for (unsigned i = 0; i < 2; i++) {
		struct chj_superblock *r = timg_block(&T, i);

		r->version = chj_cpu32(CHJ_VERSION + 1);
		timg_reseal(r, CHJ_SB_BYTES);
	}
	ck_assert_int_eq(chj_sb_read(T.m, &got, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "version"));
	for (unsigned i = 0; i < 2; i++) {
		struct chj_superblock *r = timg_block(&T, i);

		r->version = chj_cpu32(CHJ_VERSION);
		r->block_size = chj_cpu32(512);
		timg_reseal(r, CHJ_SB_BYTES);
	}
	ck_assert_int_eq(chj_sb_read(T.m, &got, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "block size"));
}
END_TEST

START_TEST(truncated_image)
{
	struct chj_meta *m;
	struct chj_sb sb;
	struct chj_error e = { 0 };

	/* The same bytes, seen as a shorter device: metadata_blocks too big. */
	ck_assert_int_eq(chj_meta_open_mem(&m, T.buf, (DEV_BLOCKS - 1) * CHJ_BLOCK_SIZE + 100, 0, &e), 0);
	ck_assert_int_eq(chj_sb_read(m, &sb, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "smaller than"));
	chj_meta_close(m);
	/* Less than the two superblocks. */
	ck_assert_int_eq(chj_meta_open_mem(&m, T.buf, CHJ_BLOCK_SIZE + 4000, 0, &e), 0);
	ck_assert_int_eq(chj_sb_read(m, &sb, &e), CHJ_ERR_CORRUPT);
	ck_assert_ptr_nonnull(strstr(e.msg, "too small"));
	chj_meta_close(m);
	ck_assert_int_eq(chj_meta_open_mem(&m, T.buf, 0, 0, &e), 0);
	ck_assert_int_eq(chj_sb_read(m, &sb, &e), CHJ_ERR_CORRUPT);
	chj_meta_close(m);
}
END_TEST

START_TEST(file_image_roundtrip)
{
	char path[] = "/tmp/chj-unit-XXXXXX";
	int fd = mkstemp(path);
	struct chj_meta *m;
	struct chj_sb sb;
	struct chj_error e = { 0 };

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, T.buf, T.len), (ssize_t)T.len);
	close(fd);
	ck_assert_int_eq(chj_meta_open(&m, path, 0, &e), 0);
	ck_assert_int_eq(chj_sb_read(m, &sb, &e), 0);
	ck_assert_uint_eq(sb.nr_regions, T.sb.nr_regions);
	ck_assert_int_ne(chj_sb_commit(m, &sb, &e), 0);	/* read-only */
	chj_meta_close(m);
	/* Truncate it: a superblock that needs more blocks is refused. */
	ck_assert_int_eq(truncate(path, (DEV_BLOCKS - 2) * CHJ_BLOCK_SIZE), 0);
	ck_assert_int_eq(chj_meta_open(&m, path, 0, &e), 0);
	ck_assert_int_eq(chj_sb_read(m, &sb, &e), CHJ_ERR_CORRUPT);
	chj_meta_close(m);
	unlink(path);
	ck_assert_int_eq(chj_meta_open(&m, path, 0, &e), CHJ_ERR_NOT_FOUND);
}
END_TEST

START_TEST(commit_refuses_invalid)
{
	struct chj_sb sb = T.sb;
	struct chj_error e = { 0 };

	sb.oldest_epoch = sb.current_epoch + 1;
	ck_assert_int_eq(chj_sb_commit(T.m, &sb, &e), CHJ_ERR_INVAL);
	timg_reload(&T);
	ck_assert_uint_eq(T.sb.seq, 1);
}
END_TEST

Suite *suite_sb(void)
{
	Suite *s = suite_create("superblock");
	TCase *tc = tcase_create("sb");
	int n = sizeof(muts) / sizeof(muts[0]);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, format_layout);
	tcase_add_test(tc, format_too_small);
	tcase_add_test(tc, highest_valid_seq_wins);
	tcase_add_test(tc, misplaced_copy_refused);
	tcase_add_test(tc, no_valid_copy);
	tcase_add_loop_test(tc, bad_field, 0, n);
	tcase_add_loop_test(tc, bad_field_in_one_copy_falls_back, 0, n);
	tcase_add_test(tc, version_and_block_size);
	tcase_add_test(tc, truncated_image);
	tcase_add_test(tc, file_image_roundtrip);
	tcase_add_test(tc, commit_refuses_invalid);
	suite_add_tcase(s, tc);
	return s;
}
