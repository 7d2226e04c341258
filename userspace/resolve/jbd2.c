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

int jbd2_scan(const struct jbd2_src *src, struct jbd2_info *info)
{
	unsigned char *b;
	uint32_t bs = src->bs, first, maxlen, last, start, seq, incompat;
	uint64_t pos, steps;
	unsigned tagb, tail;
	struct trans t = { 0 };
	int rc = -1, in_trans = 0, tries = 0;
	uint32_t seq0;

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
again:
	if (src->read(src->ctx, 0, b)) {
		snprintf(info->why, sizeof(info->why), "cannot read the journal superblock");
		goto out;
	}
	if (be32(b) != JBD2_MAGIC || (be32(b + 4) != JBD2_SB_V1 && be32(b + 4) != JBD2_SB_V2)) {
		snprintf(info->why, sizeof(info->why), "no journal superblock");
		goto out;
	}
	maxlen = be32(b + 16);
	first = be32(b + 20);
	seq = seq0 = be32(b + 24);
	start = be32(b + 28);
	incompat = be32(b + 4) == JBD2_SB_V2 ? be32(b + 40) : 0;
	if (be32(b + 12) != bs) {
		snprintf(info->why, sizeof(info->why), "journal block size %u, filesystem %u",
			 be32(b + 12), bs);
		goto out;
	}
	if (incompat & ~JBD2_IN_KNOWN) {
		snprintf(info->why, sizeof(info->why), "unknown journal features 0x%x", incompat);
		goto out;
	}
	if (maxlen > src->nblocks || first < 1 || first >= maxlen) {
		snprintf(info->why, sizeof(info->why), "journal geometry out of range (first %u, length %u, inode %llu blocks)",
			 first, maxlen, (unsigned long long)src->nblocks);
		goto out;
	}
	last = maxlen;
	if (incompat & JBD2_IN_FAST_COMMIT) {
		uint32_t fc = be32(b + 84) ? be32(b + 84) : JBD2_FC_DEFAULT_BLOCKS;

		if (fc < maxlen - first)
			last = maxlen - fc;
	}
	if (!start) {
		info->clean = 1;
		rc = 0;
		goto out;
	}
	if (start < first || start >= last) {
		snprintf(info->why, sizeof(info->why), "journal start %u outside [%u, %u)",
			 start, first, last);
		goto out;
	}
	tagb = jbd2_tag_bytes(incompat);
	tail = (incompat & (JBD2_IN_CSUM_V2 | JBD2_IN_CSUM_V3)) ? 4 : 0;
	pos = start;
	/* At most one lap of the log. */
	for (steps = 0; steps < (uint64_t)(last - first);) {
		uint32_t type;

		if (src->read(src->ctx, pos, b)) {
			snprintf(info->why, sizeof(info->why), "cannot read journal block %llu",
				 (unsigned long long)pos);
			goto out;
		}
		if (be32(b) != JBD2_MAGIC || be32(b + 8) != seq)
			break;
		type = be32(b + 4);
		if (src->changed(src->ctx, pos))
			t.touched = 1;
		in_trans = 1;
		if (type == JBD2_DESCRIPTOR) {
			size_t off = 12;
			uint64_t data = 0;

			/* Tags, each naming the home of the next data block. */
			while (off + tagb + tail <= bs) {
				const unsigned char *g = b + off;
				uint32_t flags = (incompat & JBD2_IN_CSUM_V3) ? be32(g + 4) : be16(g + 6);
				uint64_t blk = be32(g);

				if (incompat & JBD2_IN_64BIT)
					blk |= (uint64_t)be32(g + 8) << 32;
				if (trans_add(&t, blk)) {
					snprintf(info->why, sizeof(info->why), "out of memory");
					goto out;
				}
				data++;
				off += tagb;
				if (!(flags & JBD2_TAG_SAME_UUID))
					off += 16;
				if (flags & JBD2_TAG_LAST)
					break;
			}
			/* The data blocks follow the descriptor. */
			for (uint64_t i = 0; i < data && steps < (uint64_t)(last - first); i++) {
				pos = pos + 1 >= last ? first : pos + 1;
				steps++;
				if (src->changed(src->ctx, pos))
					t.touched = 1;
			}
		} else if (type == JBD2_COMMIT) {
			trans_end(src, info, &t);
			in_trans = 0;
			seq++;
		} else if (type != JBD2_REVOKE) {
			break;
		}
		pos = pos + 1 >= last ? first : pos + 1;
		steps++;
	}
	/* An uncommitted tail counts as well. */
	if (in_trans && t.n)
		trans_end(src, info, &t);
	/*
	 * A live journal: if the kernel checkpointed and reused log space
	 * during the walk, a block overwritten by a newer transaction looked
	 * like the end of the log.  jbd2 writes the superblock's new tail
	 * before it reuses space, so an unchanged superblock means the walk
	 * saw a stable log.  Otherwise walk again (home blocks reported so far
	 * stay: extra ones are only false positives), a few times.
	 */
	if (src->before_reread)
		src->before_reread(src->ctx);
	if (src->read(src->ctx, 0, b)) {
		snprintf(info->why, sizeof(info->why), "cannot re-read the journal superblock");
		goto out;
	}
	if (be32(b + 24) != seq0 || be32(b + 28) != start) {
		if (++tries < JBD2_RETRIES) {
			uint64_t h = info->homes;

			memset(info, 0, sizeof(*info));
			info->homes = h;
			info->retries = (unsigned)tries;
			t.n = 0;
			t.touched = 0;
			in_trans = 0;
			goto again;
		}
		snprintf(info->why, sizeof(info->why),
			 "the journal moved during each of %d walks (sequence %u -> %u)",
			 tries, seq0, be32(b + 24));
		goto out;
	}
	rc = 0;
out:
	free(t.home);
	free(b);
	return rc;
}
