// SPDX-License-Identifier: GPL-2.0 OR MIT
#include <stdlib.h>
#include <string.h>

#include "testimg.h"

void timg_init(struct timg *t, uint64_t dev_blocks, uint64_t origin_sectors,
	       uint32_t region_sectors)
{
	struct chj_format_opts o = { .origin_sectors = origin_sectors,
				     .region_sectors = region_sectors,
				     .now = 1700000000 };
	struct chj_error e = { 0 };

	memset(t, 0, sizeof(*t));
	t->len = dev_blocks * CHJ_BLOCK_SIZE;
	t->buf = calloc(1, t->len);
	ck_assert_ptr_nonnull(t->buf);
	ck_assert_int_eq(chj_meta_open_mem(&t->m, t->buf, t->len, 1, &e), 0);
	ck_assert_msg(chj_format(t->m, &o, &e) == 0, "format: %s", e.msg);
	timg_reload(t);
}

void timg_free(struct timg *t)
{
	chj_meta_close(t->m);
	free(t->buf);
}

void timg_reload(struct timg *t)
{
	struct chj_error e = { 0 };

	ck_assert_msg(chj_sb_read(t->m, &t->sb, &e) == 0, "sb: %s", e.msg);
}

void *timg_block(struct timg *t, uint64_t nr)
{
	ck_assert_uint_lt(nr, t->len / CHJ_BLOCK_SIZE);
	return t->buf + nr * CHJ_BLOCK_SIZE;
}

struct chj_journal_block *timg_jblock(struct timg *t, uint64_t seq)
{
	return timg_block(t, t->sb.journal_start + seq % t->sb.journal_blocks);
}

void timg_reseal(void *block, size_t len)
{
	uint32_t c = chj_block_csum(block, len);

	((struct chj_superblock *)block)->csum = chj_cpu32(c);
}

void timg_mark(struct timg *t, uint64_t r, uint64_t n)
{
	for (uint64_t i = r; i < r + n; i++) {
		uint64_t idx = i / CHJ_REGIONS_PER_BLOCK, bit = i % CHJ_REGIONS_PER_BLOCK;
		struct chj_bitmap_block *b = timg_block(t, t->sb.bitmap_start + idx);

		ck_assert_uint_lt(i, t->sb.nr_regions);
		/* A block stamped with an older epoch starts empty. */
		if (chj_bitmap_block_state(b, t->sb.current_epoch) != CHJ_BM_CURRENT)
			chj_bitmap_block_fill(b, t->sb.current_epoch, idx, t->sb.nr_regions, 0);
		b->bits[bit / 8] |= 1u << (bit % 8);
		timg_reseal(b, CHJ_BLOCK_SIZE);
	}
}

/* Drop the oldest record: head moves past its LAST block. */
static void drop_oldest(struct timg *t)
{
	struct chj_journal_block *b;
	uint64_t epoch;

	ck_assert_uint_lt(t->sb.journal_head, t->sb.journal_tail);
	do {
		b = timg_jblock(t, t->sb.journal_head++);
		epoch = chj_le64(b->epoch);
	} while (!(chj_le32(b->flags) & CHJ_JF_LAST));
	t->sb.oldest_epoch = epoch + 1;
}

/* Current epoch's marked regions as extents (the record to append). */
static size_t current_extents(struct timg *t, struct chj_extent **out)
{
	struct chj_bits bits;
	struct chj_bmscan s = { .out = &bits };
	struct chj_error e = { 0 };
	uint64_t pos = 0, st, n;
	size_t cnt = 0;
	struct chj_extent *v = NULL;

	ck_assert_int_eq(chj_bits_init(&bits, t->sb.nr_regions, &e), 0);
	ck_assert_int_eq(chj_bitmap_scan(t->m, &t->sb, &s, &e), 0);
	while (chj_bits_next_run(&bits, &pos, &st, &n)) {
		v = realloc(v, (cnt + 1) * sizeof(*v));
		v[cnt].start = chj_cpu64(st);
		v[cnt].count = chj_cpu64(n);
		cnt++;
	}
	chj_bits_free(&bits);
	*out = v;
	return cnt;
}

uint64_t timg_checkpoint(struct timg *t)
{
	struct chj_extent *ext;
	struct chj_error e = { 0 };
	size_t n = current_extents(t, &ext), done = 0;
	uint64_t blocks = chj_journal_blocks_for(n);

	ck_assert_uint_le(blocks, t->sb.journal_blocks);
	/* The kernel commits the drop before it reuses the blocks. */
	if (t->sb.journal_tail - t->sb.journal_head + blocks > t->sb.journal_blocks) {
		while (t->sb.journal_tail - t->sb.journal_head + blocks > t->sb.journal_blocks)
			drop_oldest(t);
		ck_assert_int_eq(chj_sb_commit(t->m, &t->sb, &e), 0);
	}
	for (uint64_t k = 0; k < blocks; k++) {
		uint64_t seq = t->sb.journal_tail + k;
		struct chj_journal_block *b = timg_jblock(t, seq);
		size_t take = n - done < CHJ_JOURNAL_EXTENTS ? n - done : CHJ_JOURNAL_EXTENTS;

		memset(b, 0, sizeof(*b));
		b->seq = chj_cpu64(seq);
		b->epoch = chj_cpu64(t->sb.current_epoch);
		b->nr_extents = chj_cpu32(take);
		b->flags = chj_cpu32((k == 0 ? CHJ_JF_FIRST : 0) |
				     (k == blocks - 1 ? CHJ_JF_LAST : 0));
		memcpy(b->ext, ext + done, take * sizeof(*ext));
		chj_journal_block_seal(b);
		done += take;
	}
	free(ext);
	t->sb.journal_tail += blocks;
	t->sb.current_epoch++;
	ck_assert_msg(chj_sb_commit(t->m, &t->sb, &e) == 0, "commit: %s", e.msg);
	return t->sb.current_epoch;
}

void timg_write_sb_raw(struct timg *t, const struct chj_sb *sb)
{
	for (unsigned i = 0; i < CHJ_SB_COPIES; i++) {
		struct chj_sb s = *sb;

		s.seq = sb->seq - sb->seq % 2 + i;
		if (i > sb->seq % 2)
			s.seq -= 2;	/* keep the in-force copy the newest */
		chj_sb_encode(&s, timg_block(t, i));
	}
}

int timg_changes(struct timg *t, uint64_t since, struct chj_bits *out)
{
	struct chj_changes *c;
	struct chj_error e = { 0 };
	struct chj_range r;
	uint64_t cur = 0, rs = t->sb.region_sectors;
	int rc = chj_changes_since(t->m, since, &c, &e);

	if (rc)
		return rc;
	ck_assert_int_eq(chj_bits_init(out, t->sb.nr_regions, &e), 0);
	/* Back from sector ranges to regions: the inverse of the library. */
	while (chj_changes_next(c, &cur, &r)) {
		ck_assert_uint_eq(r.start % rs, 0);
		chj_bits_set_range(out, r.start / rs, (r.len + rs - 1) / rs);
	}
	chj_changes_free(c);
	return 0;
}
