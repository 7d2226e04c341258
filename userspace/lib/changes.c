// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * "Which sectors changed since epoch E": the union of the journal records of
 * epochs E .. current-1 and the current epoch's bitmap.
 *
 * Consistency with a live target.  The target commits in this order: a
 * closed epoch's journal record, then the superblock that ends the epoch,
 * then bitmap blocks stamped with the new epoch; and it only reuses journal
 * blocks after a superblock that drops them.  So a reader does:
 *   1. read the superblock (seq S),
 *   2. read the journal records and the bitmap it points to,
 *   3. read the superblock again.
 * If the seq is still S, nothing the snapshot used was replaced under it:
 * journal blocks in [head, tail) of S are immutable while S is current, and
 * bitmap bits only get set (a bit set after our read is for a write issued
 * after it).  Format 2 adds every region of each chunk marked in S's intent
 * map.  That is complete for every write issued before step 1: its chunk
 * was marked then, or was retired before S, and a retire is committed only
 * after the exact bits of its writes are durable, so step 2 reads them.
 * The target commits superblocks that only mark or retire chunks often, so
 * a moved seq with the same epoch, journal and geometry is no reason to
 * start over (the second superblock's marks are added too).  If the epoch,
 * journal or geometry moved, or a bitmap block carries a newer stamp than
 * S's epoch (written after a checkpoint we have not seen), start over, up
 * to CHJ_SNAPSHOT_TRIES times.  A bitmap block failing its checksum is
 * re-read a few times first (a read racing the target's write of the same
 * block may be torn) and then counted as all changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

struct chj_changes {
	struct chj_bits bits;
	struct chj_changes_info info;
};

struct jctx {
	struct chj_bits *bits;
	uint64_t since;
	int coarse;
	char first_problem[256];
};

static int add_record(void *ctx, const struct chj_jblock *b)
{
	struct jctx *j = ctx;

	if (b->epoch < j->since)
		return 0;
	if (chj_le32(b->flags) & CHJ_JF_COARSE)
		j->coarse = 1;
	/* Extents were bounds-checked against nr_regions by the walk. */
	for (uint32_t i = 0; i < b->nr_extents; i++)
		chj_bits_set_range(j->bits, chj_le64(b->ext[i].start),
				   chj_le64(b->ext[i].count));
	return 0;
}

static void note_problem(void *ctx, uint64_t seq, const char *why)
{
	struct jctx *j = ctx;

	(void)seq;
	if (!j->first_problem[0])
		snprintf(j->first_problem, sizeof(j->first_problem), "%s", why);
}

static int epoch_in_range(struct chj_meta *m, const struct chj_sb *sb,
			  uint64_t since, struct chj_error *e)
{
	if (since < sb->oldest_epoch)
		return chj_err(e, CHJ_ERR_NOT_RETAINED,
			       "epoch %llu: no longer retained (oldest is %llu): a full backup is needed",
			       (unsigned long long)since,
			       (unsigned long long)sb->oldest_epoch);
	if (since > sb->current_epoch)
		return chj_err(e, CHJ_ERR_FUTURE,
			       "epoch %llu: newer than the current epoch %llu of %s (formatted anew since?): a full backup is needed",
			       (unsigned long long)since,
			       (unsigned long long)sb->current_epoch, m->path);
	return CHJ_OK;
}

/* Did the superblock move in a way that invalidates a snapshot read under a? */
static int moved(const struct chj_sb *a, const struct chj_sb *b)
{
	return a->seq != b->seq &&
	       (a->current_epoch != b->current_epoch ||
		a->oldest_epoch != b->oldest_epoch ||
		a->journal_head != b->journal_head ||
		a->journal_tail != b->journal_tail ||
		a->nr_regions != b->nr_regions ||
		a->bitmap_blocks != b->bitmap_blocks ||
		a->flags != b->flags || a->version != b->version ||
		a->chunk_shift != b->chunk_shift);
}

/* One attempt; *again set when the superblock moved underneath. */
static int snapshot(struct chj_meta *m, uint64_t since, struct chj_changes *c,
		    int *again, struct chj_error *e)
{
	struct chj_sb sb, sb2;
	struct chj_bmscan bm = { .reread = 3 };
	struct jctx j = { .since = since };
	struct chj_jwalk w = { .block = add_record, .problem = note_problem,
			       .ctx = &j, .stop_at_problem = 1 };
	uint64_t synced = m->synced_epoch;
	int rc, exact;

	*again = 0;
	rc = chj_sb_read(m, &sb, e);
	if (!rc)
		rc = epoch_in_range(m, &sb, since, e);
	if (!rc)
		rc = chj_bits_init(&c->bits, sb.nr_regions, e);
	if (rc)
		return rc;
	j.bits = bm.out = &c->bits;
	if (sb.flags & CHJ_SB_F_ALL_CHANGED)
		chj_bits_set_range(&c->bits, 0, sb.nr_regions);
	else
		rc = chj_bitmap_scan(m, &sb, &bm, e);
	/*
	 * The marked chunks count whole unless the target wrote its exact map
	 * for this very epoch before the read: then the bitmap holds every
	 * write issued before it, chunk marks or not.
	 */
	exact = synced && synced == sb.current_epoch;
	if (!exact)
		chj_sb_intent_regions(&sb, &c->bits);
	/* Records of epochs < current only matter when since < current. */
	if (!rc && since < sb.current_epoch)
		rc = chj_journal_walk(m, &sb, &w, e);
	if (!rc)
		rc = chj_sb_read(m, &sb2, e);
	if (!rc && moved(&sb, &sb2)) {
		*again = 1;
		return CHJ_OK;
	}
	if (!rc && !exact)
		chj_sb_intent_regions(&sb2, &c->bits);
	if (rc)
		return rc;
	if (w.problems)
		return chj_err(e, CHJ_ERR_UNTRUSTED,
			       "%s: journal damaged: %s: the changes cannot be trusted, a full backup is needed (run chj check)",
			       m->path, j.first_problem);
	c->info.sb = sb;
	c->info.since = since;
	/* A newer stamp with an unchanged superblock is damage: all ones. */
	c->info.damaged_bitmap_blocks = bm.damaged + bm.newer;
	c->info.marked_chunks = exact ? 0 : chj_sb_marked_chunks(&sb);
	c->info.chunk_regions = sb.version >= 2 ? 1ull << sb.chunk_shift : 0;
	c->info.coarse = j.coarse || (sb.flags & CHJ_SB_F_COARSE);
	c->info.changed_regions = chj_bits_count(&c->bits);
	return CHJ_OK;
}

int chj_rc_full_backup(int rc)
{
	return rc == CHJ_ERR_NOT_RETAINED || rc == CHJ_ERR_FUTURE || rc == CHJ_ERR_UNTRUSTED;
}

int chj_changes_trusted(const struct chj_changes *c, const char *what,
			struct chj_error *e)
{
	if (!c->info.damaged_bitmap_blocks)
		return CHJ_OK;
	return chj_err(e, CHJ_ERR_UNTRUSTED,
		       "%s: %llu damaged bitmap blocks: the changes cannot be trusted, a full backup is needed (chj check --repair makes them all changed)",
		       what, (unsigned long long)c->info.damaged_bitmap_blocks);
}

int chj_changes_since(struct chj_meta *m, uint64_t since,
		      struct chj_changes **out, struct chj_error *e)
{
	struct chj_changes *c = calloc(1, sizeof(*c));
	int rc = CHJ_OK, again = 1;
	unsigned tries = 0;

	if (!c)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	while (again && tries < CHJ_SNAPSHOT_TRIES) {
		struct timespec ts = { 0, 2000000L * tries };

		if (tries)
			nanosleep(&ts, NULL);
		chj_bits_free(&c->bits);
		tries++;
		rc = snapshot(m, since, c, &again, e);
		if (rc)
			break;
	}
	if (!rc && again)
		rc = chj_err(e, CHJ_ERR_UNSTABLE,
			     "%s: metadata kept changing while it was read (%u tries); try again",
			     m->path, tries);
	if (rc) {
		chj_changes_free(c);
		return rc;
	}
	c->info.tries = tries;
	*out = c;
	return CHJ_OK;
}

void chj_changes_free(struct chj_changes *c)
{
	if (!c)
		return;
	chj_bits_free(&c->bits);
	free(c);
}

const struct chj_changes_info *chj_changes_info(const struct chj_changes *c)
{
	return &c->info;
}

int chj_changes_next(const struct chj_changes *c, uint64_t *cursor,
		     struct chj_range *r)
{
	uint64_t s, n, rs = c->info.sb.region_sectors;
	uint64_t end;

	if (!chj_bits_next_run(&c->bits, cursor, &s, &n))
		return 0;
	/* The last region may be partial: clip at the origin's end. */
	end = (s + n) * rs;
	if (end > c->info.sb.origin_sectors)
		end = c->info.sb.origin_sectors;
	r->start = s * rs;
	r->len = end - r->start;
	return 1;
}

int chj_changes_ranges(const struct chj_changes *c, struct chj_range **v,
		       size_t *n, struct chj_error *e)
{
	uint64_t cur = 0;
	size_t cnt = 0, cap = 0;
	struct chj_range r, *a = NULL;

	while (chj_changes_next(c, &cur, &r)) {
		if (cnt == cap) {
			struct chj_range *t;

			cap = cap ? cap * 2 : 64;
			t = realloc(a, cap * sizeof(*a));
			if (!t) {
				free(a);
				return chj_err(e, CHJ_ERR_NOMEM,
					       "changed ranges: out of memory");
			}
			a = t;
		}
		a[cnt++] = r;
	}
	*v = a;
	*n = cnt;
	return CHJ_OK;
}

int chj_changes_test(const struct chj_changes *c, uint64_t start, uint64_t len)
{
	uint64_t rs = c->info.sb.region_sectors;

	if (!len || start >= c->info.sb.origin_sectors)
		return 0;
	if (len > c->info.sb.origin_sectors - start)
		len = c->info.sb.origin_sectors - start;
	return chj_bits_any(&c->bits, start / rs, (start + len - 1) / rs);
}
