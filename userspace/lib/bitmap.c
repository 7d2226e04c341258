// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The bitmap area: one bit per region for the current epoch.  A block's bits
 * count only if it is stamped with the current epoch; an older stamp means
 * "nothing marked yet in this epoch" (ending an epoch rewrites no bitmap).
 * Both formats (chj format and the target's) stamp every block, so a block
 * failing its magic or checksum -- an all-zero one included -- is damaged
 * and reads as all ones, as the target's own loader does: false positives
 * are allowed, missed changes are not.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define CHUNK_BLOCKS 64u

static_assert(CHJ_REGIONS_PER_BLOCK % 64 == 0, "bitmap blocks hold whole words");

enum chj_bm_state chj_bitmap_block_state(const struct chj_bitmap_block *b,
					 uint64_t current_epoch)
{
	uint64_t epoch;

	if (chj_le32(b->magic) != CHJ_BITMAP_MAGIC ||
	    chj_le32(b->csum) != chj_block_csum(b, CHJ_BLOCK_SIZE))
		return CHJ_BM_DAMAGED;
	epoch = chj_le64(b->epoch);
	if (epoch == current_epoch)
		return CHJ_BM_CURRENT;
	return epoch < current_epoch ? CHJ_BM_STALE : CHJ_BM_NEWER;
}

void chj_bitmap_block_fill(struct chj_bitmap_block *b, uint64_t epoch,
			   uint64_t idx, uint64_t nr_regions, int ones)
{
	uint64_t base = idx * CHJ_REGIONS_PER_BLOCK, n = 0;

	memset(b, 0, sizeof(*b));
	if (ones && base < nr_regions)
		n = nr_regions - base;
	if (n > CHJ_REGIONS_PER_BLOCK)
		n = CHJ_REGIONS_PER_BLOCK;
	/* Only bits of existing regions: bits past nr_regions stay zero. */
	memset(b->bits, 0xff, n / 8);
	if (n % 8)
		b->bits[n / 8] = (1u << (n % 8)) - 1;
	b->magic = chj_cpu32(CHJ_BITMAP_MAGIC);
	b->epoch = chj_cpu64(epoch);
	b->csum = chj_cpu32(chj_block_csum(b, CHJ_BLOCK_SIZE));
}

/* Regions covered by bitmap block idx. */
static uint64_t block_regions(const struct chj_sb *sb, uint64_t idx)
{
	uint64_t base = idx * CHJ_REGIONS_PER_BLOCK;
	uint64_t n = sb->nr_regions - base;

	return n < CHJ_REGIONS_PER_BLOCK ? n : CHJ_REGIONS_PER_BLOCK;
}

/*
 * OR a current block's bits into out, a word at a time: a block holds 510
 * whole 64-bit words, so base is word aligned.  Returns the number of bits
 * set past nr_regions (which must be zero).
 */
static uint64_t merge_bits(const struct chj_bitmap_block *b, uint64_t base,
			   uint64_t n, struct chj_bits *out)
{
	uint64_t stray = 0;

	for (uint64_t j = 0; j < CHJ_BITMAP_BYTES / 8; j++) {
		uint64_t w, valid;

		memcpy(&w, b->bits + j * 8, 8);
		w = chj_le64(w);
		if (!w)
			continue;
		valid = j * 64 >= n ? 0 : n - j * 64 >= 64 ? ~0ull :
			(1ull << (n - j * 64)) - 1;
		stray += __builtin_popcountll(w & ~valid);
		if (out && valid)
			out->w[(base / 64) + j] |= w & valid;
	}
	return stray;
}

/* Re-read a damaged block: a read racing the target's write can be torn. */
static int reread_block(struct chj_meta *m, uint64_t blk, unsigned tries,
			struct chj_bitmap_block *b, uint64_t epoch,
			enum chj_bm_state *st, struct chj_error *e)
{
	struct timespec ts = { 0, 1000000 };

	while (*st == CHJ_BM_DAMAGED && tries--) {
		int rc;

		nanosleep(&ts, NULL);
		rc = chj_read_blocks(m, blk, 1, b, e);
		if (rc)
			return rc;
		*st = chj_bitmap_block_state(b, epoch);
	}
	return CHJ_OK;
}

static int scan_one(struct chj_meta *m, const struct chj_sb *sb,
		    struct chj_bmscan *s, uint64_t idx,
		    struct chj_bitmap_block *b, struct chj_error *e)
{
	enum chj_bm_state st = chj_bitmap_block_state(b, sb->current_epoch);
	uint64_t base = idx * CHJ_REGIONS_PER_BLOCK, n = block_regions(sb, idx);
	int rc = reread_block(m, sb->bitmap_start + idx, s->reread, b,
			      sb->current_epoch, &st, e);

	if (rc)
		return rc;
	if (s->block)
		s->block(s->ctx, idx, st, b);
	switch (st) {
	case CHJ_BM_CURRENT:
		s->stray += merge_bits(b, base, n, s->out);
		break;
	case CHJ_BM_NEWER:
		s->newer++;
		if (s->out)
			chj_bits_set_range(s->out, base, n);
		break;
	case CHJ_BM_DAMAGED:
		s->damaged++;
		if (s->out)
			chj_bits_set_range(s->out, base, n);
		break;
	default:
		break;
	}
	return CHJ_OK;
}

int chj_bitmap_scan(struct chj_meta *m, const struct chj_sb *sb,
		    struct chj_bmscan *s, struct chj_error *e)
{
	uint8_t *buf = chj_blocks_alloc(CHUNK_BLOCKS);
	int rc = CHJ_OK;

	s->damaged = s->newer = s->stray = 0;
	if (!buf)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	for (uint64_t i = 0; !rc && i < sb->bitmap_blocks; i += CHUNK_BLOCKS) {
		uint64_t n = sb->bitmap_blocks - i;

		if (n > CHUNK_BLOCKS)
			n = CHUNK_BLOCKS;
		rc = chj_read_blocks(m, sb->bitmap_start + i, n, buf, e);
		for (uint64_t k = 0; !rc && k < n; k++)
			rc = scan_one(m, sb, s, i + k,
				      (void *)(buf + k * CHJ_BLOCK_SIZE), e);
	}
	free(buf);
	return rc;
}
