// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj check: verify everything, and with repair make damaged metadata safe.
 * Repair only ever makes the answer more conservative:
 *  - a damaged bitmap block (or one stamped with a future epoch) is
 *    rewritten all ones for the current epoch; if that write fails the
 *    superblock gets CHJ_SB_F_ALL_CHANGED instead;
 *  - damaged journal history is dropped up to the first intact record after
 *    the last damage, and oldest_epoch rises to that record's epoch, so a
 *    question about an older epoch gets "full backup needed", never a short
 *    answer (no intact record left: oldest_epoch = current_epoch);
 *  - bits set past the last region are cleared (they mark no region).
 * The superblock is changed by committing seq + 1 into the other copy, as
 * the target does.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NO_SEQ UINT64_MAX

struct cctx {
	chj_check_report_fn fn;
	void *ctx;
	struct chj_check_result *r;
	/* journal: first intact record start after the last problem */
	uint64_t resume_seq, resume_epoch;
	/* bitmap blocks to rewrite */
	uint64_t *bad_bm;
	size_t nr_bad_bm, cap_bad_bm;
	int nomem;
};

static void check_say(struct cctx *c, enum chj_check_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check_say(struct cctx *c, enum chj_check_level lvl, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	if (lvl == CHJ_PROBLEM)
		c->r->problems++;
	else if (lvl == CHJ_NOTE)
		c->r->notes++;
	else
		c->r->fixed++;
	if (!c->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->fn(c->ctx, lvl, msg);
}

static int check_sbs(struct chj_meta *m, struct cctx *c, struct chj_sb *sb,
		     struct chj_error *e)
{
	struct chj_sb_copies cp;
	int rc = chj_sb_read_copies(m, &cp, e);

	if (rc)
		return rc;
	if (cp.best < 0) {
		check_say(c, CHJ_PROBLEM, "no valid superblock (block 0: %s; block 1: %s); cannot repair",
		    cp.why[0], cp.why[1]);
		c->r->no_superblock = 1;
		return CHJ_OK;
	}
	for (unsigned i = 0; i < CHJ_SB_COPIES; i++)
		if ((int)i != cp.best && cp.state[i] != CHJ_SB_VALID)
			check_say(c, CHJ_NOTE, "superblock copy %u: %s (normal after an interrupted commit; copy %d is in force)",
			    i, cp.why[i], cp.best);
	*sb = cp.sb[cp.best];
	return CHJ_OK;
}

static void jproblem(void *ctx, uint64_t seq, const char *why)
{
	struct cctx *c = ctx;

	(void)seq;
	c->resume_seq = NO_SEQ;
	check_say(c, CHJ_PROBLEM, "%s", why);
}

static int jblock(void *ctx, const struct chj_jblock *b)
{
	struct cctx *c = ctx;

	if (c->resume_seq == NO_SEQ && (b->flags & CHJ_JF_FIRST)) {
		c->resume_seq = b->seq;
		c->resume_epoch = b->epoch;
	}
	return 0;
}

static void bmblock(void *ctx, uint64_t idx, enum chj_bm_state st,
		    const struct chj_bitmap_block *b)
{
	struct cctx *c = ctx;

	(void)b;
	if (st == CHJ_BM_DAMAGED)
		check_say(c, CHJ_PROBLEM, "bitmap block %llu: damaged (its regions read as changed)",
		    (unsigned long long)idx);
	else if (st == CHJ_BM_NEWER)
		check_say(c, CHJ_PROBLEM, "bitmap block %llu: stamped with an epoch after the current one",
		    (unsigned long long)idx);
	else
		return;
	if (c->nr_bad_bm == c->cap_bad_bm) {
		size_t cap = c->cap_bad_bm ? c->cap_bad_bm * 2 : 16;
		void *t = realloc(c->bad_bm, cap * sizeof(*c->bad_bm));

		if (!t) {
			c->nomem = 1;
			return;
		}
		c->bad_bm = t;
		c->cap_bad_bm = cap;
	}
	c->bad_bm[c->nr_bad_bm++] = idx;
}

/* Rewrite bitmap block idx: all ones, or (ones = 0) its own bits, masked. */
static int rewrite_bm(struct chj_meta *m, const struct chj_sb *sb, uint64_t idx,
		      int ones, struct chj_error *e)
{
	struct chj_bitmap_block *b = chj_blocks_alloc(1), *mask;
	int rc = CHJ_OK;

	mask = chj_blocks_alloc(1);
	if (!b || !mask) {
		free(b);
		free(mask);
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	}
	if (!ones)
		rc = chj_read_blocks(m, sb->bitmap_start + idx, 1, b, e);
	chj_bitmap_block_fill(mask, sb->current_epoch, idx, sb->nr_regions, 1);
	if (!rc && !ones) {
		for (size_t i = 0; i < CHJ_BITMAP_BYTES; i++)
			mask->bits[i] &= b->bits[i];
		mask->csum = chj_cpu32(chj_block_csum(mask, CHJ_BLOCK_SIZE));
	}
	if (!rc)
		rc = chj_write_blocks(m, sb->bitmap_start + idx, 1, mask, e);
	free(b);
	free(mask);
	return rc;
}

static void repair_bitmap(struct chj_meta *m, struct cctx *c, struct chj_sb *sb,
			  int *sb_dirty)
{
	struct chj_error e;

	for (size_t i = 0; i < c->nr_bad_bm; i++) {
		if (!rewrite_bm(m, sb, c->bad_bm[i], 1, &e)) {
			check_say(c, CHJ_FIXED, "bitmap block %llu: rewritten with every region marked",
			    (unsigned long long)c->bad_bm[i]);
		} else if (!(sb->flags & CHJ_SB_F_ALL_CHANGED)) {
			sb->flags |= CHJ_SB_F_ALL_CHANGED;
			*sb_dirty = 1;
			check_say(c, CHJ_FIXED, "bitmap block %llu: cannot rewrite (%s); current epoch marked all changed",
			    (unsigned long long)c->bad_bm[i], e.msg);
		}
	}
}

/* Blocks whose last word has bits past nr_regions: clear those bits. */
static int repair_stray(struct chj_meta *m, struct cctx *c, const struct chj_sb *sb,
			struct chj_error *e)
{
	uint64_t idx = sb->bitmap_blocks - 1;
	int rc = rewrite_bm(m, sb, idx, 0, e);

	if (!rc)
		check_say(c, CHJ_FIXED, "bitmap block %llu: cleared bits past the last region",
		    (unsigned long long)idx);
	return rc;
}

static void repair_journal(struct cctx *c, struct chj_sb *sb, int *sb_dirty)
{
	uint64_t head = sb->journal_tail, oldest = sb->current_epoch;

	if (c->resume_seq != NO_SEQ) {
		head = c->resume_seq;
		oldest = c->resume_epoch;
	}
	check_say(c, CHJ_FIXED, "journal: dropped blocks %llu..%llu; oldest retained epoch raised from %llu to %llu",
	    (unsigned long long)sb->journal_head, (unsigned long long)head - 1,
	    (unsigned long long)sb->oldest_epoch, (unsigned long long)oldest);
	sb->journal_head = head;
	sb->oldest_epoch = oldest;
	*sb_dirty = 1;
}

/* One pass; with repair, fix what it found.  *valid: a superblock exists. */
static int pass(struct chj_meta *m, struct cctx *c, int repair, struct chj_error *e)
{
	struct chj_sb sb;
	struct chj_jwalk w = { .block = jblock, .problem = jproblem, .ctx = c };
	struct chj_bmscan bm = { .block = bmblock, .ctx = c };
	int rc, dirty = 0;
	unsigned before = c->r->problems;

	sb.seq = NO_SEQ;
	c->resume_seq = NO_SEQ;
	rc = check_sbs(m, c, &sb, e);
	if (rc || sb.seq == NO_SEQ)
		return rc;
	if (sb.flags & CHJ_SB_F_ALL_CHANGED)
		check_say(c, CHJ_NOTE, "the current epoch is marked all changed");
	rc = chj_journal_walk(m, &sb, &w, e);
	if (!rc)
		rc = chj_bitmap_scan(m, &sb, &bm, e);
	if (!rc && c->nomem)
		rc = chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	if (rc)
		return rc;
	if (bm.stray)
		check_say(c, CHJ_PROBLEM, "bitmap: %llu bits set past the last region",
		    (unsigned long long)bm.stray);
	if (!repair || c->r->problems == before)
		return CHJ_OK;
	repair_bitmap(m, c, &sb, &dirty);
	if (bm.stray && (rc = repair_stray(m, c, &sb, e)))
		return rc;
	if (w.problems)
		repair_journal(c, &sb, &dirty);
	if (dirty)
		rc = chj_sb_commit(m, &sb, e);
	if (!rc)
		rc = chj_meta_sync(m, e);
	return rc;
}

int chj_check(struct chj_meta *m, int repair, chj_check_report_fn fn,
	      void *ctx, struct chj_check_result *r, struct chj_error *e)
{
	struct cctx c = { .fn = fn, .ctx = ctx, .r = r };
	struct chj_check_result again = { 0 };
	struct cctx c2 = { .r = &again };
	int rc;

	memset(r, 0, sizeof(*r));
	if (repair && !m->writable)
		return chj_err(e, CHJ_ERR_INVAL, "%s: opened read-only", m->path);
	rc = pass(m, &c, repair, e);
	if (!rc && repair && r->fixed) {
		/* Verify the repair: what a second pass still finds is left. */
		rc = pass(m, &c2, 0, e);
		free(c2.bad_bm);
		if (!rc && again.problems)
			r->fixed = r->problems > again.problems ?
				   r->problems - again.problems : 0;
		else if (!rc)
			r->fixed = r->problems;
	}
	free(c.bad_bm);
	return rc;
}
