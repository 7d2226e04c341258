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

/* Read and check the journal superblock into g: 0, 1 for a clean journal
 * (info->clean), -1 with info->why. */
static int read_jsb(const struct jbd2_src *src, unsigned char *b, struct jgeo *g,
		    struct jbd2_info *info)
{
	uint32_t bs = src->bs, maxlen;

	if (src->read(src->ctx, 0, b)) {
		snprintf(info->why, sizeof(info->why), "cannot read the journal superblock");
		return -1;
	}
	if (be32(b) != JBD2_MAGIC || (be32(b + 4) != JBD2_SB_V1 && be32(b + 4) != JBD2_SB_V2)) {
		snprintf(info->why, sizeof(info->why), "no journal superblock");
		return -1;
	}
	maxlen = be32(b + 16);
	g->first = be32(b + 20);
	g->seq0 = be32(b + 24);
	g->start = be32(b + 28);
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
	if (!g->start) {
		info->clean = 1;
		return 1;
	}
	if (g->start < g->first || g->start >= g->last) {
		snprintf(info->why, sizeof(info->why), "journal start %u outside [%u, %u)",
			 g->start, g->first, g->last);
		return -1;
	}
	g->tagb = jbd2_tag_bytes(g->incompat);
	g->tail = (g->incompat & (JBD2_IN_CSUM_V2 | JBD2_IN_CSUM_V3)) ? 4 : 0;
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

/* One walk of the live log, at most one lap, each transaction ended by
 * trans_end (an uncommitted tail too).  -1 with info->why. */
static int walk_log(const struct jbd2_src *src, const struct jgeo *g, unsigned char *b,
		    struct trans *t, struct jbd2_info *info)
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
	/* An uncommitted tail counts as well. */
	if (in_trans && t->n)
		trans_end(src, info, t);
	return 0;
}

int jbd2_scan(const struct jbd2_src *src, struct jbd2_info *info)
{
	unsigned char *b;
	uint32_t bs = src->bs;
	struct trans t = { 0 };
	struct jgeo g;
	int rc = -1, tries = 0;

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
	for (;;) {
		int st = read_jsb(src, b, &g, info);

		if (st) {
			rc = st > 0 ? 0 : -1;
			break;
		}
		t.n = 0;
		t.touched = 0;
		if (walk_log(src, &g, b, &t, info))
			break;
		/*
		 * A live journal: if the kernel checkpointed and reused log
		 * space during the walk, a block overwritten by a newer
		 * transaction looked like the end of the log.  jbd2 writes the
		 * superblock's new tail before it reuses space, so an unchanged
		 * superblock means the walk saw a stable log.  Otherwise walk
		 * again (home blocks reported so far stay: extra ones are only
		 * false positives), a few times.
		 */
		if (src->before_reread)
			src->before_reread(src->ctx);
		if (src->read(src->ctx, 0, b)) {
			snprintf(info->why, sizeof(info->why), "cannot re-read the journal superblock");
			break;
		}
		if (be32(b + 24) == g.seq0 && be32(b + 28) == g.start) {
			rc = 0;
			break;
		}
		if (++tries >= JBD2_RETRIES) {
			snprintf(info->why, sizeof(info->why),
				 "the journal moved during each of %d walks (sequence %u -> %u)",
				 tries, g.seq0, be32(b + 24));
			break;
		}
		{
			uint64_t h = info->homes;

			memset(info, 0, sizeof(*info));
			info->homes = h;
			info->retries = (unsigned)tries;
		}
	}
	free(t.home);
	free(b);
	return rc;
}
