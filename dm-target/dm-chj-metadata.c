// SPDX-License-Identifier: GPL-2.0
/*
 * dm-chj metadata: format, load, the two tiers of marks, checkpoint.
 *
 * The on-disk layout is defined in include/chj_format.h and docs/format.md.
 * This comment is the one description of the in-core state machine; the
 * target (dm-chj-target.c), dm-chj-metadata.h, chj_format.h and
 * docs/dm-chj.txt point here.
 *
 * The promise: before a write to region r is issued to the origin, r's
 * exact bit is durable in the current epoch, or r's chunk is durably marked
 * in the intent map of the superblock in force.  Either is enough.
 *
 * The eight bitmaps (R: one bit per region, C: per chunk, B: per bitmap
 * block; "lock" is the target's c->lock, the one metadata writer):
 *
 *   bits     R  exact map of the epoch in core, set before a write issues
 *   dirty    B  block has bits set since it was last copied for writing
 *   durable  R  bit was in a copy of its block that was written and then
 *               flushed (or went with PREFLUSH/FUA): on disk for this epoch
 *   pend_blk    blocks of write_exact()'s last batch: written, not flushed
 *   intent   C  as in the superblock in force or being committed (disk bit
 *               order); what a crash would answer with
 *   cmark    C  intent bit durable and the chunk not being retired: writes
 *               to it may go; read lock-free by the fast path
 *   cactive  C  a write passed on the chunk's mark since the last clean
 *               pass (a hint: such chunks are not retired idle)
 *   cwant    C  to be marked by the next chj_md_commit_marks()
 *
 * States of a region r (blk = its bitmap block):
 *
 *   state     bits durable  dirty[blk]         a write to r
 *   CLEAN      0     0      any                needs chunk(r) in MARKED
 *   SET        1     0      1, or being set    needs chunk(r) in MARKED
 *   WRITTEN    1     0      0, blk in pend_blk needs chunk(r) in MARKED
 *                           or written unflushed
 *   DURABLE    1     1      any                goes, no chunk mark needed
 *
 *   CLEAN   -> SET      fast path or worker: chj_md_set_exact_may_issue(),
 *                       lock-free (test_and_set_bit_le, then set_bit dirty;
 *                       the two are not atomic together, so a retiring pass
 *                       writes every block of the chunks it retires)
 *   SET     -> WRITTEN  write_exact(), lock: test_and_clear_bit dirty, the
 *                       block copied word by word (READ_ONCE), plain write
 *   WRITTEN -> DURABLE  prove_blocks() after flush_md() or a PREFLUSH
 *                       commit, lock: only the bits of the copy written;
 *                       prove_all() after mark_all's PREFLUSH commit
 *   (WRITTEN stays)     a new bit elsewhere in blk sets dirty again: the
 *                       next pass copies and writes blk again
 *   any     -> CLEAN    chj_md_checkpoint(), lock, in-flight writes drained
 *                       and new ones held (the target's draining flag):
 *                       bits, durable, dirty emptied after the new
 *                       superblock is durable
 *   load/grow           preresume, no writes: bits read from blocks of the
 *                       current epoch, or set by mark_all; DURABLE only by
 *                       prove_all() after chj_md_open()'s flush, since a
 *                       block read may still be in the device's cache
 *
 * States of a chunk c:
 *
 *   state      intent cmark cwant  a write to c's non-DURABLE regions
 *   UNMARKED     0      0     0    deferred to the worker
 *   WANTED       0      0     1    deferred (the worker is committing)
 *   COMMITTING   1      0     1    deferred: the FUA superblock in flight
 *   MARKED       1      1     0    goes (cactive set on the way)
 *   RETIRING     1      0     0    deferred: exact bits being written
 *
 *   UNMARKED  -> WANTED      chj_md_want(), worker, lock (__set_bit);
 *                            or chj_md_commit_marks(), lock, for the rest
 *                            of a wanted chunk's group once CHJ_GROUP_AFTER
 *                            chunks were marked since the last clean pass
 *                            (mark groups: want_groups())
 *   WANTED    -> COMMITTING  chj_md_commit_marks(), lock: intent set in
 *                            core, superblock written with FUA, no flush
 *   COMMITTING-> MARKED      same call, after the FUA write completed:
 *                            set_bit cmark, cwant emptied
 *   COMMITTING-> UNMARKED    the FUA write failed: cwant emptied, intent
 *                            left set in core (fail mode follows)
 *   MARKED    -> RETIRING    chj_md_clean(), lock: clear_bit cmark, then
 *                            smp_mb(), then the exact bits are read
 *   RETIRING  -> UNMARKED    same call: the chunk's blocks written, then a
 *                            superblock without it with PREFLUSH, so the
 *                            exact bits are durable before the mark goes
 *   MARKED    (stays)        chj_md_checkpoint() with carry (the target's
 *                            carry_marks=Y, the default): the new epoch's
 *                            superblock marks it; cmark and cactive kept
 *   MARKED    -> UNMARKED    chj_md_checkpoint() without carry, lock,
 *                            writes drained: the new epoch's superblock
 *                            has an empty intent map
 *   cactive                  set lock-free by the fast path (set_bit);
 *                            emptied by each clean pass and by a
 *                            checkpoint (not with carry)
 *   load                     a marked chunk read from disk (unclean stop)
 *                            becomes SET exact bits, written, and the
 *                            intent map is committed empty: UNMARKED
 *
 * A lock-free race, a fast-path write against a retiring pass: the
 * write sets its exact bits, smp_rmb(), then reads cmark; the pass clears
 * cmark, smp_mb(), then reads the exact bits.  Either the write sees the
 * chunk unmarked and is deferred to a new mark, or the pass sees its bits
 * and makes them durable before the superblock that clears the mark.
 *
 * The in-flight rule, a fast-path write against a checkpoint: the write
 * is counted in flight (the target's per-CPU c->writes, get_write()) in
 * one preemption-off section with its read of the draining flag, before
 * it reads any map, and stays counted until it ends.  The checkpoint sets
 * the flag, waits for an RCU grace period (after which every CPU counts no
 * new write: later ones go to the worker, which waits for the lock), waits
 * for the sum to reach zero, so that every write of the old epoch has
 * ended and set its bits in the old maps, then empties the maps and clears
 * the flag with release (dm-chj-target.c, chj_map(), drain_writes() and
 * reopen_writes()).  The worker issues only under the lock, never while a
 * checkpoint drains.
 * No write takes the lock or writes a shared line for this.
 *
 * Other ordering rules this file keeps:
 *  - a closed epoch's journal record is written before the superblock that
 *    ends the epoch, which goes out with PREFLUSH|FUA;
 *  - journal blocks that a retained epoch still owns are never overwritten:
 *    a superblock that drops those epochs is committed first.
 */
#include <linux/bio.h>
#include <linux/crc32c.h>
#include <linux/device-mapper.h>
#include <linux/mm.h>
#include <linux/percpu_counter.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uuid.h>
#include <linux/vmalloc.h>

#include "dm-chj-compat.h"
#include "dm-chj-metadata.h"

#define DM_MSG_PREFIX "chj"

/*
 * Chunks a clean interval marks one by one before its commits mark whole
 * groups: a workload touching fewer new chunks than this per pass keeps
 * exact chunk marks (and a crash's over-report of one chunk per mark).
 */
#define CHJ_GROUP_AFTER 16

/* Block buffers for batched metadata I/O. */
#define CHJ_BATCH 64

struct chj_metadata {
	/*
	 * What every write reads (chj_md_set_exact_may_issue()): the maps'
	 * addresses and the chunk size, set at load and growth (preresume, no
	 * writes in flight).  Nothing on this line is written per write.
	 */
	unsigned long *durable;
	u8 *bits;
	unsigned long *dirty;
	u32 chunk_shift;

	/*
	 * Regions set in bits: counted per CPU, as each first touch of a
	 * region adds one (no shared atomic there); summed by status, set
	 * only with writes drained or none yet (checkpoint, load).
	 */
	struct percpu_counter marked ____cacheline_aligned_in_smp;

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

	/* Region and block states (bits, dirty, durable above): the table. */
	size_t bits_len;

	/* Chunk states (chunk_shift above): the table at the top of this file. */
	u32 want_shift;		/* the table's; bigger origins get bigger */
	u64 nr_chunks;
	u8 intent[CHJ_INTENT_BYTES];
	DECLARE_BITMAP(cmark, CHJ_MAX_CHUNKS);
	DECLARE_BITMAP(cactive, CHJ_MAX_CHUNKS);
	DECLARE_BITMAP(cwant, CHJ_MAX_CHUNKS);
	u64 marks_since_clean;	/* chunks marked since the last clean pass */
	/* Scratch for chj_md_clean() and chj_md_checkpoint() (under lock). */
	DECLARE_BITMAP(retire, CHJ_MAX_CHUNKS);
	u8 saved_intent[CHJ_INTENT_BYTES];

	struct page *pages[CHJ_BATCH];
	/* The last batch write_exact() wrote, not yet in durable (under lock). */
	u64 pend_blk[CHJ_BATCH];
	unsigned int pend_n;

	/* Since load (read by status while being written). */
	u64 bitmap_writes;
	u64 journal_writes;
	u64 sb_writes;
	u64 chunk_marks;
	u64 chunk_retires;
};

static u32 chj_csum(const void *p, size_t len)
{
	return ~crc32c(~0u, (const u8 *)p + 4, len - 4);
}

static void *buf(struct chj_metadata *md, unsigned int i)
{
	return page_address(md->pages[i]);
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

static struct chj_intent *block_intent(void *block)
{
	return block + CHJ_INTENT_OFFSET;
}

/*
 * A copy's reason to be refused, or NULL: checksum, magic, consistent
 * fields, its own slot, and (format 2) an intent map of the same commit.
 */
static const char *sb_refused(void *block, u64 slot, u64 dev_blocks)
{
	const struct chj_superblock *sb = block;
	const struct chj_intent *in = block_intent(block);
	const char *why;

	if (le32_to_cpu(sb->magic) != CHJ_SB_MAGIC ||
	    le32_to_cpu(sb->csum) != chj_csum(sb, CHJ_SB_BYTES))
		return "Metadata device holds neither a chj superblock nor zeroes";
	why = chj_sb_check(sb, dev_blocks);
	if (why)
		return why;
	if ((le64_to_cpu(sb->seq) & 1) != slot)
		return "superblock sequence number in the wrong block";
	if (le32_to_cpu(sb->version) < 2)
		return NULL;
	return chj_intent_check(sb, in, chj_csum(in, sizeof(*in)));
}

/*
 * Read both copies and pick the newest valid one, with its intent map when
 * it has one (else *intent is zeroed).  Returns 1 for a blank (all-zero)
 * superblock area, 0 with *out filled, or -errno.
 */
static int sb_read(struct block_device *bdev, struct page *page,
		   struct chj_superblock *out, struct chj_intent *intent,
		   char **error)
{
	u64 dev_blocks = bdev_nr_sectors(bdev) / CHJ_BLOCK_SECTORS;
	const char *why = NULL;
	int r, best = -1, blank = 0;
	u64 best_seq = 0;
	unsigned int i;

	if (dev_blocks < CHJ_SB_COPIES) {
		*error = "Metadata device too small to hold a superblock";
		return -EINVAL;
	}
	for (i = 0; i < CHJ_SB_COPIES; i++) {
		void *p = page_address(page);
		const char *no;

		r = chj_read_block(bdev, i, page);
		if (r) {
			*error = "Cannot read metadata superblock";
			return r;
		}
		if (sb_is_blank(p)) {
			blank++;
			continue;
		}
		no = sb_refused(p, i, dev_blocks);
		if (no) {
			why = why ? why : no;
			continue;
		}
		if (best >= 0 && le64_to_cpu(((struct chj_superblock *)p)->seq) <= best_seq)
			continue;
		best = i;
		best_seq = le64_to_cpu(((struct chj_superblock *)p)->seq);
		memcpy(out, p, CHJ_SB_BYTES);
		if (intent) {
			if (le32_to_cpu(out->version) >= 2)
				memcpy(intent, block_intent(p), sizeof(*intent));
			else
				memset(intent, 0, sizeof(*intent));
		}
	}
	if (blank == CHJ_SB_COPIES)
		return 1;
	if (best < 0) {
		*error = (char *)why;
		return -EINVAL;
	}
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
	r = sb_read(bdev, page, sb, NULL, error);
	__free_page(page);
	*blank = r == 1;
	return r < 0 ? r : 0;
}

/*
 * Commit a new superblock, format 2, with the in-core intent map: seq + 1,
 * into the other slot, FUA.  flush: PREFLUSH too, for a superblock that
 * depends on earlier writes (journal blocks, bitmap blocks of retired
 * chunks); a commit that only adds chunk marks depends on none.
 */
static int sb_commit_opf(struct chj_metadata *md, struct chj_superblock *sb,
			 bool flush)
{
	u64 seq = le64_to_cpu(md->sb.seq) + 1;
	u64 slot = seq & 1;
	void *p = page_address(md->sb_page);
	struct chj_intent *in = block_intent(p);
	blk_opf_t opf = REQ_OP_WRITE | REQ_SYNC | REQ_FUA;
	int r;

	sb->version = cpu_to_le32(CHJ_VERSION);
	sb->seq = cpu_to_le64(seq);
	sb->csum = cpu_to_le32(chj_csum(sb, CHJ_SB_BYTES));
	memset(p, 0, CHJ_BLOCK_SIZE);
	memcpy(p, sb, CHJ_SB_BYTES);
	in->magic = cpu_to_le32(CHJ_INTENT_MAGIC);
	in->seq = cpu_to_le64(seq);
	in->chunk_shift = cpu_to_le32(md->chunk_shift);
	memcpy(in->bits, md->intent, sizeof(in->bits));
	in->csum = cpu_to_le32(chj_csum(in, sizeof(*in)));
	WRITE_ONCE(md->sb_writes, md->sb_writes + 1);
	/*
	 * REQ_META also tells these commits from chunk marks in a block trace
	 * (tests/order): the block layer drops PREFLUSH where there is no
	 * volatile cache, and keeps REQ_META.
	 */
	if (flush)
		opf |= REQ_PREFLUSH | REQ_META;
	r = chj_io(md, opf, &slot, &md->sb_page, 1);
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

static int sb_commit(struct chj_metadata *md, struct chj_superblock *sb)
{
	return sb_commit_opf(md, sb, true);
}

/* --------------------------------------------------------------- bitmap -- */

static size_t bits_len_for(u64 bitmap_blocks)
{
	return round_up(bitmap_blocks * CHJ_BITMAP_BYTES, sizeof(long));
}

/* With no write in flight (load, or drained): else counts would be lost. */
static void recount(struct chj_metadata *md)
{
	u64 blk;
	s64 n = 0;

	for (blk = 0; blk < md->bitmap_blocks; blk++)
		n += bitmap_weight((unsigned long *)(md->bits + blk * CHJ_BITMAP_BYTES),
				   CHJ_BITMAP_BYTES * 8);
	percpu_counter_set(&md->marked, n);
}

/*
 * Exact bits [first, last] set in core, their blocks dirty; the caller
 * recounts.  Fast-path writers may set bits meanwhile: the partial bytes at
 * either end are set atomically, whole bytes become 0xff whatever raced.
 */
static void set_exact(struct chj_metadata *md, u64 first, u64 last)
{
	u64 b, r = first;

	for (; r <= last && (r & 7); r++)
		set_bit_le(r, md->bits);
	if (last - r + 1 >= 8) {
		memset(md->bits + (r >> 3), 0xff, (last - r + 1) >> 3);
		r += (last - r + 1) & ~7ull;
	}
	for (; r <= last; r++)
		set_bit_le(r, md->bits);
	for (b = div64_u64(first, CHJ_REGIONS_PER_BLOCK);
	     b <= div64_u64(last, CHJ_REGIONS_PER_BLOCK); b++)
		set_bit(b, md->dirty);
}

/* Are the exact bits of regions [first, last] all durable? */
static bool exact_durable(const struct chj_metadata *md, u64 first, u64 last)
{
	return find_next_zero_bit_le(md->durable, last + 1, first) > last;
}

/*
 * Does a write to regions [first, last] need chunk c marked, that is, has
 * one of its regions in c an exact bit not yet durable?
 */
static bool chunk_needed(const struct chj_metadata *md, u64 c, u64 first,
			 u64 last)
{
	u64 lo = max(first, c << md->chunk_shift);
	u64 hi = min(last, ((c + 1) << md->chunk_shift) - 1);

	return !exact_durable(md, lo, hi);
}

/*
 * The fast path: CLEAN -> SET for every region of the write, and may it go
 * (a DURABLE region needs nothing, the others a MARKED chunk)?  The exact
 * bits are set before cmark is read, with a barrier between
 * (test_and_set_bit_le() is one; the read-only case needs smp_rmb()):
 * the race with a retiring pass in the state table above.
 */
bool chj_md_set_exact_may_issue(struct chj_metadata *md, u64 first, u64 last)
{
	u32 shift = md->chunk_shift;
	u64 r, c;

	/* Steady state: every exact bit durable already. */
	r = find_next_zero_bit_le(md->durable, last + 1, first);
	if (r > last)
		return true;
	first = r;
	for (;;) {
		r = find_next_zero_bit_le(md->bits, last + 1, r);
		if (r > last)
			break;
		if (!test_and_set_bit_le(r, md->bits)) {
			u64 blk = div64_u64(r, CHJ_REGIONS_PER_BLOCK);

			percpu_counter_inc(&md->marked);
			if (!test_bit(blk, md->dirty))
				set_bit(blk, md->dirty);
		}
		r++;
	}
	smp_rmb(); /* exact bits before chunk marks; pairs with chj_md_clean() */
	for (c = first >> shift; c <= last >> shift; c++) {
		if (!chunk_needed(md, c, first, last))
			continue;
		if (!test_bit(c, md->cmark))
			return false;
		if (!test_bit(c, md->cactive))
			set_bit(c, md->cactive);
	}
	return true;
}

void chj_md_want(struct chj_metadata *md, u64 first, u64 last)
{
	u64 c;

	for (c = first >> md->chunk_shift; c <= last >> md->chunk_shift; c++)
		if (!test_bit(c, md->cmark) && chunk_needed(md, c, first, last))
			__set_bit(c, md->cwant);
}

/*
 * Mark groups, with the lock: every wanted chunk brings the unmarked rest
 * of its aligned group.  The ones no write reaches are not cactive, so the
 * next clean pass retires them; a crash before counts them whole.  Bits
 * set here are at or after c in its group, or before it in the same group
 * (the loop may visit the former; the group is the same).
 */
static void want_groups(struct chj_metadata *md, unsigned int group)
{
	unsigned long c, g, g1;

	for_each_set_bit(c, md->cwant, md->nr_chunks) {
		g1 = min_t(unsigned long, c - c % group + group, md->nr_chunks);
		for (g = c - c % group; g < g1; g++)
			if (!test_bit(g, md->cmark))
				__set_bit(g, md->cwant);
	}
}

int chj_md_commit_marks(struct chj_metadata *md, unsigned int group)
{
	struct chj_superblock sb = md->sb;
	unsigned long c;
	u64 n = 0;
	int r;

	if (bitmap_empty(md->cwant, md->nr_chunks))
		return 0;
	if (group > 1 && md->marks_since_clean >= CHJ_GROUP_AFTER)
		want_groups(md, group);
	/* A chunk may be marked on disk still, as it is being retired. */
	for_each_set_bit(c, md->cwant, md->nr_chunks) {
		if (!chj_intent_test(md->intent, c))
			n++;
		md->intent[c / 8] |= 1u << (c % 8);
	}
	r = sb_commit_opf(md, &sb, false);
	if (r) {
		bitmap_zero(md->cwant, CHJ_MAX_CHUNKS);
		return r;
	}
	/* Durable now: writes to these chunks may go. */
	for_each_set_bit(c, md->cwant, md->nr_chunks)
		set_bit(c, md->cmark);
	bitmap_zero(md->cwant, CHJ_MAX_CHUNKS);
	md->marks_since_clean += n;
	WRITE_ONCE(md->chunk_marks, md->chunk_marks + n);
	return 0;
}

/* Fill buffer i with bitmap block blk of the current epoch, from core. */
static void copy_block(struct chj_metadata *md, unsigned int i, u64 blk)
{
	struct chj_bitmap_block *b = buf(md, i);
	const u64 *src = (const u64 *)(md->bits + blk * CHJ_BITMAP_BYTES);
	u64 *dst = (u64 *)b->bits;
	unsigned int w;

	b->magic = cpu_to_le32(CHJ_BITMAP_MAGIC);
	b->epoch = cpu_to_le64(md->cur_epoch);
	/* Fast-path writers set bits meanwhile: a word is read once. */
	for (w = 0; w < CHJ_BITMAP_BYTES / sizeof(u64); w++)
		dst[w] = READ_ONCE(src[w]);
	b->csum = cpu_to_le32(chj_csum(b, CHJ_BLOCK_SIZE));
}

/* Write bitmap blocks blk[0, n) from core, plain writes, and wait. */
static int write_blocks(struct chj_metadata *md, const u64 *blk, unsigned int n)
{
	u64 where[CHJ_BATCH];
	unsigned int i;

	for (i = 0; i < n; i++) {
		copy_block(md, i, blk[i]);
		where[i] = le64_to_cpu(md->sb.bitmap_start) + blk[i];
	}
	WRITE_ONCE(md->bitmap_writes, md->bitmap_writes + n);
	return chj_io(md, REQ_OP_WRITE | REQ_SYNC, where, md->pages, n);
}

/*
 * The bitmap blocks blk[0, n), whose copies are in buffers [0, n), were
 * written and are durable: their bits join md->durable.  Exactly the bits
 * of the copies: a bit set after its block was copied is not on disk.
 */
static void prove_blocks(struct chj_metadata *md, const u64 *blk, unsigned int n)
{
	unsigned int i, w, words = CHJ_BITMAP_BYTES / sizeof(long);

	for (i = 0; i < n; i++) {
		const struct chj_bitmap_block *b = buf(md, i);
		const unsigned long *src = (const unsigned long *)b->bits;
		unsigned long *dst = md->durable + blk[i] * words;

		/* The fast path reads it meanwhile: a word is written once. */
		for (w = 0; w < words; w++)
			if (src[w] & ~dst[w])
				WRITE_ONCE(dst[w], dst[w] | src[w]);
	}
}

/*
 * Every exact bit in core is durable (nothing writes meanwhile, or every
 * bit that can be set is set and was written): all of them join
 * md->durable.
 */
static void prove_all(struct chj_metadata *md)
{
	const unsigned long *src = (const unsigned long *)md->bits;
	size_t w;

	for (w = 0; w < md->bits_len / sizeof(long); w++)
		WRITE_ONCE(md->durable[w], md->durable[w] | READ_ONCE(src[w]));
}

static int flush_md(struct chj_metadata *md)
{
	int r = blkdev_issue_flush(md->bdev);

	if (r)
		DMERR("metadata flush failed: %d", r);
	return r;
}

/*
 * Write every dirty bitmap block, and every block of a chunk in retire
 * (whether dirty or not: a bit may have been set by a writer that had not
 * flagged its block yet).  Durable only after a flush.  prove: every batch
 * but the last is flushed and proved here; the last one is left in
 * md->pend_blk for the caller to prove after its own flush.
 */
static int write_exact(struct chj_metadata *md, const unsigned long *retire,
		       bool prove)
{
	u64 *blk = md->pend_blk, b, per = CHJ_REGIONS_PER_BLOCK;
	unsigned int n = 0;
	int r;

	md->pend_n = 0;
	for (b = 0; b < md->bitmap_blocks; b++) {
		u64 c0 = div64_u64(b * per, 1ull << md->chunk_shift);
		u64 c1 = min(div64_u64(min(b * per + per, md->nr_regions) - 1,
				       1ull << md->chunk_shift), md->nr_chunks - 1);
		bool want = test_and_clear_bit(b, md->dirty);

		if (!want && retire)
			want = find_next_bit(retire, c1 + 1, c0) <= c1;
		if (!want)
			continue;
		blk[n++] = b;
		if (n == CHJ_BATCH) {
			r = write_blocks(md, blk, n);
			if (!r && prove)
				r = flush_md(md);
			if (r)
				return r;
			if (prove)
				prove_blocks(md, blk, n);
			n = 0;
		}
	}
	r = n ? write_blocks(md, blk, n) : 0;
	if (!r && prove)
		md->pend_n = n;
	return r;
}

int chj_md_write_exact(struct chj_metadata *md)
{
	return write_exact(md, NULL, false);
}

bool chj_md_needs_clean(struct chj_metadata *md)
{
	return !bitmap_empty(md->cmark, md->nr_chunks) ||
	       find_first_bit(md->dirty, md->bitmap_blocks) < md->bitmap_blocks;
}

int chj_md_clean(struct chj_metadata *md, bool all)
{
	unsigned long *retire = md->retire;
	struct chj_superblock sb;
	unsigned long c;
	u64 n = 0;
	int r;

	md->marks_since_clean = 0;
	if (all)
		bitmap_copy(retire, md->cmark, md->nr_chunks);
	else
		bitmap_andnot(retire, md->cmark, md->cactive, md->nr_chunks);
	bitmap_zero(md->cactive, CHJ_MAX_CHUNKS);
	/* MARKED -> RETIRING first, then the exact bits are read. */
	for_each_set_bit(c, retire, md->nr_chunks) {
		clear_bit(c, md->cmark);
		n++;
	}
	smp_mb(); /* cmark cleared before the exact bits are read */
	r = write_exact(md, n ? retire : NULL, true);
	if (r)
		return r;
	if (n) {
		for_each_set_bit(c, retire, md->nr_chunks)
			md->intent[c / 8] &= ~(1u << (c % 8));
		sb = md->sb;
		/* Its PREFLUSH makes the bitmap blocks durable first. */
		r = sb_commit_opf(md, &sb, true);
		if (r)
			return r;
		WRITE_ONCE(md->chunk_retires, md->chunk_retires + n);
	} else if (md->pend_n) {
		r = flush_md(md);
		if (r)
			return r;
	}
	prove_blocks(md, md->pend_blk, md->pend_n);
	md->pend_n = 0;
	return 0;
}

/* Every region of every chunk marked in the intent map, into the exact map. */
static void intent_to_exact(struct chj_metadata *md)
{
	u64 c, first, last;

	for (c = 0; c < md->nr_chunks; c++) {
		if (!chj_intent_test(md->intent, c))
			continue;
		first = c << md->chunk_shift;
		last = min(first + (1ull << md->chunk_shift), md->nr_regions) - 1;
		set_exact(md, first, last);
	}
	recount(md);
}

int chj_md_mark_all(struct chj_metadata *md)
{
	struct chj_superblock sb;
	int r;

	set_exact(md, 0, md->nr_regions - 1);
	recount(md);
	r = write_exact(md, NULL, false);
	if (r)
		return r;
	sb = md->sb;
	r = sb_commit(md, &sb);
	/* Every bit was set before the writes, which the PREFLUSH made durable. */
	if (!r)
		prove_all(md);
	return r;
}

/* Read every bitmap block into the in-core bitmap. */
static int load_bitmap(struct chj_metadata *md)
{
	u64 start = le64_to_cpu(md->sb.bitmap_start), blk = 0, damaged = 0;
	u64 where[CHJ_BATCH];
	unsigned int i, n;
	int r;

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
				set_bit(blk, md->dirty);
				damaged++;
			} else if (epoch == md->cur_epoch) {
				memcpy(dst, b->bits, CHJ_BITMAP_BYTES);
			}
		}
	}
	/* Bits past the last region are never set in core. */
	for (blk = md->nr_regions; blk < md->bits_len * 8ull; blk++)
		__clear_bit_le(blk, md->bits);
	recount(md);
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
static int journal_write(struct chj_metadata *md, u64 nr_ext, u32 extra)
{
	u64 tail = le64_to_cpu(md->sb.journal_tail), r = 0, len = 0, done = 0;
	u64 where[CHJ_BATCH];
	unsigned int n = 0;
	int err;

	while (done < nr_ext) {
		struct chj_journal_block *j = buf(md, n);
		u32 k = 0, flags = extra | (done ? 0 : CHJ_JF_FIRST);

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

/*
 * The record comes from the exact map in core, which holds every region
 * written in the epoch (writes are drained), so it is exact whatever the
 * bitmap blocks and intent map on disk hold.
 *
 * carry: the superblock that starts the new epoch marks the chunks that
 * are MARKED now, and they stay MARKED, so the first writes to them after
 * the checkpoint need no FUA write of their own: a workload keeps writing
 * where it was writing.  That superblock is written anyway; the cost is
 * the over-report of a crash before the cleaner retires the carried
 * chunks that stay idle (one or two clean intervals, as for any mark).
 * Without carry the new epoch starts with an empty intent map.
 */
int chj_md_checkpoint(struct chj_metadata *md, bool carry, u64 *new_epoch)
{
	u64 nr_ext = count_runs(md), need = chj_journal_blocks_for(nr_ext);
	u64 jb = le64_to_cpu(md->sb.journal_blocks);
	u32 coarse = le32_to_cpu(md->sb.flags) & CHJ_SB_F_COARSE;
	u8 *old_intent = md->saved_intent;
	struct chj_superblock sb;
	unsigned long c;
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
		r = journal_write(md, nr_ext, coarse ? CHJ_JF_COARSE : 0);
		if (r)
			return r;
		sb.journal_tail = cpu_to_le64(le64_to_cpu(sb.journal_tail) + need);
	}
	sb.current_epoch = cpu_to_le64(md->cur_epoch + 1);
	sb.epoch_start_time = cpu_to_le64(ktime_get_real_seconds());
	sb.flags &= ~cpu_to_le32(CHJ_SB_F_COARSE);
	memcpy(old_intent, md->intent, sizeof(md->intent));
	/*
	 * The new intent map is cmark: a chunk left set in intent by a
	 * failed commit (not MARKED) is not carried.
	 */
	memset(md->intent, 0, sizeof(md->intent));
	if (carry)
		for_each_set_bit(c, md->cmark, md->nr_chunks)
			md->intent[c / 8] |= 1u << (c % 8);
	r = sb_commit(md, &sb);
	if (r) {
		memcpy(md->intent, old_intent, sizeof(md->intent));
		return r;
	}
	/* Blocks stamped with the old epoch now read as empty on disk too. */
	memset(md->bits, 0, md->bits_len);
	memset(md->durable, 0, md->bits_len);
	bitmap_zero(md->dirty, md->bitmap_blocks);
	/*
	 * Carried chunks keep cmark and cactive: those written since the last
	 * clean pass survive the next one, the others are retired by it.
	 */
	if (!carry) {
		bitmap_zero(md->cmark, CHJ_MAX_CHUNKS);
		bitmap_zero(md->cactive, CHJ_MAX_CHUNKS);
	}
	percpu_counter_set(&md->marked, 0);	/* writes drained */
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

/* The chunk size for nr_regions: the table's, or bigger to fit the map. */
static void set_geometry(struct chj_metadata *md, u64 nr_regions)
{
	md->chunk_shift = chj_chunk_shift_for(nr_regions, md->want_shift);
	md->nr_chunks = chj_chunks_for(nr_regions, md->chunk_shift);
}

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
	kvfree(md->dirty);
	kvfree(md->durable);
}

/* (Re)size the in-core bitmap, keeping its bits. */
static int alloc_bits(struct chj_metadata *md, u64 bitmap_blocks)
{
	size_t len = bits_len_for(bitmap_blocks);
	u8 *bits = kvzalloc(len, GFP_KERNEL);
	unsigned long *durable = kvzalloc(len, GFP_KERNEL);
	unsigned long *dirty = kvcalloc(BITS_TO_LONGS(bitmap_blocks),
					sizeof(long), GFP_KERNEL);

	if (!bits || !durable || !dirty) {
		kvfree(bits);
		kvfree(durable);
		kvfree(dirty);
		return -ENOMEM;
	}
	if (md->bits)
		memcpy(bits, md->bits, min(len, md->bits_len));
	if (md->durable)
		memcpy(durable, md->durable, min(len, md->bits_len));
	if (md->dirty)
		memcpy(dirty, md->dirty, min(BITS_TO_LONGS(bitmap_blocks),
					     BITS_TO_LONGS(md->bitmap_blocks)) * sizeof(long));
	free_bits(md);
	md->bits = bits;
	md->durable = durable;
	md->dirty = dirty;
	md->bits_len = len;
	return 0;
}

/* Write every bitmap block empty for the current epoch. */
static int write_empty_bitmap(struct chj_metadata *md)
{
	u64 blk[CHJ_BATCH], b = 0;
	unsigned int i, n;
	int r;

	while (b < md->bitmap_blocks) {
		n = min_t(u64, CHJ_BATCH, md->bitmap_blocks - b);
		for (i = 0; i < n; i++)
			blk[i] = b + i;
		r = write_blocks(md, blk, n);
		if (r)
			return r;
		b += n;
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
	set_geometry(md, md->nr_regions);
	r = alloc_bits(md, md->bitmap_blocks);
	if (!r)
		r = write_empty_bitmap(md);
	if (!r)
		r = sb_commit(md, &sb);
	if (!r)
		r = sb_commit(md, &sb);
	if (!r)
		DMINFO("formatted metadata: %llu regions of %u sectors, chunks of %llu regions",
		       md->nr_regions, region_sectors, 1ull << md->chunk_shift);
	return r;
}

/*
 * The origin grew.  New space counts as changed.  When the bitmap needs more
 * blocks it takes them from the front of the journal, whose history is
 * dropped first (oldest_epoch rises: nobody is handed a short list).  The
 * intent map is empty here (chj_md_open() settled it), so the chunk size may
 * change with the new geometry.
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
	set_geometry(md, nr);
	/*
	 * New geometry first, flagged all-changed until the new space is
	 * marked: a crash in between reads conservatively, and no bit is ever
	 * set past the nr_regions of the superblock in force.
	 */
	sb.flags |= cpu_to_le32(CHJ_SB_F_ALL_CHANGED);
	r = sb_commit(md, &sb);
	if (!r) {
		set_exact(md, div_u64(old_origin, rs), nr - 1);
		recount(md);
		r = write_exact(md, NULL, false);
	}
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
	for (i = 0; i < CHJ_BATCH; i++)
		if (md->pages[i])
			__free_page(md->pages[i]);
	if (md->sb_page)
		__free_page(md->sb_page);
	free_bits(md);
	percpu_counter_destroy(&md->marked);	/* no-op if never set up */
	bioset_exit(&md->bs);
	kvfree(md);
}

static struct chj_metadata *md_alloc(struct block_device *bdev)
{
	struct chj_metadata *md = kvzalloc_obj(*md);
	unsigned int i;

	if (!md)
		return NULL;
	md->bdev = bdev;
	md->dev_blocks = bdev_nr_sectors(bdev) / CHJ_BLOCK_SECTORS;
	if (bioset_init(&md->bs, CHJ_BATCH, 0, BIOSET_NEED_BVECS)) {
		kvfree(md);
		return NULL;
	}
	md->sb_page = alloc_page(GFP_KERNEL);
	for (i = 0; i < CHJ_BATCH; i++) {
		md->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!md->pages[i])
			break;
	}
	if (!md->sb_page || i < CHJ_BATCH ||
	    percpu_counter_init(&md->marked, 0, GFP_KERNEL)) {
		chj_md_close(md);
		return NULL;
	}
	return md;
}

/*
 * Load a valid superblock, its exact map and intent map.  A marked intent
 * map means the tracker stopped uncleanly: every region of a marked chunk
 * joins the exact map (that is the crash answer) and the epoch is flagged
 * coarse.  Then settle: write the exact map and commit a format-2
 * superblock with an empty intent map of the table's chunk size.  Format 1
 * is upgraded by the same commit: the layout is the same, so a crash
 * before it leaves the old copy in force, after it the new one, and both
 * load with nothing lost.
 */
static int load(struct chj_metadata *md, const struct chj_superblock *disk,
		const struct chj_intent *in)
{
	struct chj_superblock sb = *disk;
	u32 version = le32_to_cpu(disk->version);
	bool marked;
	int r;

	md->sb = sb;
	md->cur_epoch = le64_to_cpu(sb.current_epoch);
	md->nr_regions = le64_to_cpu(sb.nr_regions);
	md->bitmap_blocks = le64_to_cpu(sb.bitmap_blocks);
	r = alloc_bits(md, md->bitmap_blocks);
	if (!r)
		r = load_bitmap(md);
	if (r)
		return r;
	memcpy(md->intent, in->bits, sizeof(md->intent));
	md->chunk_shift = le32_to_cpu(in->chunk_shift);
	md->nr_chunks = chj_chunks_for(md->nr_regions, md->chunk_shift);
	marked = version >= 2 && memchr_inv(md->intent, 0, sizeof(md->intent));
	if (marked) {
		intent_to_exact(md);
		sb.flags |= cpu_to_le32(CHJ_SB_F_COARSE);
		DMWARN("unclean stop: the marked chunks of epoch %llu count as changed",
		       md->cur_epoch);
	}
	r = write_exact(md, NULL, false);
	if (r)
		return r;
	memset(md->intent, 0, sizeof(md->intent));
	set_geometry(md, md->nr_regions);
	/* A clean format-2 stop with this chunk size needs no commit. */
	if (!marked && version >= 2 &&
	    md->chunk_shift == le32_to_cpu(in->chunk_shift))
		return 0;
	r = sb_commit(md, &sb);
	if (!r && version < 2)
		DMINFO("metadata upgraded from format %u to %u", version, CHJ_VERSION);
	return r;
}

struct chj_metadata *chj_md_open(struct block_device *bdev, u64 origin_sectors,
				 u32 region_sectors, u32 chunk_shift,
				 bool mark_all, char **error)
{
	struct chj_metadata *md = md_alloc(bdev);
	struct chj_intent *in = kzalloc_obj(*in);
	struct chj_superblock sb;
	int r;

	if (!md || !in) {
		kfree(in);
		chj_md_close(md);
		*error = "Cannot allocate metadata";
		return ERR_PTR(-ENOMEM);
	}
	md->want_shift = chunk_shift;
	r = sb_read(bdev, md->sb_page, &sb, in, error);
	if (r == 1) {
		r = format(md, origin_sectors, region_sectors);
		if (r)
			*error = "Cannot format metadata device";
	} else if (!r) {
		if (le32_to_cpu(sb.region_sectors) != region_sectors) {
			*error = "Region size differs from the metadata's";
			r = -EINVAL;
		} else if (origin_sectors < le64_to_cpu(sb.origin_sectors)) {
			*error = "Shrinking a tracked origin is not supported";
			r = -EINVAL;
		} else {
			r = load(md, &sb, in);
			if (r)
				*error = "Cannot load metadata";
		}
	}
	kfree(in);
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
	/*
	 * Every exact bit in core is on the device now (read from it or
	 * written); after a flush it is durable, and later writes to those
	 * regions need no chunk mark.
	 */
	if (!r) {
		r = flush_md(md);
		if (r)
			*error = "Cannot flush the metadata device";
		else
			prove_all(md);
	}
	if (r) {
		chj_md_close(md);
		return ERR_PTR(r);
	}
	return md;
}

void chj_md_stats(struct chj_metadata *md, struct chj_md_stats *st)
{
	unsigned int i;

	st->current_epoch = md->cur_epoch;
	st->oldest_epoch = le64_to_cpu(md->sb.oldest_epoch);
	st->marked = percpu_counter_sum_positive(&md->marked);
	st->nr_regions = md->nr_regions;
	st->journal_used = le64_to_cpu(md->sb.journal_tail) -
			   le64_to_cpu(md->sb.journal_head);
	st->journal_blocks = le64_to_cpu(md->sb.journal_blocks);
	st->chunk_regions = 1ull << md->chunk_shift;
	st->marked_chunks = 0;
	for (i = 0; i < sizeof(md->intent); i++)
		st->marked_chunks += hweight8(md->intent[i]);
	st->coarse = le32_to_cpu(md->sb.flags) & CHJ_SB_F_COARSE;
	st->bitmap_writes = READ_ONCE(md->bitmap_writes);
	st->journal_writes = READ_ONCE(md->journal_writes);
	st->sb_writes = READ_ONCE(md->sb_writes);
	st->chunk_marks = READ_ONCE(md->chunk_marks);
	st->chunk_retires = READ_ONCE(md->chunk_retires);
}
