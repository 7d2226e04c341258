// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the metadata parser (chj_sb_*, journal walk, bitmap
 * scan, changes, dump, check and repair).
 *
 * Input: one mode byte, then either a raw image (mode bit 0) or a list of
 * (offset u16, byte) edits applied to a valid built-in image with journal
 * records.  Mode bit 1 recomputes every block's checksum after the edits,
 * so the fuzzer gets past the CRCs into the field checks.
 *
 * Oracles beyond the sanitizers:
 *  - after check --repair, a second check finds no problem;
 *  - repair never loses a mark: for every E still answerable afterwards,
 *    the regions reported before (when answerable) are still reported.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define IMG_BLOCKS 16u
#define IMG_LEN (IMG_BLOCKS * CHJ_BLOCK_SIZE)

static uint8_t base[IMG_LEN];

static void seal_all(uint8_t *img, size_t len)
{
	for (size_t off = 0; off + CHJ_BLOCK_SIZE <= len; off += CHJ_BLOCK_SIZE) {
		uint32_t magic;

		memcpy(&magic, img + off + 4, 4);
		magic = chj_le32(magic);
		uint32_t c = chj_block_csum(img + off, off < 2 * CHJ_BLOCK_SIZE &&
					    magic == CHJ_SB_MAGIC ? CHJ_SB_BYTES : CHJ_BLOCK_SIZE);
		c = chj_cpu32(c);
		memcpy(img + off, &c, 4);
	}
}

/* Journal record for epoch ep at seq: extents [s, s+1) for each s given. */
static void put_record(uint8_t *img, const struct chj_sb *sb, uint64_t seq,
		       uint64_t ep, const uint64_t *starts, unsigned n, uint32_t flags)
{
	struct chj_journal_block *b = (void *)(img + (sb->journal_start +
				seq % sb->journal_blocks) * CHJ_BLOCK_SIZE);

	memset(b, 0, sizeof(*b));
	b->seq = chj_cpu64(seq);
	b->epoch = chj_cpu64(ep);
	b->flags = chj_cpu32(flags);
	b->nr_extents = chj_cpu32(n);
	for (unsigned i = 0; i < n; i++) {
		b->ext[i].start = chj_cpu64(starts[i]);
		b->ext[i].count = chj_cpu64(1);
	}
	chj_journal_block_seal(b);
}

/* 256 regions of 4 KiB; epochs 1 and 2 recorded (3 blocks), epoch 3 marked. */
static void build_base(void)
{
	struct chj_format_opts o = { .origin_sectors = 2048, .region_sectors = 8, .now = 1 };
	static const uint64_t a[] = { 1, 5, 9 }, b1[] = { 20, 40 }, b2[] = { 100, 255 };
	struct chj_meta *m;
	struct chj_sb sb;
	struct chj_bitmap_block *bm;

	chj_meta_open_mem(&m, base, IMG_LEN, 1, NULL);
	chj_format(m, &o, NULL);
	chj_sb_read(m, &sb, NULL);
	put_record(base, &sb, 0, 1, a, 3, CHJ_JF_FIRST | CHJ_JF_LAST);
	put_record(base, &sb, 1, 2, b1, 2, CHJ_JF_FIRST);
	put_record(base, &sb, 2, 2, b2, 2, CHJ_JF_LAST);
	bm = (void *)(base + sb.bitmap_start * CHJ_BLOCK_SIZE);
	chj_bitmap_block_fill(bm, 3, 0, sb.nr_regions, 0);
	bm->bits[0] = 0x81;
	bm->bits[31] = 0x80;
	bm->csum = chj_cpu32(chj_block_csum(bm, CHJ_BLOCK_SIZE));
	sb.journal_tail = 3;
	sb.current_epoch = 3;
	chj_sb_commit(m, &sb, NULL);
	chj_meta_close(m);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	build_base();
	return 0;
}

/* Changed regions since e as a bitset copy, or NULL if not answerable. */
static struct chj_bits *answer(struct chj_meta *m, uint64_t e)
{
	struct chj_changes *c;
	struct chj_bits *b;
	uint64_t pos = 0;
	struct chj_range r;

	if (chj_changes_since(m, e, &c, NULL))
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b || chj_bits_init(b, chj_changes_info(c)->sb.nr_regions, NULL)) {
		free(b);
		chj_changes_free(c);
		return NULL;
	}
	while (chj_changes_next(c, &pos, &r)) {
		uint64_t rs = chj_changes_info(c)->sb.region_sectors;
		uint64_t first = r.start / rs, last = (r.start + r.len - 1) / rs;

		chj_bits_set_range(b, first, last - first + 1);
	}
	chj_changes_free(c);
	return b;
}

static void oracle(uint8_t *img, size_t len)
{
	struct chj_meta *m;
	struct chj_check_result r, r2;
	struct chj_dump d;
	struct chj_sb sb;
	struct chj_bits *before[8] = { 0 };

	if (chj_meta_open_mem(&m, img, len, 1, NULL))
		return;
	if (!chj_dump_collect(m, &d, NULL))
		chj_dump_free(&d);
	for (uint64_t e = 0; e < 8; e++)
		before[e] = answer(m, e);
	if (!chj_check(m, 1, NULL, NULL, &r, NULL) && r.fixed) {
		if (chj_check(m, 0, NULL, NULL, &r2, NULL) || r2.problems)
			abort();	/* repair left a problem behind */
		for (uint64_t e = 0; e < 8; e++) {
			struct chj_bits *after = answer(m, e);

			if (before[e] && after && before[e]->nbits == after->nbits)
				for (uint64_t i = 0; i < after->nbits; i++)
					if (chj_bits_test(before[e], i) && !chj_bits_test(after, i))
						abort();	/* a mark was lost */
			if (after)
				chj_bits_free(after);
			free(after);
		}
	}
	(void)chj_sb_read(m, &sb, NULL);
	for (uint64_t e = 0; e < 8; e++) {
		if (before[e])
			chj_bits_free(before[e]);
		free(before[e]);
	}
	chj_meta_close(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *img;
	size_t len;

	if (!size)
		return 0;
	if (data[0] & 1) {
		len = size - 1;
		img = malloc(len ? len : 1);
		if (!img)
			return 0;
		memcpy(img, data + 1, len);
	} else {
		len = IMG_LEN;
		img = malloc(len);
		if (!img)
			return 0;
		memcpy(img, base, len);
		for (size_t i = 1; i + 3 <= size; i += 3)
			img[(data[i] | data[i + 1] << 8) % len] = data[i + 2];
	}
	if (data[0] & 2)
		seal_all(img, len);
	oracle(img, len);
	free(img);
	return 0;
}
