/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * chj on-disk metadata format: the one definition, compiled by the dm-chj
 * kernel module and by userspace (libchj, chj, chj-resolve, tests).
 *
 * docs/format.md describes every field byte by byte.  In short, the metadata
 * device is an array of 4 KiB blocks:
 *
 *   block 0, 1       two superblock copies; the valid one with the highest
 *                    seq wins, and commit N goes to block N % 2, so a torn
 *                    superblock write always leaves the previous one intact.
 *                    Format 2: after the 512-byte superblock, in the same
 *                    block and committed with it, the intent map: one bit
 *                    per chunk (2^chunk_shift regions) of the current epoch
 *   bitmap area      one bit per origin region for the *current* epoch (the
 *                    exact map); each block is stamped with the epoch it
 *                    was written in and counts only while that epoch is
 *                    current, so ending an epoch needs no rewrite of it
 *   journal area     circular log of closed epochs' change sets as extents
 *                    of regions; block with sequence s lives at s % blocks
 *
 * Invariant the format serves: before any write to a region is issued to
 * the origin, the region's bit is durable in the bitmap area or (format 2)
 * its chunk's bit is durable in the intent map of the superblock in force;
 * a chunk bit is cleared only by a superblock committed after the exact
 * bits of every region written under it are durable.  A closed epoch's
 * change set is durable in the journal before the superblock that ends the
 * epoch.  So the current epoch's changes are the bitmap's bits plus every
 * region of every chunk marked in the intent map.  The in-core states
 * dm-chj goes through to keep it: the state table at the top of
 * dm-target/dm-chj-metadata.c.
 *
 * Everything is little-endian.  Checksums are CRC-32C (Castagnoli, the
 * standard one: initial ~0, final xor ~0) over the block after the csum field.
 * Each side supplies chj_crc32c(const void *, size_t) with that meaning.
 */
#ifndef CHJ_FORMAT_H
#define CHJ_FORMAT_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <asm/byteorder.h>
#define chj_le32(x)		le32_to_cpu(x)
#define chj_le64(x)		le64_to_cpu(x)
#define chj_cpu32(x)		cpu_to_le32(x)
#define chj_cpu64(x)		cpu_to_le64(x)
#define chj_div_u64(a, b)	div64_u64((a), (b))
#else
#include <linux/types.h>
#include <assert.h>
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#define chj_le32(x)		le32toh(x)
#define chj_le64(x)		le64toh(x)
#define chj_cpu32(x)		htole32(x)
#define chj_cpu64(x)		htole64(x)
#define chj_div_u64(a, b)	((a) / (b))
#ifndef __packed
#define __packed		__attribute__((__packed__))
#endif
#endif

#define CHJ_SECTOR_SHIFT	9
#define CHJ_BLOCK_SIZE		4096u
#define CHJ_BLOCK_SECTORS	(CHJ_BLOCK_SIZE >> CHJ_SECTOR_SHIFT)

#define CHJ_SB_MAGIC		0x4a48432eu	/* ".CHJ" read as LE bytes */
#define CHJ_BITMAP_MAGIC	0x4d424843u	/* "CHBM" */
#define CHJ_JOURNAL_MAGIC	0x4c4a4843u	/* "CHJL" */
#define CHJ_INTENT_MAGIC	0x49484843u	/* "CHHI" */
/* The format written; CHJ_VERSION_MIN .. CHJ_VERSION are read. */
#define CHJ_VERSION		2u
#define CHJ_VERSION_MIN		1u

/* Bytes of a superblock covered by its checksum: one 512-byte sector. */
#define CHJ_SB_BYTES		512u
#define CHJ_SB_COPIES		2u

/* Region size limits in 512-byte sectors: 4 KiB .. 1 GiB, powers of two. */
#define CHJ_MIN_REGION_SECTORS	8u
#define CHJ_MAX_REGION_SECTORS	0x200000u

/* The smallest journal a format accepts, in blocks. */
#define CHJ_MIN_JOURNAL_BLOCKS	8u

/* Superblock flags. */
/*
 * The current epoch must be read as "every region changed".  Set when the
 * tracker could not prove its marks complete (metadata write failure, a
 * damaged bitmap block repaired by chj check --repair); the target rewrites
 * the bitmap all-ones on its next load and then clears the flag.
 */
#define CHJ_SB_F_ALL_CHANGED	0x1u
/*
 * Format 2: the current epoch's record is coarse: it holds whole chunks that
 * were marked in the intent map when the tracker stopped uncleanly (a crash,
 * a reset), so it may list regions that were not written.  Carried into the
 * closed epoch's journal record (CHJ_JF_COARSE); cleared by the checkpoint.
 */
#define CHJ_SB_F_COARSE		0x2u
#define CHJ_SB_F_KNOWN		(CHJ_SB_F_ALL_CHANGED | CHJ_SB_F_COARSE)

struct chj_superblock {
	__le32 csum;		/* CRC-32C of bytes [4, CHJ_SB_BYTES) */
	__le32 magic;		/* CHJ_SB_MAGIC */
	__le32 version;		/* CHJ_VERSION_MIN .. CHJ_VERSION */
	__le32 flags;		/* CHJ_SB_F_* */
	__le64 seq;		/* commit sequence; lives in block seq % 2 */
	__u8 uuid[16];		/* chosen at format time */
	__le32 block_size;	/* CHJ_BLOCK_SIZE */
	__le32 region_sectors;	/* sectors per region, power of two */
	__le64 nr_regions;	/* regions tracked */
	__le64 origin_sectors;	/* origin length tracked, in sectors */
	__le64 metadata_blocks;	/* blocks of the metadata device in use */
	__le64 bitmap_start;	/* first bitmap block */
	__le64 bitmap_blocks;	/* bitmap blocks */
	__le64 journal_start;	/* first journal block */
	__le64 journal_blocks;	/* journal blocks (circular) */
	__le64 current_epoch;	/* epoch the bitmap is recording; starts at 1 */
	__le64 oldest_epoch;	/* "changes since E" answerable for E >= this */
	__le64 journal_head;	/* seq of the oldest retained journal block */
	__le64 journal_tail;	/* seq the next journal block will get */
	__le64 epoch_start_time;	/* unix seconds the current epoch began */
	__le64 format_time;	/* unix seconds of format */
	__u8 reserved[CHJ_SB_BYTES - 152];
} __packed;

/*
 * Format 2: the intent map, at byte CHJ_INTENT_OFFSET of each superblock
 * block, written in the same write as the superblock before it.  Bit c
 * (chj_format.h bit order, as the bitmap) marks chunk c: regions
 * [c << chunk_shift, (c + 1) << chunk_shift).  It belongs to the copy whose
 * seq it carries: a superblock copy whose intent map fails its checksum or
 * carries another seq (a torn write) is not valid.  Bits past the last
 * chunk are zero.  Format 1 has zeroes here and no intent map.
 */
#define CHJ_INTENT_OFFSET	CHJ_SB_BYTES
#define CHJ_INTENT_HDR_BYTES	24u
#define CHJ_INTENT_BYTES	(CHJ_BLOCK_SIZE - CHJ_INTENT_OFFSET - CHJ_INTENT_HDR_BYTES)
#define CHJ_MAX_CHUNKS		(CHJ_INTENT_BYTES * 8u)
#define CHJ_MAX_CHUNK_SHIFT	40u

struct chj_intent {
	__le32 csum;		/* CRC-32C of bytes [4, sizeof) of this struct */
	__le32 magic;		/* CHJ_INTENT_MAGIC */
	__le64 seq;		/* the seq of the superblock it belongs to */
	__le32 chunk_shift;	/* log2 of regions per chunk */
	__le32 reserved;	/* zero */
	__u8 bits[CHJ_INTENT_BYTES];
} __packed;

/* Regions per bitmap block: 4080 bytes of bits after a 16-byte header. */
#define CHJ_BITMAP_HDR_BYTES	16u
#define CHJ_BITMAP_BYTES	(CHJ_BLOCK_SIZE - CHJ_BITMAP_HDR_BYTES)
#define CHJ_REGIONS_PER_BLOCK	(CHJ_BITMAP_BYTES * 8u)

/*
 * Bit r of the bitmap area is bit (r % 8) of byte (r / 8) counted across the
 * bits[] arrays of consecutive blocks: little-endian bit order, the layout of
 * the kernel's *_bit_le() helpers.  Bits past nr_regions are zero.
 */
struct chj_bitmap_block {
	__le32 csum;		/* CRC-32C of bytes [4, CHJ_BLOCK_SIZE) */
	__le32 magic;		/* CHJ_BITMAP_MAGIC */
	__le64 epoch;		/* bits count only while this epoch is current */
	__u8 bits[CHJ_BITMAP_BYTES];
} __packed;

struct chj_extent {
	__le64 start;		/* first region */
	__le64 count;		/* regions, >= 1 */
} __packed;

#define CHJ_JOURNAL_HDR_BYTES	32u
#define CHJ_JOURNAL_EXTENTS \
	((CHJ_BLOCK_SIZE - CHJ_JOURNAL_HDR_BYTES) / sizeof(struct chj_extent))

/* Journal block flags: an epoch's record is blocks FIRST .. LAST in order. */
#define CHJ_JF_FIRST		0x1u
#define CHJ_JF_LAST		0x2u
/* The epoch's record is coarse (CHJ_SB_F_COARSE was set when it closed). */
#define CHJ_JF_COARSE		0x4u
#define CHJ_JF_KNOWN		(CHJ_JF_FIRST | CHJ_JF_LAST | CHJ_JF_COARSE)

/*
 * One block of a closed epoch's change set.  Extents are sorted, disjoint,
 * non-adjacent and inside [0, nr_regions).  An epoch with no change has no
 * record at all.
 */
struct chj_journal_block {
	__le32 csum;		/* CRC-32C of bytes [4, CHJ_BLOCK_SIZE) */
	__le32 magic;		/* CHJ_JOURNAL_MAGIC */
	__le64 seq;		/* must equal the sequence it was read for */
	__le64 epoch;		/* the closed epoch this describes */
	__le32 nr_extents;	/* 0 .. CHJ_JOURNAL_EXTENTS */
	__le32 flags;		/* CHJ_JF_* */
	struct chj_extent ext[CHJ_JOURNAL_EXTENTS];
} __packed;

static_assert(sizeof(struct chj_superblock) == CHJ_SB_BYTES, "superblock size");
static_assert(sizeof(struct chj_bitmap_block) == CHJ_BLOCK_SIZE, "bitmap block size");
static_assert(sizeof(struct chj_journal_block) == CHJ_BLOCK_SIZE, "journal block size");
static_assert(offsetof(struct chj_superblock, format_time) == 144, "superblock layout");
static_assert(sizeof(struct chj_intent) == CHJ_BLOCK_SIZE - CHJ_INTENT_OFFSET,
	      "intent map fills the superblock block");
static_assert(offsetof(struct chj_intent, bits) == CHJ_INTENT_HDR_BYTES,
	      "intent header size");
static_assert(offsetof(struct chj_journal_block, ext) == CHJ_JOURNAL_HDR_BYTES,
	      "journal header size");

/* ---- layout arithmetic, shared so both sides agree on every boundary ---- */

static inline __u64 chj_regions_for(__u64 origin_sectors, __u32 region_sectors)
{
	return chj_div_u64(origin_sectors + region_sectors - 1, region_sectors);
}

static inline __u64 chj_bitmap_blocks_for(__u64 nr_regions)
{
	return chj_div_u64(nr_regions + CHJ_REGIONS_PER_BLOCK - 1,
			   CHJ_REGIONS_PER_BLOCK);
}

/* Smallest metadata device, in blocks, that can track nr_regions. */
static inline __u64 chj_min_metadata_blocks(__u64 nr_regions)
{
	return CHJ_SB_COPIES + chj_bitmap_blocks_for(nr_regions) +
	       CHJ_MIN_JOURNAL_BLOCKS;
}

static inline int chj_region_sectors_valid(__u64 rs)
{
	return rs >= CHJ_MIN_REGION_SECTORS && rs <= CHJ_MAX_REGION_SECTORS &&
	       (rs & (rs - 1)) == 0;
}

/* Journal blocks needed to record n extents. */
static inline __u64 chj_journal_blocks_for(__u64 nr_extents)
{
	if (!nr_extents)
		return 0;
	return chj_div_u64(nr_extents + CHJ_JOURNAL_EXTENTS - 1,
			   CHJ_JOURNAL_EXTENTS);
}

/*
 * Check a superblock whose checksum and magic already matched.  dev_blocks
 * is the metadata device size in blocks.  Returns NULL when every field is
 * in range and consistent with the others, else a reason for the user.
 * Every size later used to index the device is checked here.
 */
static inline const char *chj_sb_check(const struct chj_superblock *sb,
				       __u64 dev_blocks)
{
	__u64 rs = chj_le32(sb->region_sectors);
	__u64 nr = chj_le64(sb->nr_regions);
	__u64 origin = chj_le64(sb->origin_sectors);
	__u64 mb = chj_le64(sb->metadata_blocks);
	__u64 bs = chj_le64(sb->bitmap_start), bb = chj_le64(sb->bitmap_blocks);
	__u64 js = chj_le64(sb->journal_start), jb = chj_le64(sb->journal_blocks);
	__u64 cur = chj_le64(sb->current_epoch), old = chj_le64(sb->oldest_epoch);
	__u64 head = chj_le64(sb->journal_head), tail = chj_le64(sb->journal_tail);

	if (chj_le32(sb->version) < CHJ_VERSION_MIN ||
	    chj_le32(sb->version) > CHJ_VERSION)
		return "unsupported format version";
	if (chj_le32(sb->flags) & ~CHJ_SB_F_KNOWN)
		return "unknown superblock flags";
	if (chj_le32(sb->block_size) != CHJ_BLOCK_SIZE)
		return "unsupported metadata block size";
	if (!chj_region_sectors_valid(rs))
		return "region size out of range";
	if (!nr || nr > (1ull << 40))
		return "region count out of range";
	if (!origin || origin > nr * rs || origin <= (nr - 1) * rs)
		return "origin size does not match region count";
	if (mb > dev_blocks)
		return "metadata device smaller than the format says";
	if (bs != CHJ_SB_COPIES || bb != chj_bitmap_blocks_for(nr))
		return "bitmap area out of place";
	/* Each term bounded by mb first: the sum cannot wrap around. */
	if (js != bs + bb || js > mb || jb > mb || jb < CHJ_MIN_JOURNAL_BLOCKS ||
	    js + jb != mb)
		return "journal area out of place";
	if (!cur || !old || old > cur)
		return "epoch numbers inconsistent";
	if (head > tail || tail - head > jb)
		return "journal pointers inconsistent";
	if (old == cur && head != tail)
		return "journal holds epochs that are not retained";
	return (void *)0;
}

/* Chunks of 2^shift regions covering nr_regions. */
static inline __u64 chj_chunks_for(__u64 nr_regions, __u32 shift)
{
	return (nr_regions + (1ull << shift) - 1) >> shift;
}

/*
 * The smallest chunk shift >= want whose chunks fit the intent map: big
 * origins get bigger chunks (28480 chunks: 4 MiB chunks up to 111 GiB of
 * 4 KiB regions, 64 MiB up to 1.7 TiB).
 */
static inline __u32 chj_chunk_shift_for(__u64 nr_regions, __u32 want)
{
	while (want < CHJ_MAX_CHUNK_SHIFT &&
	       chj_chunks_for(nr_regions, want) > CHJ_MAX_CHUNKS)
		want++;
	return want;
}

/* Is chunk c marked in an intent map's bits?  Bit c%8 of byte c/8. */
static inline int chj_intent_test(const __u8 *bits, __u64 c)
{
	return (bits[c / 8] >> (c % 8)) & 1;
}

/*
 * Check the intent map of a format-2 superblock copy whose superblock
 * passed chj_sb_check(); csum is its checksum as computed by the caller.
 * NULL when it belongs to the copy and every field is in range.
 */
static inline const char *chj_intent_check(const struct chj_superblock *sb,
					   const struct chj_intent *in,
					   __u32 csum)
{
	__u32 shift = chj_le32(in->chunk_shift);
	__u64 nc, i;

	if (chj_le32(in->magic) != CHJ_INTENT_MAGIC || chj_le32(in->csum) != csum)
		return "intent map damaged (torn superblock write?)";
	if (chj_le64(in->seq) != chj_le64(sb->seq))
		return "intent map belongs to another superblock (torn write?)";
	if (shift > CHJ_MAX_CHUNK_SHIFT || in->reserved)
		return "intent map chunk size out of range";
	nc = chj_chunks_for(chj_le64(sb->nr_regions), shift);
	if (nc > CHJ_MAX_CHUNKS)
		return "intent map too small for its chunk size";
	/* Bits past the last chunk are zero (nc <= CHJ_MAX_CHUNKS). */
	for (i = nc; i < CHJ_MAX_CHUNKS; i++)
		if (chj_intent_test(in->bits, i))
			return "intent map marks chunks past the origin";
	return (void *)0;
}

/* Journal block holding sequence number seq. */
static inline __u64 chj_journal_block_nr(const struct chj_superblock *sb,
					 __u64 seq)
{
	__u64 jb = chj_le64(sb->journal_blocks);

	return chj_le64(sb->journal_start) + (seq - chj_div_u64(seq, jb) * jb);
}

#endif /* CHJ_FORMAT_H */
