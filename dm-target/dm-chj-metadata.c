// SPDX-License-Identifier: GPL-2.0
/*
 * dm-chj metadata: format, load, mark commit and checkpoint.
 *
 * The on-disk layout is defined in include/chj_format.h and docs/format.md.
 * Ordering rules this file keeps:
 *  - a bitmap block is written with FUA, and its bits are published to the
 *    lock-free in-core bitmap only after the write completed;
 *  - a closed epoch's journal record is written before the superblock that
 *    ends the epoch, which goes out with PREFLUSH|FUA;
 *  - journal blocks that a retained epoch still owns are never overwritten:
 *    a superblock that drops those epochs is committed first.
 */
#include <linux/bio.h>
#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/crc32poly.h>
#include <linux/device-mapper.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uuid.h>
#include <linux/vmalloc.h>

#include "dm-chj-metadata.h"

#define DM_MSG_PREFIX "chj"

/* Block buffers for batched metadata I/O: the staging limit per commit. */
#define CHJ_BATCH 64

/* Bitmap words checksummed one by one before a whole block is cheaper. */
#define CHJ_CSUM_WORDS 4
#define CHJ_BITMAP_WORDS (CHJ_BITMAP_BYTES / sizeof(u64))

struct chj_metadata {
	struct block_device *bdev;
	struct bio_set bs;
	u64 dev_blocks;

	/* Last committed superblock, in disk byte order. */
	struct chj_superblock sb;
	struct page *sb_page;

	/* Geometry and epoch in CPU order, mirrors of sb. */
	u64 nr_regions;
	u64 bitmap_blocks;
	u64 cur_epoch;

	/* Durable marks of the current epoch: chj_format.h bit order. */
	u8 *bits;
	size_t bits_len;
	atomic64_t marked;

	/*
	 * I/O buffers; while staging, buffer i holds bitmap block blk[i], and
	 * lo[i]..hi[i] bound the 64-bit words of it that staging touched.
	 * fresh[i]: buffer i still equals the durable current-epoch image of
	 * block blk[i] (it was written and published), so staging that block
	 * again needs no copy.  Any other use of the buffers clears it.
	 */
	struct page *pages[CHJ_BATCH];
	u64 blk[CHJ_BATCH];
	u16 lo[CHJ_BATCH], hi[CHJ_BATCH];
	DECLARE_BITMAP(fresh, CHJ_BATCH);
	unsigned int nr_staged;

	/*
	 * Per bitmap block, when its crc_known bit is set: the CRC-32C register
	 * (before the final inversion) of bytes [4, 4096) of the block as last
	 * written in the current epoch, whose bits equal the in-core bits.  A
	 * commit then checksums only the words it changed.
	 */
	u32 *raw_crc;
	unsigned long *crc_known;
	u32 wraw[CHJ_BATCH];	/* the registers of the buffers being written */

	/* The staged blocks' writes: at most one batch is in flight. */
	struct bio *wbio[CHJ_BATCH];	/* bio_kmalloc()ed, one vec each */
	atomic_t wpending;
	blk_status_t wstatus;
	chj_md_done_fn wdone;
	void *wctx;

	/* Blocks written since load (read by status while being written). */
	u64 bitmap_writes;
	u64 journal_writes;
	u64 sb_writes;
};

static u32 chj_csum(const void *p, size_t len)
{
	return ~crc32c(~0u, (const u8 *)p + 4, len - 4);
}

static void *buf(struct chj_metadata *md, unsigned int i)
{
	return page_address(md->pages[i]);
}

/* The buffers are about to hold something else, or the bitmap changed. */
static void forget_bufs(struct chj_metadata *md)
{
	bitmap_zero(md->fresh, CHJ_BATCH);
}

/* ---------------------------------------------------------------- I/O -- */

struct chj_batch {
	atomic_t pending;
	blk_status_t status;
	struct completion done;
};

static void chj_batch_endio(struct bio *bio)
{
	struct chj_batch *b = bio->bi_private;

	if (bio->bi_status)
		b->status = bio->bi_status;
	bio_put(bio);
	if (atomic_dec_and_test(&b->pending))
		complete(&b->done);
}

/* Read or write n whole blocks in parallel and wait for all of them. */
static int chj_io(struct chj_metadata *md, blk_opf_t opf, const u64 *blk,
		  struct page **pages, unsigned int n)
{
	struct chj_batch b;
	unsigned int i;

	atomic_set(&b.pending, 1);
	b.status = BLK_STS_OK;
	init_completion(&b.done);
	for (i = 0; i < n; i++) {
		struct bio *bio = bio_alloc_bioset(md->bdev, 1, opf, GFP_NOIO,
						   &md->bs);

		bio->bi_iter.bi_sector = blk[i] * CHJ_BLOCK_SECTORS;
		__bio_add_page(bio, pages[i], CHJ_BLOCK_SIZE, 0);
		bio->bi_end_io = chj_batch_endio;
		bio->bi_private = &b;
		atomic_inc(&b.pending);
		submit_bio(bio);
	}
	if (atomic_dec_and_test(&b.pending))
		complete(&b.done);
	wait_for_completion_io(&b.done);
	return blk_status_to_errno(b.status);
}

/* Synchronous single-block read for the constructor's peek. */
static int chj_read_block(struct block_device *bdev, u64 blk, struct page *page)
{
	struct bio bio;
	struct bio_vec bv;
	int r;

	bio_init(&bio, bdev, &bv, 1, REQ_OP_READ);
	bio.bi_iter.bi_sector = blk * CHJ_BLOCK_SECTORS;
	__bio_add_page(&bio, page, CHJ_BLOCK_SIZE, 0);
	r = submit_bio_wait(&bio);
	bio_uninit(&bio);
	return r;
}

/* ---------------------------------------------------------- superblock -- */

static bool sb_is_blank(const void *p)
{
	return !memchr_inv(p, 0, CHJ_SB_BYTES);
}

/* Valid copy: checksum, magic, consistent fields, and in its own slot. */
static bool sb_valid(const struct chj_superblock *sb, u64 slot, u64 dev_blocks)
{
	return le32_to_cpu(sb->magic) == CHJ_SB_MAGIC &&
	       le32_to_cpu(sb->csum) == chj_csum(sb, CHJ_SB_BYTES) &&
	       (le64_to_cpu(sb->seq) & 1) == slot &&
	       !chj_sb_check(sb, dev_blocks);
}

/*
 * Read both copies and pick the newest valid one.  Returns 1 for a blank
 * (all-zero) superblock area, 0 with *out filled, or -errno.
 */
static int sb_read(struct block_device *bdev, struct page *page,
		   struct chj_superblock *out, char **error)
{
	u64 dev_blocks = bdev_nr_sectors(bdev) / CHJ_BLOCK_SECTORS;
	struct chj_superblock copy[CHJ_SB_COPIES];
	const char *why = NULL;
	int r, best = -1, blank = 0;
	unsigned int i;

	if (dev_blocks < CHJ_SB_COPIES) {
		*error = "Metadata device too small to hold a superblock";
		return -EINVAL;
	}
	for (i = 0; i < CHJ_SB_COPIES; i++) {
		r = chj_read_block(bdev, i, page);
		if (r) {
			*error = "Cannot read metadata superblock";
			return r;
		}
		memcpy(&copy[i], page_address(page), CHJ_SB_BYTES);
		if (sb_is_blank(&copy[i])) {
			blank++;
			continue;
		}
		if (le32_to_cpu(copy[i].magic) == CHJ_SB_MAGIC &&
		    le32_to_cpu(copy[i].csum) == chj_csum(&copy[i], CHJ_SB_BYTES))
			why = chj_sb_check(&copy[i], dev_blocks);
		if (!sb_valid(&copy[i], i, dev_blocks))
			continue;
		if (best < 0 || le64_to_cpu(copy[i].seq) > le64_to_cpu(copy[best].seq))
			best = i;
	}
	if (blank == CHJ_SB_COPIES)
		return 1;
	if (best < 0) {
		*error = why ? (char *)why :
			"Metadata device holds neither a chj superblock nor zeroes";
		return -EINVAL;
	}
	*out = copy[best];
	return 0;
}

int chj_md_peek(struct block_device *bdev, struct chj_superblock *sb,
		bool *blank, char **error)
{
	struct page *page = alloc_page(GFP_KERNEL);
	int r;

	if (!page) {
		*error = "Cannot allocate superblock buffer";
		return -ENOMEM;
	}
	r = sb_read(bdev, page, sb, error);
	__free_page(page);
	*blank = r == 1;
	return r < 0 ? r : 0;
}

/* Commit a new superblock: seq + 1, into the other slot, durable. */
static int sb_commit(struct chj_metadata *md, struct chj_superblock *sb)
{
	u64 seq = le64_to_cpu(md->sb.seq) + 1;
	u64 slot = seq & 1;
	void *p = page_address(md->sb_page);
	int r;

	sb->seq = cpu_to_le64(seq);
	sb->csum = cpu_to_le32(chj_csum(sb, CHJ_SB_BYTES));
	memset(p, 0, CHJ_BLOCK_SIZE);
	memcpy(p, sb, CHJ_SB_BYTES);
	WRITE_ONCE(md->sb_writes, md->sb_writes + 1);
	r = chj_io(md, REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA,
		   &slot, &md->sb_page, 1);
	if (r) {
		DMERR("superblock commit failed: %d", r);
		return r;
	}
	md->sb = *sb;
	md->cur_epoch = le64_to_cpu(sb->current_epoch);
	md->nr_regions = le64_to_cpu(sb->nr_regions);
	md->bitmap_blocks = le64_to_cpu(sb->bitmap_blocks);
	return 0;
}

/* --------------------------------------------------------------- bitmap -- */

/* Set bits [start, start + count) of a chj_format.h bit array. */
static void bits_set(u8 *bits, u64 start, u64 count)
{
	while (count && (start & 7)) {
		bits[start >> 3] |= 1u << (start & 7);
		start++;
		count--;
	}
	memset(bits + (start >> 3), 0xff, count >> 3);
	start += count & ~7ull;
	count &= 7;
	while (count--) {
		bits[start >> 3] |= 1u << (start & 7);
		start++;
	}
}

static size_t bits_len_for(u64 bitmap_blocks)
{
	return round_up(bitmap_blocks * CHJ_BITMAP_BYTES, sizeof(long));
}

bool chj_md_durable(struct chj_metadata *md, u64 first, u64 last)
{
	return find_next_zero_bit_le(md->bits, last + 1, first) > last;
}

/* Fill buffer i with a header for bitmap block blk of the current epoch. */
static struct chj_bitmap_block *bitmap_buf(struct chj_metadata *md,
					   unsigned int i, u64 blk)
{
	struct chj_bitmap_block *b = buf(md, i);

	b->magic = cpu_to_le32(CHJ_BITMAP_MAGIC);
	b->epoch = cpu_to_le64(md->cur_epoch);
	md->blk[i] = blk;
	md->lo[i] = CHJ_BITMAP_WORDS;	/* no word touched: whole-block CRC */
	md->hi[i] = 0;
	return b;
}

/*
 * Staging slot holding bitmap block blk, claiming a free one if needed: a
 * free buffer that is still fresh for blk is moved into place uncopied.
 */
static int stage_slot(struct chj_metadata *md, u64 blk)
{
	struct chj_bitmap_block *b;
	unsigned int i, j;

	for (i = 0; i < md->nr_staged; i++)
		if (md->blk[i] == blk)
			return i;
	if (md->nr_staged == CHJ_BATCH)
		return -1;
	i = md->nr_staged++;
	j = i;
	for_each_set_bit_from(j, md->fresh, CHJ_BATCH) {
		if (md->blk[j] != blk)
			continue;
		swap(md->pages[i], md->pages[j]);
		swap(md->blk[i], md->blk[j]);
		assign_bit(j, md->fresh, test_bit(i, md->fresh));
		__clear_bit(i, md->fresh);
		bitmap_buf(md, i, blk);
		return i;
	}
	__clear_bit(i, md->fresh);
	b = bitmap_buf(md, i, blk);
	memcpy(b->bits, md->bits + blk * CHJ_BITMAP_BYTES, CHJ_BITMAP_BYTES);
	return i;
}

int chj_md_stage(struct chj_metadata *md, u64 first, u64 last, u64 *next)
{
	u64 r = first;

	while (r <= last) {
		struct chj_bitmap_block *b;
		u64 blk, base, end;
		int i;

		r = find_next_zero_bit_le(md->bits, last + 1, r);
		if (r > last)
			break;
		blk = div64_u64(r, CHJ_REGIONS_PER_BLOCK);
		base = blk * CHJ_REGIONS_PER_BLOCK;
		end = min(last, base + CHJ_REGIONS_PER_BLOCK - 1);
		i = stage_slot(md, blk);
		if (i < 0) {
			*next = r;
			return 1;
		}
		b = buf(md, i);
		bits_set(b->bits, r - base, end - r + 1);
		md->lo[i] = min_t(u64, md->lo[i], (r - base) / 64);
		md->hi[i] = max_t(u64, md->hi[i], (end - base) / 64);
		r = end + 1;
	}
	*next = last + 1;
	return 0;
}

/*
 * OR words [lo, hi] of a durable block image into the in-core bitmap,
 * counting new marks.  The other words of a staged image are copies.
 */
static void publish(struct chj_metadata *md, const struct chj_bitmap_block *b,
		    u64 blk, unsigned int lo, unsigned int hi)
{
	u64 *dst = (u64 *)(md->bits + blk * CHJ_BITMAP_BYTES);
	const u64 *src = (const u64 *)b->bits;
	unsigned int i;
	u64 added = 0;

	if (lo > hi) {
		lo = 0;
		hi = CHJ_BITMAP_WORDS - 1;
	}
	for (i = lo; i <= hi; i++) {
		u64 old = READ_ONCE(dst[i]);
		u64 new = src[i] & ~old;

		if (new) {
			added += hweight64(new);
			WRITE_ONCE(dst[i], old | new);
		}
	}
	atomic64_add(added, &md->marked);
}

/* CRC-32C register over bytes [4, 4096) of a block, before inversion. */
static u32 block_raw_crc(const void *b)
{
	return ~chj_csum(b, CHJ_BLOCK_SIZE);
}

/*
 * CRC-32C is linear: flipping bits D of a message flips its register by
 * the CRC of D alone (from a zero register), shifted over the bytes after D.
 * So a block whose register is known costs one 8-byte CRC per changed word
 * instead of 4 KiB: what makes a one-bit commit cheap.
 */
static u32 shift_by[CHJ_BITMAP_WORDS];	/* x^(8 * bytes after word w) mod P */

/* Multiply in GF(2)[x] mod P, bit-reflected (bit 31 is x^0), as lib/crc32.c. */
static u32 gf2_mul(u32 x, u32 y)
{
	u32 product = x & 1 ? y : 0;
	int i;

	for (i = 0; i < 31; i++) {
		product = (product >> 1) ^ (product & 1 ? CRC32C_POLY_LE : 0);
		x >>= 1;
		product ^= x & 1 ? y : 0;
	}
	return product;
}

static void init_shift_by(void)
{
	unsigned int w;
	size_t after;

	for (w = 0; w < CHJ_BITMAP_WORDS; w++) {
		after = CHJ_BLOCK_SIZE - offsetof(struct chj_bitmap_block, bits) -
			(w + 1) * sizeof(u64);
		shift_by[w] = __crc32c_le_shift(0x80000000u, after);
	}
}

static u32 word_crc_delta(u64 diff, unsigned int word)
{
	return gf2_mul(crc32c(0, &diff, sizeof(diff)), shift_by[word]);
}

int chj_md_init(void)
{
	static const unsigned int words[] = { 0, 1, 255, CHJ_BITMAP_WORDS - 1 };
	struct chj_bitmap_block *b = kmalloc(sizeof(*b), GFP_KERNEL);
	u32 raw, want;
	unsigned int i;
	u64 *w, old;

	if (!b)
		return -ENOMEM;
	init_shift_by();
	for (i = 0; i < CHJ_BLOCK_SIZE; i++)
		((u8 *)b)[i] = i * 37 + (i >> 8);
	w = (u64 *)b->bits;
	raw = block_raw_crc(b);
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		old = w[words[i]];
		w[words[i]] |= 0x8000000000000001ull << (i & 1);
		raw ^= word_crc_delta(old ^ w[words[i]], words[i]);
	}
	want = block_raw_crc(b);
	kfree(b);
	if (raw == want)
		return 0;
	DMERR("self-test: incremental bitmap checksum %08x, whole-block %08x",
	      raw, want);
	return -EINVAL;
}

/* The register of buffer i's block image, from the last written one if known. */
static u32 staged_raw_crc(struct chj_metadata *md, unsigned int i)
{
	const struct chj_bitmap_block *b = buf(md, i);
	const u64 *now = (const u64 *)b->bits;
	const u64 *was = (const u64 *)(md->bits + md->blk[i] * CHJ_BITMAP_BYTES);
	unsigned int w, changed = 0;
	u32 raw;

	if (!test_bit(md->blk[i], md->crc_known) || md->lo[i] > md->hi[i])
		return block_raw_crc(b);
	raw = md->raw_crc[md->blk[i]];
	for (w = md->lo[i]; w <= md->hi[i]; w++) {
		if (now[w] == was[w])
			continue;
		if (++changed > CHJ_CSUM_WORDS)
			return block_raw_crc(b);
		raw ^= word_crc_delta(now[w] ^ was[w], w);
	}
	return raw;
}

/* Checksum buffers [0, n) for writing; each register waits in wraw[]. */
static void csum_bufs(struct chj_metadata *md, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct chj_bitmap_block *b = buf(md, i);

		md->wraw[i] = staged_raw_crc(md, i);
		b->csum = cpu_to_le32(~md->wraw[i]);
	}
	WRITE_ONCE(md->bitmap_writes, md->bitmap_writes + n);
}

/* Buffers [0, n) are durable: publish their bits and remember their CRCs. */
static void publish_bufs(struct chj_metadata *md, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		publish(md, buf(md, i), md->blk[i], md->lo[i], md->hi[i]);
		__set_bit(i, md->fresh);
		md->raw_crc[md->blk[i]] = md->wraw[i];
		__set_bit(md->blk[i], md->crc_known);
	}
}

/* Where buffer i's bitmap block lives on the metadata device. */
static u64 bitmap_block_nr(struct chj_metadata *md, unsigned int i)
{
	return le64_to_cpu(md->sb.bitmap_start) + md->blk[i];
}

/* Write buffers [0, n) as bitmap blocks md->blk[], FUA, and wait. */
static int write_bitmap_bufs(struct chj_metadata *md, unsigned int n)
{
	u64 where[CHJ_BATCH];
	unsigned int i;

	csum_bufs(md, n);
	for (i = 0; i < n; i++)
		where[i] = bitmap_block_nr(md, i);
	return chj_io(md, REQ_OP_WRITE | REQ_SYNC | REQ_FUA, where, md->pages, n);
}

static int chj_md_commit(struct chj_metadata *md)
{
	unsigned int n = md->nr_staged;
	int r;

	if (!n)
		return 0;
	md->nr_staged = 0;
	r = write_bitmap_bufs(md, n);
	if (r) {
		forget_bufs(md);
		DMERR("bitmap write failed: %d", r);
		return r;
	}
	publish_bufs(md, n);
	return 0;
}

static void staged_endio(struct bio *bio)
{
	struct chj_metadata *md = bio->bi_private;

	if (bio->bi_status)
		WRITE_ONCE(md->wstatus, bio->bi_status);
	bio_uninit(bio);
	if (atomic_dec_and_test(&md->wpending))
		md->wdone(md->wctx, blk_status_to_errno(READ_ONCE(md->wstatus)));
}

/*
 * The preallocated bios mean a commit needs no allocation, so it can start
 * from the bio path.  Nothing here may touch md->wbio[] after the last
 * submit_bio(): done() may already have started the next batch.
 */
unsigned int chj_md_write_staged(struct chj_metadata *md, chj_md_done_fn done,
				 void *ctx)
{
	unsigned int i, n = md->nr_staged;

	if (!n)
		return 0;
	csum_bufs(md, n);
	md->wdone = done;
	md->wctx = ctx;
	md->wstatus = BLK_STS_OK;
	atomic_set(&md->wpending, n);
	for (i = 0; i < n; i++) {
		struct bio *bio = md->wbio[i];

		bio_init(bio, md->bdev, bio->bi_inline_vecs, 1,
			 REQ_OP_WRITE | REQ_SYNC | REQ_FUA);
		bio->bi_iter.bi_sector = bitmap_block_nr(md, i) * CHJ_BLOCK_SECTORS;
		__bio_add_page(bio, md->pages[i], CHJ_BLOCK_SIZE, 0);
		bio->bi_end_io = staged_endio;
		bio->bi_private = md;
	}
	for (i = 0; i < n; i++)
		submit_bio(md->wbio[i]);
	return n;
}

void chj_md_end_staged(struct chj_metadata *md, int err)
{
	if (!err) {
		publish_bufs(md, md->nr_staged);
	} else {
		forget_bufs(md);
		DMERR("bitmap write failed: %d", err);
	}
	md->nr_staged = 0;
}

/* Stage and commit regions [first, last], as many rounds as needed. */
static int mark_range(struct chj_metadata *md, u64 first, u64 last)
{
	int r;

	while (chj_md_stage(md, first, last, &first) == 1) {
		r = chj_md_commit(md);
		if (r)
			return r;
	}
	return chj_md_commit(md);
}

int chj_md_mark_all(struct chj_metadata *md)
{
	return mark_range(md, 0, md->nr_regions - 1);
}

/* Read every bitmap block into the in-core bitmap. */
static int load_bitmap(struct chj_metadata *md)
{
	u64 start = le64_to_cpu(md->sb.bitmap_start), blk = 0, damaged = 0;
	u64 where[CHJ_BATCH];
	unsigned int i, n;
	int r;

	forget_bufs(md);
	while (blk < md->bitmap_blocks) {
		n = min_t(u64, CHJ_BATCH, md->bitmap_blocks - blk);
		for (i = 0; i < n; i++)
			where[i] = start + blk + i;
		r = chj_io(md, REQ_OP_READ, where, md->pages, n);
		if (r)
			return r;
		for (i = 0; i < n; i++, blk++) {
			struct chj_bitmap_block *b = buf(md, i);
			u8 *dst = md->bits + blk * CHJ_BITMAP_BYTES;
			u64 epoch = le64_to_cpu(b->epoch);

			if (le32_to_cpu(b->magic) != CHJ_BITMAP_MAGIC ||
			    le32_to_cpu(b->csum) != chj_csum(b, CHJ_BLOCK_SIZE) ||
			    epoch > md->cur_epoch) {
				/* Cannot tell what it held: count it all changed. */
				memset(dst, 0xff, CHJ_BITMAP_BYTES);
				damaged++;
			} else if (epoch == md->cur_epoch) {
				memcpy(dst, b->bits, CHJ_BITMAP_BYTES);
			}
		}
	}
	/* Bits past the last region are never set in core. */
	for (blk = md->nr_regions; blk < md->bits_len * 8ull; blk++)
		__clear_bit_le(blk, md->bits);
	atomic64_set(&md->marked, 0);
	for (blk = 0; blk < md->bitmap_blocks; blk++)
		atomic64_add(bitmap_weight((unsigned long *)(md->bits + blk * CHJ_BITMAP_BYTES),
					   CHJ_BITMAP_BYTES * 8), &md->marked);
	if (damaged)
		DMWARN("%llu damaged bitmap block(s) read as all changed", damaged);
	return 0;
}

/* ---------------------------------------------------------- checkpoint -- */

/* Runs of set bits in the current epoch: the journal record's extents. */
static u64 next_run(struct chj_metadata *md, u64 from, u64 *count)
{
	u64 s = find_next_bit_le(md->bits, md->nr_regions, from);
	u64 e;

	if (s >= md->nr_regions)
		return s;
	e = find_next_zero_bit_le(md->bits, md->nr_regions, s);
	*count = e - s;
	return s;
}

static u64 count_runs(struct chj_metadata *md)
{
	u64 r = 0, n = 0, len;

	while ((r = next_run(md, r, &len)) < md->nr_regions) {
		n++;
		r += len;
	}
	return n;
}

static int read_journal(struct chj_metadata *md, u64 seq,
			struct chj_journal_block **out)
{
	u64 where = chj_journal_block_nr(&md->sb, seq);
	struct chj_journal_block *j = buf(md, 0);
	int r;

	forget_bufs(md);
	r = chj_io(md, REQ_OP_READ, &where, md->pages, 1);

	if (r)
		return r;
	if (le32_to_cpu(j->magic) != CHJ_JOURNAL_MAGIC ||
	    le32_to_cpu(j->csum) != chj_csum(j, CHJ_BLOCK_SIZE) ||
	    le64_to_cpu(j->seq) != seq)
		return -EILSEQ;
	*out = j;
	return 0;
}

/*
 * Make room for need journal blocks by dropping whole epochs from the head.
 * The shrunken superblock is committed before any block is overwritten.
 * An unreadable journal is dropped entirely: that only raises oldest_epoch.
 */
static int journal_make_room(struct chj_metadata *md, u64 need)
{
	struct chj_superblock sb = md->sb;
	u64 head = le64_to_cpu(sb.journal_head), tail = le64_to_cpu(sb.journal_tail);
	u64 jb = le64_to_cpu(sb.journal_blocks);
	u64 h = need > jb ? tail : tail + need - jb, oldest = md->cur_epoch;
	struct chj_journal_block *j;
	int r;

	if (tail - head + need <= jb)
		return 0;
	/* Advance to the first block of an epoch, or to the tail. */
	for (; h < tail; h++) {
		r = read_journal(md, h, &j);
		if (r && r != -EILSEQ)
			return r;
		if (r) {
			h = tail;
			break;
		}
		if (le32_to_cpu(j->flags) & CHJ_JF_FIRST)
			break;
	}
	if (h < tail && h > head) {
		r = read_journal(md, h - 1, &j);
		if (r && r != -EILSEQ)
			return r;
		if (!r)
			oldest = le64_to_cpu(j->epoch) + 1;
		else
			h = tail;
	}
	if (h == tail)
		oldest = md->cur_epoch;
	sb.journal_head = cpu_to_le64(h);
	sb.oldest_epoch = cpu_to_le64(max(oldest, le64_to_cpu(sb.oldest_epoch)));
	DMINFO("journal full: epochs before %llu dropped", le64_to_cpu(sb.oldest_epoch));
	return sb_commit(md, &sb);
}

/* Write the current epoch's runs as journal blocks from seq tail on. */
static int journal_write(struct chj_metadata *md, u64 nr_ext)
{
	u64 tail = le64_to_cpu(md->sb.journal_tail), r = 0, len = 0, done = 0;
	u64 where[CHJ_BATCH];
	unsigned int n = 0;
	int err;

	forget_bufs(md);
	while (done < nr_ext) {
		struct chj_journal_block *j = buf(md, n);
		u32 k = 0, flags = done ? 0 : CHJ_JF_FIRST;

		memset(j, 0, CHJ_BLOCK_SIZE);
		for (; k < CHJ_JOURNAL_EXTENTS && done < nr_ext; k++, done++) {
			r = next_run(md, r, &len);
			j->ext[k].start = cpu_to_le64(r);
			j->ext[k].count = cpu_to_le64(len);
			r += len;
		}
		if (done == nr_ext)
			flags |= CHJ_JF_LAST;
		j->magic = cpu_to_le32(CHJ_JOURNAL_MAGIC);
		j->seq = cpu_to_le64(tail);
		j->epoch = cpu_to_le64(md->cur_epoch);
		j->nr_extents = cpu_to_le32(k);
		j->flags = cpu_to_le32(flags);
		j->csum = cpu_to_le32(chj_csum(j, CHJ_BLOCK_SIZE));
		where[n++] = chj_journal_block_nr(&md->sb, tail++);
		if (n == CHJ_BATCH || done == nr_ext) {
			WRITE_ONCE(md->journal_writes, md->journal_writes + n);
			err = chj_io(md, REQ_OP_WRITE, where, md->pages, n);
			if (err)
				return err;
			n = 0;
		}
	}
	return 0;
}

int chj_md_checkpoint(struct chj_metadata *md, u64 *new_epoch)
{
	u64 nr_ext = count_runs(md), need = chj_journal_blocks_for(nr_ext);
	u64 jb = le64_to_cpu(md->sb.journal_blocks);
	struct chj_superblock sb;
	int r;

	r = journal_make_room(md, need);
	if (r)
		return r;
	sb = md->sb;
	if (need > jb) {
		/* This epoch alone outgrows the journal: no history survives. */
		sb.journal_head = sb.journal_tail;
		sb.oldest_epoch = cpu_to_le64(md->cur_epoch + 1);
	} else if (need) {
		r = journal_write(md, nr_ext);
		if (r)
			return r;
		sb.journal_tail = cpu_to_le64(le64_to_cpu(sb.journal_tail) + need);
	}
	sb.current_epoch = cpu_to_le64(md->cur_epoch + 1);
	sb.epoch_start_time = cpu_to_le64(ktime_get_real_seconds());
	r = sb_commit(md, &sb);
	if (r)
		return r;
	/* Blocks stamped with the old epoch now read as empty on disk too. */
	memset(md->bits, 0, md->bits_len);
	bitmap_zero(md->crc_known, md->bitmap_blocks);
	forget_bufs(md);
	atomic64_set(&md->marked, 0);
	*new_epoch = md->cur_epoch;
	return 0;
}

void chj_md_flag_all_changed(struct chj_metadata *md)
{
	struct chj_superblock sb = md->sb;

	sb.flags |= cpu_to_le32(CHJ_SB_F_ALL_CHANGED);
	if (sb_commit(md, &sb))
		DMERR("could not flag the current epoch all-changed");
}

/* --------------------------------------------------------- format, grow -- */

static void layout(struct chj_superblock *sb, u64 origin_sectors,
		   u32 region_sectors, u64 dev_blocks)
{
	u64 nr = chj_regions_for(origin_sectors, region_sectors);
	u64 bb = chj_bitmap_blocks_for(nr);

	sb->region_sectors = cpu_to_le32(region_sectors);
	sb->nr_regions = cpu_to_le64(nr);
	sb->origin_sectors = cpu_to_le64(origin_sectors);
	sb->metadata_blocks = cpu_to_le64(dev_blocks);
	sb->bitmap_start = cpu_to_le64(CHJ_SB_COPIES);
	sb->bitmap_blocks = cpu_to_le64(bb);
	sb->journal_start = cpu_to_le64(CHJ_SB_COPIES + bb);
	sb->journal_blocks = cpu_to_le64(dev_blocks - CHJ_SB_COPIES - bb);
}

static void free_bits(struct chj_metadata *md)
{
	kvfree(md->bits);
	kvfree(md->raw_crc);
	kvfree(md->crc_known);
}

/* (Re)size the in-core bitmap, keeping its bits; no block CRC is known. */
static int alloc_bits(struct chj_metadata *md, u64 bitmap_blocks)
{
	size_t len = bits_len_for(bitmap_blocks);
	u8 *bits = kvzalloc(len, GFP_KERNEL);
	u32 *raw = kvcalloc(bitmap_blocks, sizeof(u32), GFP_KERNEL);
	unsigned long *known = kvcalloc(BITS_TO_LONGS(bitmap_blocks),
					sizeof(long), GFP_KERNEL);

	if (!bits || !raw || !known) {
		kvfree(bits);
		kvfree(raw);
		kvfree(known);
		return -ENOMEM;
	}
	if (md->bits)
		memcpy(bits, md->bits, min(len, md->bits_len));
	free_bits(md);
	forget_bufs(md);
	md->bits = bits;
	md->raw_crc = raw;
	md->crc_known = known;
	md->bits_len = len;
	return 0;
}

/* Write every bitmap block empty for the current epoch. */
static int write_empty_bitmap(struct chj_metadata *md)
{
	u64 blk = 0;
	unsigned int i, n;
	int r;

	forget_bufs(md);
	while (blk < md->bitmap_blocks) {
		n = min_t(u64, CHJ_BATCH, md->bitmap_blocks - blk);
		for (i = 0; i < n; i++)
			memset(bitmap_buf(md, i, blk + i)->bits, 0, CHJ_BITMAP_BYTES);
		r = write_bitmap_bufs(md, n);
		if (r)
			return r;
		blk += n;
	}
	return 0;
}

/*
 * Format: empty bitmap first, then both superblock copies (seq 0 and 1),
 * so a crash in between leaves a device that is still not a valid chj.
 */
static int format(struct chj_metadata *md, u64 origin_sectors, u32 region_sectors)
{
	struct chj_superblock sb;
	u64 now = ktime_get_real_seconds();
	uuid_t uuid;
	int r;

	memset(&sb, 0, sizeof(sb));
	sb.magic = cpu_to_le32(CHJ_SB_MAGIC);
	sb.version = cpu_to_le32(CHJ_VERSION);
	sb.block_size = cpu_to_le32(CHJ_BLOCK_SIZE);
	uuid_gen(&uuid);
	memcpy(sb.uuid, &uuid, sizeof(sb.uuid));
	layout(&sb, origin_sectors, region_sectors, md->dev_blocks);
	sb.current_epoch = cpu_to_le64(1);
	sb.oldest_epoch = cpu_to_le64(1);
	sb.epoch_start_time = cpu_to_le64(now);
	sb.format_time = cpu_to_le64(now);

	md->sb = sb;
	md->sb.seq = cpu_to_le64(~0ull);	/* so the first commit is seq 0 */
	md->cur_epoch = 1;
	md->nr_regions = le64_to_cpu(sb.nr_regions);
	md->bitmap_blocks = le64_to_cpu(sb.bitmap_blocks);
	r = alloc_bits(md, md->bitmap_blocks);
	if (!r)
		r = write_empty_bitmap(md);
	if (!r)
		r = sb_commit(md, &sb);
	if (!r)
		r = sb_commit(md, &sb);
	if (!r)
		DMINFO("formatted metadata: %llu regions of %u sectors",
		       md->nr_regions, region_sectors);
	return r;
}

/*
 * The origin grew.  New space counts as changed.  When the bitmap needs more
 * blocks it takes them from the front of the journal, whose history is
 * dropped first (oldest_epoch rises: nobody is handed a short list).
 */
static int grow(struct chj_metadata *md, u64 origin_sectors, char **error)
{
	u32 rs = le32_to_cpu(md->sb.region_sectors);
	u64 old_origin = le64_to_cpu(md->sb.origin_sectors);
	u64 nr = chj_regions_for(origin_sectors, rs);
	u64 bb = chj_bitmap_blocks_for(nr);
	struct chj_superblock sb = md->sb;
	int r;

	if (bb != md->bitmap_blocks) {
		if (chj_min_metadata_blocks(nr) > md->dev_blocks) {
			*error = "Metadata device too small for the grown origin";
			return -ENOSPC;
		}
		sb.journal_head = sb.journal_tail;
		sb.oldest_epoch = sb.current_epoch;
		r = sb_commit(md, &sb);
		if (r)
			goto fail;
		r = alloc_bits(md, bb);
		if (r)
			goto fail;
		layout(&sb, origin_sectors, rs, md->dev_blocks);
		DMINFO("bitmap grew: epochs before %llu dropped",
		       le64_to_cpu(sb.current_epoch));
	} else {
		sb.origin_sectors = cpu_to_le64(origin_sectors);
		sb.nr_regions = cpu_to_le64(nr);
	}
	/*
	 * New geometry first, flagged all-changed until the new space is
	 * marked: a crash in between reads conservatively, and no bit is ever
	 * set past the nr_regions of the superblock in force.
	 */
	sb.flags |= cpu_to_le32(CHJ_SB_F_ALL_CHANGED);
	r = sb_commit(md, &sb);
	if (!r)
		r = mark_range(md, div_u64(old_origin, rs), nr - 1);
	if (!r) {
		sb = md->sb;
		sb.flags &= ~cpu_to_le32(CHJ_SB_F_ALL_CHANGED);
		r = sb_commit(md, &sb);
	}
	if (!r)
		return 0;
fail:
	*error = "Cannot write metadata while growing";
	return r;
}

/* ----------------------------------------------------------- open/close -- */

void chj_md_close(struct chj_metadata *md)
{
	unsigned int i;

	if (!md)
		return;
	for (i = 0; i < CHJ_BATCH; i++) {
		if (md->pages[i])
			__free_page(md->pages[i]);
		kfree(md->wbio[i]);
	}
	if (md->sb_page)
		__free_page(md->sb_page);
	free_bits(md);
	bioset_exit(&md->bs);
	kfree(md);
}

static struct chj_metadata *md_alloc(struct block_device *bdev)
{
	struct chj_metadata *md = kzalloc(sizeof(*md), GFP_KERNEL);
	unsigned int i;

	if (!md)
		return NULL;
	md->bdev = bdev;
	md->dev_blocks = bdev_nr_sectors(bdev) / CHJ_BLOCK_SECTORS;
	if (bioset_init(&md->bs, CHJ_BATCH, 0, BIOSET_NEED_BVECS)) {
		kfree(md);
		return NULL;
	}
	md->sb_page = alloc_page(GFP_KERNEL);
	for (i = 0; i < CHJ_BATCH; i++) {
		md->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		md->wbio[i] = bio_kmalloc(1, GFP_KERNEL);
	}
	for (i = 0; i < CHJ_BATCH; i++)
		if (!md->pages[i] || !md->wbio[i])
			break;
	if (!md->sb_page || i < CHJ_BATCH) {
		chj_md_close(md);
		return NULL;
	}
	return md;
}

struct chj_metadata *chj_md_open(struct block_device *bdev, u64 origin_sectors,
				 u32 region_sectors, bool mark_all, char **error)
{
	struct chj_metadata *md = md_alloc(bdev);
	struct chj_superblock sb;
	int r;

	if (!md) {
		*error = "Cannot allocate metadata";
		return ERR_PTR(-ENOMEM);
	}
	r = sb_read(bdev, md->sb_page, &sb, error);
	if (r == 1) {
		r = format(md, origin_sectors, region_sectors);
		if (r)
			*error = "Cannot format metadata device";
	} else if (!r) {
		md->sb = sb;
		md->cur_epoch = le64_to_cpu(sb.current_epoch);
		md->nr_regions = le64_to_cpu(sb.nr_regions);
		md->bitmap_blocks = le64_to_cpu(sb.bitmap_blocks);
		r = alloc_bits(md, md->bitmap_blocks);
		if (!r)
			r = load_bitmap(md);
		if (r)
			*error = "Cannot read metadata bitmap";
		if (!r && le32_to_cpu(sb.region_sectors) != region_sectors) {
			*error = "Region size differs from the metadata's";
			r = -EINVAL;
		}
		if (!r && origin_sectors < le64_to_cpu(sb.origin_sectors)) {
			*error = "Shrinking a tracked origin is not supported";
			r = -EINVAL;
		}
	}
	if (!r && origin_sectors > le64_to_cpu(md->sb.origin_sectors))
		r = grow(md, origin_sectors, error);
	if (!r && (mark_all || (le32_to_cpu(md->sb.flags) & CHJ_SB_F_ALL_CHANGED))) {
		r = chj_md_mark_all(md);
		if (!r) {
			sb = md->sb;
			sb.flags &= ~cpu_to_le32(CHJ_SB_F_ALL_CHANGED);
			r = sb_commit(md, &sb);
		}
		if (r)
			*error = "Cannot mark all regions";
	}
	if (r) {
		chj_md_close(md);
		return ERR_PTR(r);
	}
	return md;
}

void chj_md_stats(struct chj_metadata *md, struct chj_md_stats *st)
{
	st->current_epoch = md->cur_epoch;
	st->oldest_epoch = le64_to_cpu(md->sb.oldest_epoch);
	st->marked = atomic64_read(&md->marked);
	st->nr_regions = md->nr_regions;
	st->journal_used = le64_to_cpu(md->sb.journal_tail) -
			   le64_to_cpu(md->sb.journal_head);
	st->journal_blocks = le64_to_cpu(md->sb.journal_blocks);
	st->bitmap_writes = READ_ONCE(md->bitmap_writes);
	st->journal_writes = READ_ONCE(md->journal_writes);
	st->sb_writes = READ_ONCE(md->sb_writes);
}
