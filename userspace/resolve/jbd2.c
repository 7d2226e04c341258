// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * jbd2 journal walk.  Recovery's rules: the live log starts at s_start with
 * sequence s_sequence; each block that carries the magic and the expected
 * sequence belongs to that transaction (descriptor blocks list the home
 * block of each following journal block; revoke blocks are skipped; the
 * commit block ends it and the next sequence begins); the first block that
 * does not match ends the log.  The circular area is [s_first, last), with
 * last = s_maxlen minus the fast-commit area when that feature is on.
 *
 * A transaction counts when any of its journal blocks (descriptor, data,
 * revoke or commit) lies in a changed region: it was written since the
 * epoch, so the home blocks it carries may have changed since then even if
 * they have not been written back home yet.  An uncommitted tail counts the
 * same way (being conservative costs nothing here).
 *
 * Where the walk starts, and why that misses nothing.  The kernel's rule
 * (fs/jbd2/journal.c, __jbd2_update_log_tail: "as soon as we update
 * j_tail, next transaction can start reusing journal space"): the
 * superblock's new tail is written, FUA, before the space behind it is
 * freed; a transaction leaves the checkpoint lists only once its home
 * blocks are written back (or a later transaction took them over).  So at
 * any instant, home blocks plus the log from the on-disk s_start replay to
 * the committed state: that is what recovery relies on.  Read at the
 * moment the change map is read, that superblock's tail T_map bounds what
 * the map can miss: a transaction before T_map had its homes written
 * before the map, so marked; one from T_map on may have homes written
 * after the map (unmarked), and only its journal blocks say which.
 *
 * The tail of the walk's own time (s_start then) is too late: between the
 * map and the walk the kernel may checkpoint transactions from T_map on
 * (their homes now written, after the map: in no mark), move the tail past
 * them, and reuse their blocks: a walk from the new tail never sees them
 * (an fsfreeze between the two empties the journal: s_start 0, nothing
 * walked, the changes of those transactions silently missing).  So the
 * walk starts at T_map (jbd2_src.map_*: ext4.c notes it before the map).
 * T_map clean (s_start 0, written only after a full checkpoint; the first
 * commit after it writes a new tail before its log blocks): every
 * transaction committed by then is home, marked, and those committed after
 * it hold only changes made after chj-resolve's syncfs: nothing to walk.
 *
 * What the walk from T_map read may be a later lap: the kernel reuses the
 * blocks of T_map's transactions once the tail passed them.  A reused
 * block holds a header of a later sequence, or an (escaped, magic-free)
 * data block: either ends the walk early, silently.  check_end() tells:
 * the walk stopped at block P expecting sequence E; if the superblock,
 * re-read after the walk, still has its tail at E or before, no block from
 * E on was reusable, so P was the true end.  If the tail went past E, E
 * was written since: P holding E's header now means E came after the read
 * (P was the end then); anything else at P is a lap over what the walk
 * needed: -1, info->lapped (chj-resolve: exit 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "jbd2.h"

unsigned jbd2_tag_bytes(uint32_t incompat)
{
	unsigned sz;

	if (incompat & JBD2_IN_CSUM_V3)
		return 16;		/* journal_block_tag3_t */
	sz = 12;			/* journal_block_tag_t */
	if (incompat & JBD2_IN_CSUM_V2)
		sz += 2;
	return (incompat & JBD2_IN_64BIT) ? sz : sz - 4;
}

struct trans {
	uint64_t *home;
	size_t n, cap;
	int touched;
};

static int trans_add(struct trans *t, uint64_t blk)
{
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		uint64_t *p = realloc(t->home, nc * sizeof(*p));

		if (!p)
			return -1;
		t->home = p;
		t->cap = nc;
	}
	t->home[t->n++] = blk;
	return 0;
}

static void trans_end(const struct jbd2_src *src, struct jbd2_info *info, struct trans *t)
{
	info->transactions++;
	if (t->touched) {
		info->counted++;
		for (size_t i = 0; i < t->n; i++)
			src->home(src->ctx, t->home[i]);
		info->homes += t->n;
	}
	t->n = 0;
	t->touched = 0;
}

/* The journal superblock's geometry, checked. */
struct jgeo {
	uint32_t first, last;	/* the circular area [first, last) */
	uint32_t start, seq0;	/* the live log's first block and sequence */
	uint32_t incompat;
	unsigned tagb, tail;	/* tag bytes; checksum tail of a descriptor */
};

/* Read and check the journal superblock into g (its tail included, which
 * the caller may replace): 0, or -1 with info->why. */
static int read_jsb(const struct jbd2_src *src, unsigned char *b, struct jgeo *g,
		    struct jbd2_info *info)
{
	uint32_t bs = src->bs, maxlen;

	if (src->read(src->ctx, 0, b)) {
		snprintf(info->why, sizeof(info->why), "cannot read the journal superblock");
		return -1;
	}
	if (jbd2_sb_tail(b, bs, &g->seq0, &g->start)) {
		snprintf(info->why, sizeof(info->why), "no journal superblock");
		return -1;
	}
	maxlen = be32(b + 16);
	g->first = be32(b + 20);
	g->incompat = be32(b + 4) == JBD2_SB_V2 ? be32(b + 40) : 0;
	if (be32(b + 12) != bs) {
		snprintf(info->why, sizeof(info->why), "journal block size %u, filesystem %u",
			 be32(b + 12), bs);
		return -1;
	}
	if (g->incompat & ~JBD2_IN_KNOWN) {
		snprintf(info->why, sizeof(info->why), "unknown journal features 0x%x", g->incompat);
		return -1;
	}
	if (maxlen > src->nblocks || g->first < 1 || g->first >= maxlen) {
		snprintf(info->why, sizeof(info->why), "journal geometry out of range (first %u, length %u, inode %llu blocks)",
			 g->first, maxlen, (unsigned long long)src->nblocks);
		return -1;
	}
	g->last = maxlen;
	if (g->incompat & JBD2_IN_FAST_COMMIT) {
		uint32_t fc = be32(b + 84) ? be32(b + 84) : JBD2_FC_DEFAULT_BLOCKS;

		if (fc < maxlen - g->first)
			g->last = maxlen - fc;
	}
	g->tagb = jbd2_tag_bytes(g->incompat);
	g->tail = (g->incompat & (JBD2_IN_CSUM_V2 | JBD2_IN_CSUM_V3)) ? 4 : 0;
	return 0;
}

int jbd2_sb_tail(const unsigned char *b, uint32_t bs, uint32_t *seq, uint32_t *start)
{
	/* The fields read: magic, type, s_sequence, s_start (bytes 0..31). */
	if (bs < 32 || be32(b) != JBD2_MAGIC ||
	    (be32(b + 4) != JBD2_SB_V1 && be32(b + 4) != JBD2_SB_V2))
		return -1;
	*seq = be32(b + 24);
	*start = be32(b + 28);
	return 0;
}

/* A descriptor block's tags, each naming the home of the next data block,
 * into t; their number in *data.  -1: out of memory. */
static int descriptor_tags(const unsigned char *b, uint32_t bs, const struct jgeo *g,
			   struct trans *t, uint64_t *data)
{
	size_t off = 12;

	*data = 0;
	while (off + g->tagb + g->tail <= bs) {
		const unsigned char *p = b + off;
		uint32_t flags = (g->incompat & JBD2_IN_CSUM_V3) ? be32(p + 4) : be16(p + 6);
		uint64_t blk = be32(p);

		if (g->incompat & JBD2_IN_64BIT)
			blk |= (uint64_t)be32(p + 8) << 32;
		if (trans_add(t, blk))
			return -1;
		(*data)++;
		off += g->tagb;
		if (!(flags & JBD2_TAG_SAME_UUID))
			off += 16;
		if (flags & JBD2_TAG_LAST)
			break;
	}
	return 0;
}

/* Where a walk stopped: the block it read last as a header (or where the
 * lap ended), and the sequence it expected there. */
struct jend {
	uint64_t pos;
	uint32_t seq;
};

/* One walk of the live log, at most one lap, each transaction ended by
 * trans_end (an uncommitted tail too); its end in *end.  -1 with
 * info->why. */
static int walk_log(const struct jbd2_src *src, const struct jgeo *g, unsigned char *b,
		    struct trans *t, struct jend *end, struct jbd2_info *info)
{
	uint32_t seq = g->seq0, lap = g->last - g->first;
	uint64_t pos = g->start, steps;
	int in_trans = 0;

	for (steps = 0; steps < lap;) {
		uint32_t type;

		if (src->read(src->ctx, pos, b)) {
			snprintf(info->why, sizeof(info->why), "cannot read journal block %llu",
				 (unsigned long long)pos);
			return -1;
		}
		if (be32(b) != JBD2_MAGIC || be32(b + 8) != seq)
			break;
		type = be32(b + 4);
		if (src->changed(src->ctx, pos))
			t->touched = 1;
		in_trans = 1;
		if (type == JBD2_DESCRIPTOR) {
			uint64_t data;

			if (descriptor_tags(b, src->bs, g, t, &data)) {
				snprintf(info->why, sizeof(info->why), "out of memory");
				return -1;
			}
			/* The data blocks follow the descriptor. */
			for (uint64_t i = 0; i < data && steps < lap; i++) {
				pos = pos + 1 >= g->last ? g->first : pos + 1;
				steps++;
				if (src->changed(src->ctx, pos))
					t->touched = 1;
			}
		} else if (type == JBD2_COMMIT) {
			trans_end(src, info, t);
			in_trans = 0;
			seq++;
		} else if (type != JBD2_REVOKE) {
			break;
		}
		pos = pos + 1 >= g->last ? g->first : pos + 1;
		steps++;
	}
	end->pos = pos;
	end->seq = seq;
	/* An uncommitted tail counts as well. */
	if (in_trans && t->n)
		trans_end(src, info, t);
	return 0;
}

/* Is sequence a later than b (tids wrap: fs/jbd2's tid_gt)? */
static int tid_after(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/* Was the walk's end the log's end (0), or did the journal go round over
 * what the walk needed (1, info->lapped)?  -1: a read failed.  The file's
 * head comment gives the proof. */
static int check_end(const struct jbd2_src *src, const struct jend *e, unsigned char *b,
		     struct jbd2_info *info)
{
	uint32_t seq, start;

	if (src->before_reread)
		src->before_reread(src->ctx);
	if (src->read(src->ctx, 0, b) || jbd2_sb_tail(b, src->bs, &seq, &start)) {
		snprintf(info->why, sizeof(info->why), "cannot re-read the journal superblock");
		return -1;
	}
	info->seq_now = seq;
	info->moved = seq != info->seq_from;
	if (tid_after(info->seq_from, seq)) {
		info->lapped = 1;
		snprintf(info->why, sizeof(info->why),
			 "went back from sequence %u to %u since the change map was read",
			 info->seq_from, seq);
		return 1;
	}
	if (!tid_after(seq, e->seq))
		return 0;
	if (src->read(src->ctx, e->pos, b)) {
		snprintf(info->why, sizeof(info->why), "cannot read journal block %llu",
			 (unsigned long long)e->pos);
		return -1;
	}
	if (be32(b) == JBD2_MAGIC && be32(b + 8) == e->seq)
		return 0;
	info->lapped = 1;
	snprintf(info->why, sizeof(info->why),
		 "went round since the change map was read: its tail passed transaction %u (now %u), and its block %llu holds another",
		 e->seq, seq, (unsigned long long)e->pos);
	return 1;
}

/* The walk from g's tail and the check of its end: 0, or -1 with why. */
static int walk_checked(const struct jbd2_src *src, const struct jgeo *g, unsigned char *b,
			struct jbd2_info *info)
{
	struct trans t = { 0 };
	struct jend e;
	int rc = walk_log(src, g, b, &t, &e, info);

	free(t.home);
	if (rc)
		return -1;
	return check_end(src, &e, b, info) ? -1 : 0;
}

int jbd2_scan(const struct jbd2_src *src, struct jbd2_info *info)
{
	unsigned char *b;
	uint32_t bs = src->bs;
	struct jgeo g;
	int rc = -1;

	memset(info, 0, sizeof(*info));
	if (bs < 1024 || bs > 65536 || (bs & (bs - 1))) {
		snprintf(info->why, sizeof(info->why), "journal block size %u", bs);
		return -1;
	}
	b = malloc(bs);
	if (!b) {
		snprintf(info->why, sizeof(info->why), "out of memory");
		return -1;
	}
	if (read_jsb(src, b, &g, info))
		goto out;
	/* The geometry is the journal's; the tail the map's (head comment). */
	if (src->map_known) {
		g.seq0 = src->map_seq;
		g.start = src->map_start;
	}
	info->seq_from = g.seq0;
	if (!g.start) {
		info->clean = 1;
		rc = 0;
	} else if (g.start < g.first || g.start >= g.last) {
		snprintf(info->why, sizeof(info->why), "journal start %u outside [%u, %u)",
			 g.start, g.first, g.last);
	} else {
		rc = walk_checked(src, &g, b, info);
	}
out:
	free(b);
	return rc;
}
