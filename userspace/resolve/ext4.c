// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ext2/3/4: classify the changed blocks with libext2fs, then name files.
 *
 *  1. Journal blocks in changed regions: the jbd2 transactions written
 *     there name home blocks (jbd2.c), which are added to the changed set,
 *     since a committed transaction's home blocks may not be written back
 *     yet.
 *  2. Inode-table blocks: their inodes, by arithmetic (group, index).
 *  3. Superblocks, group descriptors, bitmaps, MMP: other metadata.  No
 *     file change is only there: allocating or freeing also writes the
 *     inode (i_blocks, size) or a directory block.
 *  4. Everything else: an inode scan walks extent trees (and block maps,
 *     EA blocks) to find the owner of each changed block: data -> the file,
 *     directory blocks -> the directory, extent-tree/indirect blocks -> the
 *     file's extent map, EA blocks -> every inode using it.  Blocks free in
 *     the block bitmap need no owner; the scan stops once every allocated
 *     changed block has its owner (ext4 shares no block, except EA blocks,
 *     whose sharers are all found).
 *  5. The namespace walk (walk.c) names every listed inode, every link.
 */
#include <errno.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "jbd2.h"
#include "libchj.h"
#include "resolve.h"
#include "store.h"

#define E4_MAX_DEPTH	5	/* EXT4_MAX_EXTENT_DEPTH */
#define EXT_MAGIC	0xf30a
#define EA_MAGIC	0xea020000u

struct itab {
	uint64_t start, len;	/* bytes */
	uint32_t group;
};

struct jext {
	uint64_t lblk, pblk, len;	/* journal inode extents, blocks */
};

struct e4 {
	struct resolver *r;
	ext2_filsys fs;
	uint64_t bs, nblocks, fs_bytes;
	uint32_t isz, ipg, first_ino;
	struct rangeset changed;	/* device changes in the fs + journal homes */
	struct rangeset jhome;		/* home blocks named by the journal */
	struct rangeset itable, statmeta, journal;
	struct itab *it;
	size_t nit, itcap;
	struct jext *jm;
	size_t njm, jmcap;
	struct rangeset other;		/* changed, not static metadata */
	struct rangeset other_alloc;	/* of those, allocated */
	uint64_t remaining;		/* other_alloc bytes without owner yet */
	struct rangeset owned;		/* of other, claimed by a linked inode */
	struct rangeset orphaned;	/* of other, held by open unlinked inodes */
	struct u64set nodes;		/* mapping blocks seen in this inode */
	int shared_ea;			/* a changed EA block has sharers */
	struct u64set ea_seen;		/* EA blocks accounted */
	uint64_t *cand;			/* in-use inodes of changed inode blocks */
	size_t ncand, candcap;
	struct store st;		/* the state store (store.c) */
	struct chash {
		uint64_t ino;
		uint8_t h[ST_HASH];
	} *ch;				/* candidates' records (as now), hashed */
	size_t nch, chcap;
	uint64_t scanned, bad;
	unsigned char *lvl[E4_MAX_DEPTH + 1];
};

/* ---- where an inode is ---- */

uint64_t ext4_inode_block(ext2_filsys fs, uint64_t ino)
{
	uint64_t ipg = EXT2_INODES_PER_GROUP(fs->super), isz = EXT2_INODE_SIZE(fs->super);
	uint64_t g, loc;

	if (!ino || ino > fs->super->s_inodes_count || !ipg || !isz)
		return 0;
	g = (ino - 1) / ipg;
	if (g >= fs->group_desc_count)
		return 0;
	loc = ext2fs_inode_table_loc(fs, (dgrp_t)g);
	if (!loc)
		return 0;
	loc += (ino - 1) % ipg * isz / fs->blocksize;
	return loc < ext2fs_blocks_count(fs->super) ? loc : 0;
}

/* ---- walking an inode's blocks ---- */

struct visit {
	/* a run of file blocks [lblk, lblk + len) at pblk */
	void (*ext)(struct e4 *c, void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len,
		    int unwritten);
	/* a mapping block: extent-tree node or indirect block */
	void (*node)(struct e4 *c, void *ctx, uint64_t pblk);
	void *ctx;
	int bad;		/* a malformed map was seen */
	ext2_ino_t ino;		/* for extent block checksums */
};

static int ext_node(struct e4 *c, const unsigned char *h, size_t size, int depth_want,
		    struct visit *v, int level)
{
	unsigned entries = le16(h + 2), max = le16(h + 4), depth = le16(h + 6);

	if (le16(h) != EXT_MAGIC || entries > max || max > (size - 12) / 12 ||
	    depth > E4_MAX_DEPTH || (depth_want >= 0 && (int)depth != depth_want) ||
	    level > E4_MAX_DEPTH) {
		v->bad = 1;
		return -1;
	}
	for (unsigned i = 0; i < entries; i++) {
		const unsigned char *e = h + 12 + 12 * i;

		if (!depth) {
			uint64_t lblk = le32(e), len = le16(e + 4);
			uint64_t pblk = (uint64_t)le16(e + 6) << 32 | le32(e + 8);
			int unwritten = len > 32768;

			if (unwritten)
				len -= 32768;
			if (!len || pblk >= c->nblocks || len > c->nblocks - pblk) {
				v->bad = 1;
				continue;
			}
			v->ext(c, v->ctx, lblk, pblk, len, unwritten);
		} else {
			uint64_t child = (uint64_t)le16(e + 8) << 32 | le32(e + 4);
			unsigned char *b = c->lvl[level + 1];

			/*
			 * A node seen before in this map (ext4 shares none):
			 * without this a few KiB of shared nodes would mean
			 * 4 x 340^3 callbacks.  Each node is read once, so the
			 * work per inode is bounded by the filesystem's blocks.
			 */
			if (child >= c->nblocks || !u64set_add(&c->nodes, child)) {
				v->bad = 1;
				continue;
			}
			if (v->node)
				v->node(c, v->ctx, child);
			if (io_channel_read_blk64(c->fs->io, child, 1, b) ||
			    (ext2fs_has_feature_metadata_csum(c->fs->super) &&
			     !ext2fs_extent_block_csum_verify(c->fs, v->ino,
							      (struct ext3_extent_header *)b))) {
				/* Unreadable, or torn / damaged: its extents
				 * are unknown. */
				v->bad = 1;
				continue;
			}
			ext_node(c, b, c->bs, (int)depth - 1, v, level + 1);
		}
	}
	return 0;
}

struct bi_ctx {
	struct e4 *c;
	struct visit *v;
};

static int bi_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		 blk64_t ref_blk, int ref_offset, void *priv)
{
	struct bi_ctx *b = priv;

	(void)fs;
	(void)ref_blk;
	(void)ref_offset;
	if (*blocknr >= b->c->nblocks) {
		b->v->bad = 1;
		return 0;
	}
	/* An indirect block seen before in this map: shared, malformed. */
	if (blockcnt < 0 && !u64set_add(&b->c->nodes, *blocknr)) {
		b->v->bad = 1;
		return BLOCK_ABORT;
	}
	if (blockcnt >= 0)
		b->v->ext(b->c, b->v->ctx, (uint64_t)blockcnt, *blocknr, 1, 0);
	else if (b->v->node)
		b->v->node(b->c, b->v->ctx, *blocknr);
	return 0;
}

/* Visit every block of inode ino (data and mapping blocks, not EA). */
static void inode_blocks(struct e4 *c, ext2_ino_t ino, struct ext2_inode *inode,
			 struct visit *v)
{
	if (!ext2fs_inode_has_valid_blocks2(c->fs, inode))
		return;
	if (inode->i_flags & EXT4_INLINE_DATA_FL)
		return;
	v->ino = ino;
	if (c->nodes.cap > 4096)
		u64set_free(&c->nodes);
	else if (c->nodes.n)
		u64set_clear(&c->nodes);
	if (inode->i_flags & EXT4_EXTENTS_FL) {
		ext_node(c, (const unsigned char *)inode->i_block, sizeof(inode->i_block), -1, v, 0);
		return;
	}
	{
		struct bi_ctx b = { c, v };

		if (ext2fs_block_iterate3(c->fs, ino, BLOCK_FLAG_READ_ONLY, NULL, bi_cb, &b))
			v->bad = 1;
	}
}

/* ---- static layout ---- */

static void add_itab(struct e4 *c, uint64_t blk, uint64_t nblk, uint32_t g)
{
	xgrow((void **)&c->it, &c->itcap, c->nit + 1, sizeof(*c->it));
	c->it[c->nit].start = blk * c->bs;
	c->it[c->nit].len = nblk * c->bs;
	c->it[c->nit].group = g;
	c->nit++;
	rs_add(&c->itable, blk * c->bs, nblk * c->bs);
}

static int cmp_itab(const void *a, const void *b)
{
	const struct itab *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static void jm_ext(struct e4 *c, void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len,
		   int unwritten)
{
	(void)ctx;
	(void)unwritten;
	xgrow((void **)&c->jm, &c->jmcap, c->njm + 1, sizeof(*c->jm));
	c->jm[c->njm].lblk = lblk;
	c->jm[c->njm].pblk = pblk;
	c->jm[c->njm].len = len;
	c->njm++;
	rs_add(&c->journal, pblk * c->bs, len * c->bs);
}

static void jm_node(struct e4 *c, void *ctx, uint64_t pblk)
{
	(void)ctx;
	rs_add(&c->journal, pblk * c->bs, c->bs);
}

static int layout(struct e4 *c)
{
	ext2_filsys fs = c->fs;
	struct ext2_super_block *sb = fs->super;
	struct resolver *r = c->r;

	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		blk64_t sblk = 0, old_desc = 0, new_desc = 0, it;
		blk_t used = 0;

		if (ext2fs_super_and_bgd_loc2(fs, g, &sblk, &old_desc, &new_desc, &used))
			return rx_fail(r, RX_ERROR, "%s: group %u: cannot locate its superblock",
				       r->dev_path, g);
		if (sblk || !g)
			rs_add(&c->statmeta, (uint64_t)sblk * c->bs, c->bs);
		if (old_desc)
			rs_add(&c->statmeta, old_desc * c->bs,
			       ((uint64_t)fs->desc_blocks + sb->s_reserved_gdt_blocks) * c->bs);
		if (new_desc)
			rs_add(&c->statmeta, new_desc * c->bs, c->bs);
		rs_add(&c->statmeta, ext2fs_block_bitmap_loc(fs, g) * c->bs, c->bs);
		rs_add(&c->statmeta, ext2fs_inode_bitmap_loc(fs, g) * c->bs, c->bs);
		it = ext2fs_inode_table_loc(fs, g);
		if (!it || it >= c->nblocks || fs->inode_blocks_per_group > c->nblocks - it)
			return rx_fail(r, RX_ERROR, "%s: group %u: inode table out of range",
				       r->dev_path, g);
		add_itab(c, it, fs->inode_blocks_per_group, g);
	}
	/* Block 0 holds the boot sector (and the superblock at 1 KiB). */
	rs_add(&c->statmeta, 0, (uint64_t)(sb->s_first_data_block + 1) * c->bs);
	if (ext2fs_has_feature_mmp(sb) && sb->s_mmp_block && sb->s_mmp_block < c->nblocks)
		rs_add(&c->statmeta, sb->s_mmp_block * c->bs, c->bs);
	rs_normalize(&c->statmeta);
	rs_normalize(&c->itable);
	if (c->nit)
		qsort(c->it, c->nit, sizeof(*c->it), cmp_itab);

	if (ext2fs_has_feature_journal_dev(sb))
		return rx_fail(r, RX_FULL_SCAN, "%s is an external journal device", r->dev_path);
	if (ext2fs_has_feature_journal(sb)) {
		struct ext2_inode inode;
		struct visit v = { jm_ext, jm_node, NULL, 0, 0 };

		if (!sb->s_journal_inum)
			return rx_fail(r, RX_FULL_SCAN,
				       "the ext4 journal is on another device: its changes are not tracked here");
		if (ext2fs_read_inode(fs, sb->s_journal_inum, &inode))
			return rx_fail(r, RX_ERROR, "%s: cannot read the journal inode", r->dev_path);
		inode_blocks(c, sb->s_journal_inum, &inode, &v);
		if (v.bad || !c->njm)
			return rx_fail(r, RX_ERROR, "%s: the journal inode's block map is damaged",
				       r->dev_path);
		rs_normalize(&c->journal);
	}
	return RX_OK;
}

/* ---- the journal ---- */

static uint64_t jblk_to_pblk(struct e4 *c, uint64_t jblk)
{
	size_t lo = 0, hi = c->njm;

	/* Extents come in logical order from the walk. */
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (c->jm[m].lblk + c->jm[m].len <= jblk)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo < c->njm && c->jm[lo].lblk <= jblk)
		return c->jm[lo].pblk + (jblk - c->jm[lo].lblk);
	return UINT64_MAX;
}

static int j_read(void *ctx, uint64_t jblk, void *buf)
{
	struct e4 *c = ctx;
	uint64_t p = jblk_to_pblk(c, jblk);

	if (p == UINT64_MAX)
		return -1;
	/* O_DIRECT: jbd2 writes journal blocks from private buffers. */
	return raw_read(c->r, buf, c->bs, p * c->bs) ? -1 : 0;
}

static int j_changed(void *ctx, uint64_t jblk)
{
	struct e4 *c = ctx;
	uint64_t p = jblk_to_pblk(c, jblk);

	return p != UINT64_MAX && rs_overlaps(&c->r->changed, p * c->bs, c->bs);
}

static void j_home(void *ctx, uint64_t blk)
{
	struct e4 *c = ctx;

	if (blk < c->nblocks)
		rs_add(&c->jhome, blk * c->bs, c->bs);
}

static void j_race(void *ctx)
{
	(void)ctx;
	test_log_race();
}

/*
 * What ext4 notes before the change map is read (r->method_state): the
 * jbd2 superblock's tail then, where the walk must start (jbd2.c's head
 * comment: a walk from the tail of its own time misses transactions
 * checkpointed between the map and the walk).
 */
struct ext4_pre {
	int journal;		/* an internal journal, its tail noted */
	uint32_t seq, start;	/* its s_sequence, s_start */
	uint64_t jsb_byte;	/* where its superblock is; UINT64_MAX: given
				   by the test hook, not read */
};

/* The walk's source, starting at the tail noted before the map (RX_OK),
 * once the journal is checked to be the one noted. */
static int journal_src(struct e4 *c, struct jbd2_src *src)
{
	struct resolver *r = c->r;
	const struct ext4_pre *pre = r->method_state;
	uint64_t p0 = jblk_to_pblk(c, 0);

	if (!pre || !pre->journal)
		return rx_fail(r, RX_FULL_SCAN,
			       "the ext4 journal's tail was not noted before the change map was read");
	if (pre->jsb_byte != UINT64_MAX && (p0 == UINT64_MAX || pre->jsb_byte != p0 * c->bs))
		return rx_fail(r, RX_FULL_SCAN,
			       "the ext4 journal is not where it was when the change map was read");
	*src = (struct jbd2_src){ c, (uint32_t)c->bs, 0, j_read, j_changed, j_home, j_race,
				  1, pre->seq, pre->start };
	src->nblocks = c->jm[c->njm - 1].lblk + c->jm[c->njm - 1].len;
	return RX_OK;
}

static int scan_journal(struct e4 *c)
{
	struct resolver *r = c->r;
	struct jbd2_src src;
	struct jbd2_info info;
	int rc;

	if (!c->njm || !rs_overlaps(&c->journal, 0, UINT64_MAX))
		return RX_OK;
	for (size_t i = 0; i < r->changed.n; i++)
		if (rs_overlaps(&c->journal, r->changed.v[i].start, r->changed.v[i].len))
			goto touched;
	return RX_OK;
touched:
	rc = journal_src(c, &src);
	if (rc)
		return rc;
	if (jbd2_scan(&src, &info)) {
		/* Without the journal's contents nothing hidden there is known. */
		if (info.lapped)
			return rx_fail(r, RX_FULL_SCAN, "the ext4 journal %s", info.why);
		return rx_fail(r, RX_FULL_SCAN, "the ext4 journal cannot be read: %s", info.why);
	}
	rs_normalize(&c->jhome);
	r->st.journal_trans = info.counted;
	r->st.journal_moved = info.moved;
	r->st.journal_seq_map = info.seq_from;
	r->st.journal_seq_now = info.seq_now;
	r->st.journal_blocks = rs_total(&c->jhome) / c->bs;
	return RX_OK;
}

/* ---- before the change map ---- */

/* The test hook's tail (target_log_at_map: "SEQUENCE:START", decimal, of
 * the jbd2 superblock in the image the map was made against) into p. */
static int pre_from_hook(struct resolver *r, const char *at, struct ext4_pre *p)
{
	unsigned long long seq, start;

	if (sscanf(at, "%llu:%llu", &seq, &start) != 2 || seq > UINT32_MAX || start > UINT32_MAX)
		return rx_fail(r, RX_ERROR, "CHJ_RESOLVE_LOG_AT_MAP: not \"SEQUENCE:START\" (ext4): %s", at);
	p->journal = 1;
	p->seq = (uint32_t)seq;
	p->start = (uint32_t)start;
	p->jsb_byte = UINT64_MAX;
	return RX_OK;
}

/* Where the internal journal's superblock (its block 0) is, in bytes, into
 * p->jsb_byte (p->journal 0: no internal journal).  Only the superblock,
 * the journal inode and its map are read: static while mounted. */
static int jsb_place(struct resolver *r, struct ext4_pre *p)
{
	struct ext2_inode inode;
	ext2_filsys fs;
	blk64_t pblk = 0;
	errcode_t err;
	int rc = RX_OK;

	err = ext2fs_open2(r->dev_path, NULL,
			   EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS |
			   EXT2_FLAG_SUPER_ONLY, 0, 0, unix_io_manager, &fs);
	if (err)
		return rx_fail(r, RX_ERROR, "%s: cannot open the ext4 filesystem: %s", r->dev_path,
			       error_message(err));
	/* An external journal: ext4_resolve says so (exit 3). */
	if (!ext2fs_has_feature_journal(fs->super) || !fs->super->s_journal_inum)
		goto out;
	err = ext2fs_read_inode(fs, fs->super->s_journal_inum, &inode);
	if (!err)
		err = ext2fs_bmap2(fs, fs->super->s_journal_inum, &inode, NULL, 0, 0, NULL, &pblk);
	if (err || !pblk || pblk >= ext2fs_blocks_count(fs->super)) {
		rc = rx_fail(r, RX_ERROR, "%s: the journal's first block cannot be found: %s",
			     r->dev_path, err ? error_message(err) : "out of range");
		goto out;
	}
	p->journal = 1;
	p->jsb_byte = (uint64_t)pblk * fs->blocksize;
out:
	ext2fs_close_free(&fs);
	return rc;
}

/* Before the change map: the journal's tail (struct ext4_pre). */
static int ext4_before_map(struct resolver *r)
{
	const char *at = target_log_at_map();
	struct ext4_pre *p = xcalloc(1, sizeof(*p));
	unsigned char b[1024];
	int rc;

	r->method_state = p;
	if (at)
		return pre_from_hook(r, at, p);
	rc = jsb_place(r, p);
	if (rc || !p->journal)
		return rc;
	/* O_DIRECT, as the walk: jbd2 writes its superblock itself (FUA). */
	rc = raw_read(r, b, sizeof(b), p->jsb_byte);
	if (rc)
		return rc;
	if (jbd2_sb_tail(b, sizeof(b), &p->seq, &p->start))
		return rx_fail(r, RX_FULL_SCAN, "%s: no jbd2 superblock at the journal's first block",
			       r->dev_path);
	return RX_OK;
}

/* ---- inode tables ---- */

static int skip_ino(struct e4 *c, uint64_t ino)
{
	struct ext2_super_block *sb = c->fs->super;

	if (ino == EXT2_ROOT_INO)
		return 0;
	return ino < c->first_ino || ino == sb->s_journal_inum ||
	       ino == sb->s_usr_quota_inum || ino == sb->s_grp_quota_inum ||
	       ino == sb->s_prj_quota_inum || ino == sb->s_orphan_file_inum;
}

struct blkcache {
	unsigned char *buf;
	uint64_t blk;
	int valid;
};

/* The first inode table (c->it, sorted by start) that ends after byte a. */
static size_t itable_first(const struct e4 *c, uint64_t a)
{
	size_t lo = 0, hi = c->nit;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (c->it[m].start + c->it[m].len <= a)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* [*s, *e): the part of inode table t inside [a, b). */
static void itable_clip(const struct itab *t, uint64_t a, uint64_t b, uint64_t *s, uint64_t *e)
{
	*s = a > t->start ? a : t->start;
	*e = b < t->start + t->len ? b : t->start + t->len;
}

static void itable_range(struct e4 *c, uint64_t a, uint64_t len, unsigned reasons,
			 struct blkcache *bc)
{
	uint64_t b = a + len;

	for (size_t k = itable_first(c, a); k < c->nit && c->it[k].start < b; k++) {
		const struct itab *t = &c->it[k];
		uint64_t s, e, first, last;

		itable_clip(t, a, b, &s, &e);
		first = (s - t->start) / c->isz;
		last = (e - t->start + c->isz - 1) / c->isz;

		for (uint64_t idx = first; idx < last && idx < c->ipg; idx++) {
			uint64_t ino = (uint64_t)t->group * c->ipg + idx + 1;
			uint64_t off = t->start + idx * c->isz, blk = off / c->bs;
			const unsigned char *raw;
			struct item *it;

			if (skip_ino(c, ino))
				continue;
			/* Read the block holding the inode, once. */
			if (!bc->valid || bc->blk != blk) {
				bc->valid = !io_channel_read_blk64(c->fs->io, blk, 1, bc->buf);
				bc->blk = blk;
				if (!bc->valid)
					continue;
			}
			raw = bc->buf + (off % c->bs);
			/* i_links_count: unused and deleted inodes have none. */
			if (!le16(raw + 26))
				continue;
			xgrow((void **)&c->cand, &c->candcap, c->ncand + 1, sizeof(*c->cand));
			c->cand[c->ncand++] = ino;
			/* The record as it is now (the page cache, which holds
			 * what the journal has not written home yet). */
			if (c->st.can_compare) {
				xgrow((void **)&c->ch, &c->chcap, c->nch + 1, sizeof(*c->ch));
				c->ch[c->nch].ino = ino;
				store_hash(&c->st, 0, ino, raw, c->isz, c->ch[c->nch].h);
				c->nch++;
			}
			it = res_get(&c->r->res, 0, ino);
			it->reasons |= RSN_INODE | reasons;
			it->type = ftype_from_mode(le16(raw));
			it->size = le32(raw + 4) | (uint64_t)le32(raw + 108) << 32;
		}
	}
}

/* The inode-table blocks of [a, a + len), read ahead (prefetch_range). */
static void itable_prefetch(struct e4 *c, uint64_t a, uint64_t len)
{
	uint64_t b = a + len;

	for (size_t k = itable_first(c, a); k < c->nit && c->it[k].start < b; k++) {
		uint64_t s, e;

		itable_clip(&c->it[k], a, b, &s, &e);
		s = s / c->bs * c->bs;
		prefetch_range(c->r->dev_fd, s, e - s);
	}
}

static void do_itables(struct e4 *c)
{
	struct blkcache bc = { xmalloc(c->bs), 0, 0 };

	/*
	 * The blocks read below (libext2fs: the block device's page cache,
	 * where ext4 keeps its metadata) are asked for all at once first:
	 * read one after the other, 1000 changed blocks cost 1000 waits.
	 */
	for (size_t i = 0; i < c->changed.n; i++)
		itable_prefetch(c, c->changed.v[i].start, c->changed.v[i].len);

	/* Journal-named inode blocks first, so they carry the journal reason. */
	for (size_t i = 0; i < c->jhome.n; i++) {
		struct range g = c->jhome.v[i];

		if (rs_overlaps(&c->itable, g.start, g.len))
			itable_range(c, g.start, g.len, RSN_JOURNAL, &bc);
	}
	for (size_t i = 0; i < c->changed.n; i++) {
		struct range g = c->changed.v[i];

		if (rs_overlaps(&c->itable, g.start, g.len))
			itable_range(c, g.start, g.len, 0, &bc);
	}
	free(bc.buf);
}

/* ---- free space ---- */

/* Remove from c->other the blocks free in the block bitmap: other_alloc. */
static void find_allocated(struct e4 *c)
{
	ext2_filsys fs = c->fs;
	struct ext2_super_block *sb = fs->super;
	unsigned char *bm = xmalloc(c->bs);
	dgrp_t cached = (dgrp_t)-1;
	int uninit = 0, have = 0;

	rs_clear(&c->other_alloc);
	if (ext2fs_has_feature_bigalloc(sb)) {
		/* Clusters complicate the arithmetic; scan for every block. */
		for (size_t i = 0; i < c->other.n; i++)
			rs_add(&c->other_alloc, c->other.v[i].start, c->other.v[i].len);
		free(bm);
		return;
	}
	for (size_t i = 0; i < c->other.n; i++) {
		uint64_t b0 = c->other.v[i].start / c->bs;
		uint64_t b1 = (c->other.v[i].start + c->other.v[i].len + c->bs - 1) / c->bs;

		for (uint64_t b = b0; b < b1; b++) {
			dgrp_t g;
			uint64_t bit;
			int used;

			if (b < sb->s_first_data_block)
				continue;
			g = (dgrp_t)((b - sb->s_first_data_block) / sb->s_blocks_per_group);
			bit = (b - sb->s_first_data_block) % sb->s_blocks_per_group;
			if (g != cached) {
				cached = g;
				uninit = ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT);
				have = !uninit && !io_channel_read_blk64(fs->io,
						ext2fs_block_bitmap_loc(fs, g), 1, bm);
			}
			/* Unreadable bitmap: count the block as allocated. */
			used = uninit ? 0 : !have || bit / 8 >= c->bs || (bm[bit / 8] >> (bit % 8) & 1);
			if (used)
				rs_add(&c->other_alloc, b * c->bs, c->bs);
		}
	}
	rs_normalize(&c->other_alloc);
	free(bm);
}

/* ---- the owner scan ---- */

struct owner {
	ext2_ino_t ino;
	struct ext2_inode *inode;
	int special;		/* no path: attribute only */
	unsigned hit;		/* reasons found */
};

static unsigned owner_reason(const struct owner *o, int mapping)
{
	if (ftype_from_mode(o->inode->i_mode) == FT_DIR)
		return RSN_DIRECTORY | (mapping ? RSN_MAPPING : 0);
	return mapping ? RSN_MAPPING : RSN_DATA;
}

static void claim(struct e4 *c, struct owner *o, uint64_t start, uint64_t len, int mapping)
{
	uint64_t got = rs_overlap_bytes(&c->other_alloc, start, len);
	enum ftype t = ftype_from_mode(o->inode->i_mode);
	int a;

	if (!rs_overlaps(&c->other, start, len))
		return;
	rs_add(&c->owned, start, len);
	if (got > c->remaining)
		got = c->remaining;
	c->remaining -= got;
	a = o->special ? AT_META : mapping ? AT_MAPPING : t == FT_DIR ? AT_DIR : AT_DATA;
	tally_add(&c->r->st.tally, a, rs_overlap_bytes(&c->r->changed, start, len));
	if (o->special)
		return;
	o->hit |= owner_reason(o, mapping);
	if (rs_overlaps(&c->jhome, start, len))
		o->hit |= RSN_JOURNAL;
}

static void own_ext(struct e4 *c, void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len,
		    int unwritten)
{
	(void)lblk;
	(void)unwritten;
	claim(c, ctx, pblk * c->bs, len * c->bs, 0);
}

static void own_node(struct e4 *c, void *ctx, uint64_t pblk)
{
	claim(c, ctx, pblk * c->bs, c->bs, 1);
}

static void own_ea(struct e4 *c, struct owner *o, uint64_t blk)
{
	uint64_t start = blk * c->bs;
	unsigned char *b;

	if (!rs_overlaps(&c->other, start, c->bs))
		return;
	if (!o->special)
		o->hit |= RSN_XATTR | (rs_overlaps(&c->jhome, start, c->bs) ? RSN_JOURNAL : 0);
	rs_add(&c->owned, start, c->bs);
	if (!u64set_add(&c->ea_seen, blk))
		return;
	/* First owner of this block: account it, and learn if it is shared. */
	{
		uint64_t got = rs_overlap_bytes(&c->other_alloc, start, c->bs);

		c->remaining -= got > c->remaining ? c->remaining : got;
		tally_add(&c->r->st.tally, AT_XATTR, rs_overlap_bytes(&c->r->changed, start, c->bs));
	}
	b = xmalloc(c->bs);
	if (io_channel_read_blk64(c->fs->io, blk, 1, b) || le32(b) != EA_MAGIC || le32(b + 4) != 1)
		c->shared_ea = 1;
	free(b);
}

#ifdef CHJ_PERF_CONTROL_SLOW
/*
 * The perf gate's negative control only (tests/perf/build-resolver slow
 * builds chj-resolve with -DCHJ_PERF_CONTROL_SLOW=N): N loop turns of extra
 * work per inode the owner scan visits, about a tenth of the gate's
 * resolver run, which the gate must catch.  Never defined in a real build.
 * On x86 the loop is written out, two instructions a turn whatever the
 * compiler (a C loop is the compiler's to unroll or drop: gcc 14 unrolled
 * the module's by two, which halved its control).
 */
static __attribute__((noinline)) void perf_control_slow(void)
{
	unsigned int i = CHJ_PERF_CONTROL_SLOW;

#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("1:\tdec %0\n\tjnz 1b" : "+r"(i) : : "cc");
#else
	for (; i; i--)
		__asm__ __volatile__("" : : : "memory");
#endif
}
#else
static inline void perf_control_slow(void)
{
}
#endif

/* Claim the changed blocks an in-use inode owns. */
static void own_inode(struct e4 *c, ext2_ino_t ino, struct ext2_inode *inode)
{
	struct owner o = { 0 };
	struct visit v = { own_ext, own_node, &o, 0, 0 };
	blk64_t ea;

	perf_control_slow();
	o.ino = ino;
	o.inode = inode;
	o.special = skip_ino(c, ino);
	ea = ext2fs_file_acl_block(c->fs, inode);
	if (ea && ea < c->nblocks)
		own_ea(c, &o, ea);
	inode_blocks(c, ino, inode, &v);
	if (v.bad) {
		/*
		 * Its map cannot be read whole (malformed, torn while live,
		 * a checksum failing): list it, whole, conservatively.  Any
		 * changed block left without an owner at the end means a full
		 * scan (ext4_resolve_fs).
		 */
		c->bad++;
		if (!o.special)
			o.hit |= RSN_MAPPING;
	}
	if (o.hit) {
		struct item *it = res_get(&c->r->res, 0, ino);

		it->reasons |= o.hit;
		it->type = ftype_from_mode(inode->i_mode);
		it->size = EXT2_I_SIZE(inode);
		if (v.bad)
			it->flags |= IT_WHOLE;
	}
}

static void orph_ext(struct e4 *c, void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len,
		     int unwritten)
{
	(void)ctx;
	(void)lblk;
	(void)unwritten;
	if (rs_overlaps(&c->other, pblk * c->bs, len * c->bs))
		rs_add(&c->orphaned, pblk * c->bs, len * c->bs);
}

static void orph_node(struct e4 *c, void *ctx, uint64_t pblk)
{
	orph_ext(c, ctx, 0, pblk, 1, 0);
}

/*
 * An inode without links that may still be in use: open but unlinked (on
 * the orphan list, i_dtime the next orphan or 0).  Its blocks have no name,
 * so nothing to list; it only explains changed blocks that no linked inode
 * owns.  It does not count as their owner for the early end of the scan:
 * a stale map must not hide the real owner.
 */
static void own_orphan(struct e4 *c, ext2_ino_t ino, struct ext2_inode *inode)
{
	struct visit v = { orph_ext, orph_node, NULL, 0, 0 };

	if (!inode->i_mode || (inode->i_dtime && inode->i_dtime > c->fs->super->s_inodes_count))
		return;
	inode_blocks(c, ino, inode, &v);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * r->ino_prefetch (names.c, before the paths are stat'ed): the inode-table
 * blocks of inodes ino[0..n) asked for together, through the block
 * device's page cache, where ext4 keeps them.  The files listed mostly sit
 * in changed inode blocks, read already; their directories do not, and
 * ext4 reads a cold inode's block with the inode_readahead_blks (32 by
 * default) blocks after it, a buffer head each: for 632 directories,
 * 20000 blocks read, and most of the stats' CPU (docs/bench/history.md,
 * resolver runs 34-35).  A block found cached is used without that readahead.
 */
static void ino_prefetch(struct resolver *r, const uint64_t *ino, size_t n)
{
	struct e4 *c = r->method_ctx;
	uint64_t *blk;
	size_t m = 0;

	if (!c || !n)
		return;
	blk = xmalloc(n * sizeof(*blk));
	for (size_t i = 0; i < n; i++) {
		uint64_t b = ext4_inode_block(c->fs, ino[i]);

		if (b)
			blk[m++] = b;
	}
	if (m > 1)
		qsort(blk, m, sizeof(*blk), cmp_u64);
	/* Neighbouring blocks (and the same one twice) in one call. */
	for (size_t i = 0, j; i < m; i = j) {
		for (j = i + 1; j < m && blk[j] <= blk[j - 1] + 1; j++)
			;
		prefetch_range(r->dev_fd, blk[i] * c->bs, (blk[j - 1] - blk[i] + 1) * c->bs);
	}
	free(blk);
}

static int is_cand(const struct e4 *c, uint64_t ino)
{
	size_t lo = 0, hi = c->ncand;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (c->cand[m] < ino)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < c->ncand && c->cand[lo] == ino;
}

/*
 * Owners of the changed blocks outside static metadata.  Candidates first:
 * a file whose blocks changed almost always had its inode written too (times,
 * block counts), so it is among the inodes of the changed inode blocks, read
 * already.  Only if blocks remain without an owner (data written back for
 * older writes, say), or a shared EA block is involved, every other inode is
 * scanned.  Each inode is visited once, so no block is counted twice.
 */
static int owner_scan(struct e4 *c)
{
	struct resolver *r = c->r;
	ext2_filsys fs = c->fs;
	ext2_inode_scan scan;
	struct ext2_inode_large big;
	struct ext2_inode *inode = (struct ext2_inode *)&big;
	ext2_ino_t ino;
	errcode_t err;
	size_t n = 0;

	if (c->ncand)
		qsort(c->cand, c->ncand, sizeof(*c->cand), cmp_u64);
	for (size_t i = 0; i < c->ncand; i++)
		if (!n || c->cand[n - 1] != c->cand[i])
			c->cand[n++] = c->cand[i];
	c->ncand = n;
	for (size_t i = 0; i < c->ncand && (c->remaining || c->shared_ea); i++) {
		if (ext2fs_read_inode_full(fs, (ext2_ino_t)c->cand[i], inode, sizeof(big)))
			continue;
		c->scanned++;
		if (inode->i_links_count)
			own_inode(c, (ext2_ino_t)c->cand[i], inode);
		else
			own_orphan(c, (ext2_ino_t)c->cand[i], inode);
	}
	if (!c->remaining && !c->shared_ea)
		return RX_OK;

	if (ext2fs_open_inode_scan(fs, 0, &scan))
		return rx_fail(r, RX_ERROR, "%s: cannot scan inodes", r->dev_path);
	ext2fs_inode_scan_flags(scan, EXT2_SF_SKIP_MISSING_ITABLE, 0);
	r->st.full_scan = 1;
	for (;;) {
		/* Done once every allocated changed block has its owner. */
		if (!c->remaining && !c->shared_ea)
			break;
		err = ext2fs_get_next_inode_full(scan, &ino, inode, sizeof(big));
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
			continue;
		if (err) {
			ext2fs_close_inode_scan(scan);
			return rx_fail(r, RX_ERROR, "%s: inode scan: %s", r->dev_path,
				       error_message(err));
		}
		if (!ino)
			break;
		if (!(++c->scanned & 8191))
			progress(r, "scanning inodes: %llu of %u",
				 (unsigned long long)c->scanned, fs->super->s_inodes_count);
		/*
		 * Unused and deleted inodes have no links; open but unlinked
		 * ones keep blocks nobody can name (own_orphan).
		 */
		if (is_cand(c, ino))
			continue;
		if (!inode->i_links_count)
			own_orphan(c, ino, inode);
		else
			own_inode(c, ino, inode);
	}
	ext2fs_close_inode_scan(scan);
	return RX_OK;
}

/* ---- the state store (store.c) ---- */

static int cmp_chash(const void *a, const void *b)
{
	const struct chash *x = a, *y = b;

	return (x->ino > y->ino) - (x->ino < y->ino);
}

/*
 * Candidates listed only for their inode block (reasons inode, journal):
 * one whose whole record (isz bytes: mode, owner, size, times, links,
 * flags, the extent root or inline data, in-inode xattrs, checksum) is
 * what it was at the start of the epoch asked about is not listed.  Its
 * other blocks did not change: the owner scan gave every changed block its
 * owner (ext4 shares none but EA blocks, whose sharers all get one), and
 * an owner has another reason.  A lookup that fails drops nothing.
 */
static void store_filter(struct e4 *c)
{
	struct resolver *r = c->r;
	struct item **drop;
	size_t nd = 0;

	if (!c->st.can_compare || !c->nch)
		return;
	qsort(c->ch, c->nch, sizeof(*c->ch), cmp_chash);
	{
		uint64_t *ino = xmalloc(c->nch * sizeof(*ino));

		for (size_t i = 0; i < c->nch; i++)
			ino[i] = c->ch[i].ino;
		store_prefetch(&c->st, 0, ino, c->nch);
		free(ino);
	}
	drop = xmalloc(c->nch * sizeof(*drop));
	for (size_t i = 0, j; i < c->nch; i = j) {
		struct item *it;
		int agree = 1;

		/* An inode read twice must have read the same both times. */
		for (j = i + 1; j < c->nch && c->ch[j].ino == c->ch[i].ino; j++)
			agree &= !memcmp(c->ch[j].h, c->ch[i].h, ST_HASH);
		it = res_find(&r->res, 0, c->ch[i].ino);
		if (!agree || !it || (it->reasons & ~(RSN_INODE | RSN_JOURNAL)) ||
		    (it->flags & IT_WHOLE))
			continue;
		if (store_same(&c->st, 0, c->ch[i].ino, c->ch[i].h))
			drop[nd++] = it;
	}
	if (!c->st.failed)
		for (size_t i = 0; i < nd; i++)
			item_drop(drop[i]);
	free(drop);
}

/*
 * Read inode slots [first, last) of inode table t with O_DIRECT (what is
 * on the device: the epoch-start state if its region is still unmarked
 * after the read) and stage each one's state.
 */
static int stage_slots(struct e4 *c, const struct itab *t, uint64_t first, uint64_t last,
		       int free_too)
{
	const uint64_t chunk = (1u << 20) / c->bs * c->bs;
	unsigned char *buf;
	int rc = RX_OK;

	if (last > c->ipg)
		last = c->ipg;
	if (first >= last)
		return RX_OK;
	buf = xmalloc(chunk);
	for (uint64_t idx = first; idx < last;) {
		uint64_t off = t->start + idx * c->isz;
		uint64_t n = (last - idx) * c->isz < chunk ? (last - idx) * c->isz : chunk;

		if (raw_read(c->r, buf, n, off)) {
			rc = RX_ERROR;
			break;
		}
		for (uint64_t k = 0; k < n / c->isz; k++, idx++) {
			uint64_t ino = (uint64_t)t->group * c->ipg + idx + 1;
			const unsigned char *raw = buf + k * c->isz;
			uint8_t h[ST_HASH];

			if (skip_ino(c, ino))
				continue;
			if (!le16(raw + 26)) {
				if (free_too)
					store_stage(&c->st, 0, ino, off + k * c->isz, c->isz, ST_FREE, NULL);
				continue;
			}
			store_hash(&c->st, 0, ino, raw, c->isz, h);
			store_stage(&c->st, 0, ino, off + k * c->isz, c->isz, ST_KNOWN, h);
		}
	}
	free(buf);
	return rc;
}

/*
 * Bring the store to the current epoch: the records of every changed
 * inode block (incremental), or of every in-use part of every inode table
 * (first run, rebuild); then the epoch-start rule and the write
 * (store_commit).  Failures leave the store as it was (a warning).
 */
static void store_update(struct e4 *c)
{
	struct resolver *r = c->r;
	ext2_filsys fs = c->fs;
	int rc = RX_OK;

	memcpy(c->st.saved_err, r->err, sizeof(r->err));
	c->st.saved_code = r->err_code;
	if (c->st.update == ST_UPD_FULL) {
		for (size_t k = 0; k < c->nit && !rc; k++) {
			const struct itab *t = &c->it[k];
			uint64_t n = c->ipg;

			if (ext2fs_bg_flags_test(fs, t->group, EXT2_BG_INODE_UNINIT))
				continue;
			/* Past the high-water mark no inode was ever used. */
			if (ext2fs_has_group_desc_csum(fs) &&
			    ext2fs_bg_itable_unused(fs, t->group) <= c->ipg)
				n = c->ipg - ext2fs_bg_itable_unused(fs, t->group);
			rc = stage_slots(c, t, 0, n, 0);
		}
	} else if (c->st.update == ST_UPD_INCR) {
		for (size_t i = 0; i < c->changed.n && !rc; i++) {
			uint64_t a = c->changed.v[i].start, b = a + c->changed.v[i].len;

			if (!rs_overlaps(&c->itable, a, b - a))
				continue;
			for (size_t k = 0; k < c->nit && !rc; k++) {
				const struct itab *t = &c->it[k];
				uint64_t s0 = a > t->start ? a : t->start;
				uint64_t e0 = b < t->start + t->len ? b : t->start + t->len;

				if (s0 >= e0)
					continue;
				rc = stage_slots(c, t, (s0 - t->start) / c->isz,
						 (e0 - t->start + c->isz - 1) / c->isz, 1);
			}
		}
	} else {
		return;
	}
	if (rc) {
		/* A read failed: the store keeps what it had. */
		fprintf(stderr, "chj-resolve: warning: state store not updated: %s\n", r->err);
		/* Not the run's failure: the answer does not depend on it. */
		memcpy(r->err, c->st.saved_err, sizeof(r->err));
		r->err_code = c->st.saved_code;
		return;
	}
	store_commit(&c->st);
}

/* ---- ranges inside regular files ---- */

struct rctx {
	struct item *it;
	struct rangeset mapped;
	int map_changed;
};

static void rng_ext(struct e4 *c, void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len,
		    int unwritten)
{
	struct rctx *x = ctx;

	rs_add(&x->mapped, lblk * c->bs, len * c->bs);
	if (unwritten && x->map_changed)
		rs_add(&x->it->ranges, lblk * c->bs, len * c->bs);
	else
		rs_map_overlaps(&x->it->ranges, &c->changed, pblk * c->bs, len * c->bs,
				lblk * c->bs);
}

static void file_ranges(struct e4 *c, struct item *it)
{
	struct ext2_inode_large big;
	struct ext2_inode *inode = (struct ext2_inode *)&big;
	struct rctx x = { it, { 0 }, 0 };
	struct visit v = { rng_ext, NULL, &x, 0, 0 };

	if (ext2fs_read_inode_full(c->fs, (ext2_ino_t)it->ino, inode, sizeof(big)))
		return;
	it->size = EXT2_I_SIZE(inode);
	/* The inode holds the extent root: if it changed, so may the map. */
	x.map_changed = !!(it->reasons & (RSN_INODE | RSN_MAPPING | RSN_JOURNAL));
	rs_init(&x.mapped);
	if (inode->i_flags & EXT4_INLINE_DATA_FL) {
		if (x.map_changed || (it->reasons & RSN_XATTR))
			rs_add(&it->ranges, 0, it->size);
	} else {
		inode_blocks(c, (ext2_ino_t)it->ino, inode, &v);
		rs_normalize(&it->ranges);
		if (v.bad) {
			rs_clear(&it->ranges);
			rs_add(&it->ranges, 0, it->size);
		} else if (x.map_changed) {
			/* Holes: a punched or truncated-and-extended range
			 * reads as zeros and writes no data block. */
			struct rangeset holes, all;

			rs_init(&holes);
			rs_init(&all);
			rs_add(&all, 0, it->size);
			rs_normalize(&x.mapped);
			rs_subtract(&holes, &all, &x.mapped);
			for (size_t i = 0; i < holes.n; i++)
				rs_add(&it->ranges, holes.v[i].start, holes.v[i].len);
			rs_free(&holes);
			rs_free(&all);
		}
	}
	rs_normalize(&it->ranges);
	rs_clip(&it->ranges, it->size);
	rs_free(&x.mapped);
}

/* ---- the method ---- */

static void account(struct e4 *c)
{
	struct resolver *r = c->r;
	struct rangeset unattr;

	rs_init(&unattr);
	for (size_t i = 0; i < r->changed.n; i++) {
		struct range g = r->changed.v[i];

		tally_add(&r->st.tally, AT_INODES, rs_overlap_bytes(&c->itable, g.start, g.len));
		tally_add(&r->st.tally, AT_META, rs_overlap_bytes(&c->statmeta, g.start, g.len));
		tally_add(&r->st.tally, AT_JOURNAL, rs_overlap_bytes(&c->journal, g.start, g.len));
	}
	/* Changed blocks outside static metadata and free in the bitmap. */
	rs_subtract(&unattr, &c->other, &c->other_alloc);
	for (size_t i = 0; i < unattr.n; i++)
		tally_add(&r->st.tally, AT_FREE,
			  rs_overlap_bytes(&r->changed, unattr.v[i].start, unattr.v[i].len));
	rs_free(&unattr);
}

/*
 * The rule (docs/resolve.md): changed, allocated blocks outside static
 * metadata that no linked inode owns and no open unlinked one explains
 * cannot be attributed; nor can changes past the end of the filesystem.
 */
static void unowned(struct e4 *c)
{
	struct resolver *r = c->r;
	struct rangeset a, b;
	uint64_t in_a = 0, bytes = 0;

	rs_init(&a);
	rs_init(&b);
	rs_normalize(&c->owned);
	rs_normalize(&c->orphaned);
	rs_subtract(&a, &c->other_alloc, &c->owned);
	rs_subtract(&b, &a, &c->orphaned);
	for (size_t i = 0; i < a.n; i++)
		in_a += rs_overlap_bytes(&c->changed, a.v[i].start, a.v[i].len);
	for (size_t i = 0; i < b.n; i++)
		bytes += rs_overlap_bytes(&c->changed, b.v[i].start, b.v[i].len);
	tally_add(&r->st.tally, AT_ORPHAN, in_a - bytes);
	if (b.n)
		tally_note(&r->st.tally, AT_UNOWNED, bytes ? bytes : b.v[0].len,
			   "%llu changed blocks of the ext4 filesystem have no owner (first at byte %llu)",
			   (unsigned long long)(rs_total(&b) / c->bs),
			   (unsigned long long)b.v[0].start);
	rs_free(&a);
	rs_free(&b);
	rx_check_outside(r, c->fs_bytes, "ext4");
}

static int ext4_resolve_fs(struct e4 *c)
{
	struct resolver *r = c->r;
	struct rangeset meta;
	double t;
	int rc;

	rc = layout(c);
	if (rc)
		return rc;
	{
		char ident[256], u[37];

		chj_uuid_str(r->chj_uuid, u);
		snprintf(ident, sizeof(ident), "ext4 fs=%s chj=%s bs=%llu isz=%u ipg=%u", r->fs_uuid, u,
			 (unsigned long long)c->bs, c->isz, c->ipg);
		store_open(r, &c->st, ident);
	}
	rc = scan_journal(c);
	if (rc)
		return rc;
	/* The changed set inside the filesystem, plus the journal's homes. */
	for (size_t i = 0; i < r->changed.n; i++) {
		struct range g = r->changed.v[i];

		if (g.start < c->fs_bytes)
			rs_add(&c->changed, g.start,
			       g.len < c->fs_bytes - g.start ? g.len : c->fs_bytes - g.start);
	}
	for (size_t i = 0; i < c->jhome.n; i++)
		rs_add(&c->changed, c->jhome.v[i].start, c->jhome.v[i].len);
	rs_normalize(&c->changed);

	do_itables(c);

	/* Everything but static metadata, inode tables and the journal. */
	rs_init(&meta);
	for (size_t i = 0; i < c->itable.n; i++)
		rs_add(&meta, c->itable.v[i].start, c->itable.v[i].len);
	for (size_t i = 0; i < c->statmeta.n; i++)
		rs_add(&meta, c->statmeta.v[i].start, c->statmeta.v[i].len);
	for (size_t i = 0; i < c->journal.n; i++)
		rs_add(&meta, c->journal.v[i].start, c->journal.v[i].len);
	rs_normalize(&meta);
	rs_subtract(&c->other, &c->changed, &meta);
	rs_free(&meta);
	find_allocated(c);
	c->remaining = rs_total(&c->other_alloc);
	if (c->remaining) {
		rc = owner_scan(c);
		if (rc)
			return rc;
	}
	unowned(c);
	store_filter(c);
	store_update(c);
	store_describe(&c->st, r->st.state, sizeof(r->st.state));
	r->st.files_mapped = c->scanned;
	if (c->bad)
		snprintf(r->st.note, sizeof(r->st.note),
			 "%llu inodes with a malformed block map were skipped", (unsigned long long)c->bad);
	account(c);
	r->st.phase[PH_ANALYZE] = now_sec() - r->t0 - r->st.phase[PH_SYNC] - r->st.phase[PH_MAP];

	t = now_sec();
	r->ino_prefetch = ino_prefetch;
	r->method_ctx = c;
	rc = resolve_names(r, NULL, NULL);
	r->ino_prefetch = NULL;
	r->method_ctx = NULL;
	r->st.phase[PH_WALK] = now_sec() - t;
	if (rc)
		return rc;

	t = now_sec();
	for (size_t i = 0; i < r->res.cap; i++) {
		struct item *it = r->res.tab[i];

		if (!it)
			continue;
		if ((it->reasons & ~RSN_JOURNAL) == RSN_INODE)
			r->st.itable_neighbours++;
		if (r->out_mode == 2 && it->type == FT_REG && it->npaths)
			file_ranges(c, it);
	}
	r->st.phase[PH_RANGES] = now_sec() - t;
	return RX_OK;
}

/* ---- for the fuzz harness: every inode's map, through the walk above ---- */

struct fz_count {
	uint64_t exts, nodes;
};

static void fz_ext(struct e4 *c, void *ctx, uint64_t lblk, uint64_t pblk, uint64_t len,
		   int unwritten)
{
	struct fz_count *k = ctx;

	(void)c;
	(void)lblk;
	(void)pblk;
	(void)len;
	(void)unwritten;
	k->exts++;
}

static void fz_node(struct e4 *c, void *ctx, uint64_t pblk)
{
	struct fz_count *k = ctx;

	(void)c;
	(void)pblk;
	k->nodes++;
}

int ext4_fuzz_maps(ext2_filsys fs, unsigned max_inodes)
{
	struct e4 c;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	c.fs = fs;
	c.bs = fs->blocksize;
	c.nblocks = ext2fs_blocks_count(fs->super);
	if (c.bs < 1024 || c.bs > 65536)
		return 0;
	for (int i = 0; i <= E4_MAX_DEPTH; i++)
		c.lvl[i] = xmalloc(c.bs);
	for (ext2_ino_t ino = 1; ino <= fs->super->s_inodes_count && ino <= max_inodes; ino++) {
		struct ext2_inode_large big;
		struct ext2_inode *inode = (struct ext2_inode *)&big;
		struct fz_count k = { 0, 0 };
		struct visit v = { fz_ext, fz_node, &k, 0, 0 };

		if (ext2fs_read_inode_full(fs, ino, inode, sizeof(big)))
			continue;
		inode_blocks(&c, ino, inode, &v);
		/* Each mapping block once: at most one per filesystem block,
		 * and a block's worth of entries (12-byte extents, 4-byte
		 * block numbers) per block read. */
		if (k.nodes > c.nblocks || k.exts > (k.nodes + 1) * (c.bs / 4) + 15)
			rc = -1;
	}
	for (int i = 0; i <= E4_MAX_DEPTH; i++)
		free(c.lvl[i]);
	u64set_free(&c.nodes);
	return rc;
}

static int ext4_resolve(struct resolver *r)
{
	struct e4 c;
	errcode_t err;
	int rc;

	memset(&c, 0, sizeof(c));
	c.r = r;
	r->st.method = "libext2fs: inode-table arithmetic, jbd2 journal, inode scan";
	err = ext2fs_open2(r->dev_path, NULL,
			   EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS,
			   0, 0, unix_io_manager, &c.fs);
	if (err)
		return rx_fail(r, RX_ERROR, "%s: cannot open the ext4 filesystem: %s", r->dev_path,
			       error_message(err));
	c.bs = c.fs->blocksize;
	c.nblocks = ext2fs_blocks_count(c.fs->super);
	c.fs_bytes = c.nblocks * c.bs;
	c.isz = EXT2_INODE_SIZE(c.fs->super);
	c.ipg = EXT2_INODES_PER_GROUP(c.fs->super);
	c.first_ino = EXT2_FIRST_INODE(c.fs->super);
	if (c.bs < 1024 || c.bs > 65536 || c.isz < 128 || c.isz > c.bs || c.bs % c.isz ||
	    !c.ipg || c.fs_bytes > r->dev_bytes) {
		ext2fs_close_free(&c.fs);
		return rx_fail(r, RX_FULL_SCAN, "%s: ext4 geometry not understood, or larger than the device",
			       r->dev_path);
	}
	for (int i = 0; i <= E4_MAX_DEPTH; i++)
		c.lvl[i] = xmalloc(c.bs);
	rs_init(&c.changed);
	rc = ext4_resolve_fs(&c);
	for (int i = 0; i <= E4_MAX_DEPTH; i++)
		free(c.lvl[i]);
	rs_free(&c.changed);
	rs_free(&c.jhome);
	rs_free(&c.itable);
	rs_free(&c.statmeta);
	rs_free(&c.journal);
	rs_free(&c.other);
	rs_free(&c.other_alloc);
	free(c.it);
	free(c.jm);
	u64set_free(&c.ea_seen);
	u64set_free(&c.nodes);
	rs_free(&c.owned);
	rs_free(&c.orphaned);
	free(c.cand);
	free(c.ch);
	store_close(&c.st);
	ext2fs_close_free(&c.fs);
	return rc;
}

static const char *const ext4_fstypes[] = { "ext4", "ext3", "ext2", NULL };

const struct resolve_method ext4_method = {
	.name = "ext4",
	.fstypes = ext4_fstypes,
	.before_map = ext4_before_map,
	.resolve = ext4_resolve,
	.release = method_free_state,
};
