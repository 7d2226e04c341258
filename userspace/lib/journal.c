// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The journal: closed epochs' change sets, one record (blocks FIRST..LAST)
 * per epoch that changed anything, in a circular area.  Blocks with seq in
 * [journal_head, journal_tail) are live.  Every block is checked on its own
 * (checksum, seq, epoch range, extents) and as part of its record.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_BLOCKS 64u

struct wstate {
	int in_record;		/* inside a record: last block had no LAST */
	int resync;		/* after a problem: skip to the next FIRST */
	uint64_t rec_epoch;	/* epoch of the current record */
	uint64_t prev_epoch;	/* epoch of the previous record */
	uint64_t prev_end;	/* end of the record's last extent so far */
	uint64_t rec_start_seq;
};

static void problem(struct chj_jwalk *w, uint64_t seq, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void problem(struct chj_jwalk *w, uint64_t seq, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!w->problems || seq > w->last_bad_seq)
		w->last_bad_seq = seq;
	w->problems++;
	if (w->problem)
		w->problem(w->ctx, seq, msg);
}

/* Checks of a block on its own; returns a reason or NULL. */
static const char *check_block(const struct chj_journal_block *b, uint64_t seq,
			       const struct chj_sb *sb, char *why, size_t len)
{
	uint32_t n = chj_le32(b->nr_extents);
	uint64_t epoch = chj_le64(b->epoch), prev_end = 0;

	if (chj_le32(b->magic) != CHJ_JOURNAL_MAGIC)
		return "not a journal block (bad magic)";
	if (chj_le32(b->csum) != chj_block_csum(b, CHJ_BLOCK_SIZE))
		return "checksum mismatch";
	if (chj_le64(b->seq) != seq) {
		snprintf(why, len, "holds sequence %llu instead (stale block)",
			 (unsigned long long)chj_le64(b->seq));
		return why;
	}
	if (chj_le32(b->flags) & ~CHJ_JF_KNOWN)
		return "unknown flags";
	if (epoch < sb->oldest_epoch || epoch >= sb->current_epoch) {
		snprintf(why, len, "epoch %llu is outside the retained closed epochs %llu..%llu",
			 (unsigned long long)epoch,
			 (unsigned long long)sb->oldest_epoch,
			 (unsigned long long)sb->current_epoch - 1);
		return why;
	}
	if (n > CHJ_JOURNAL_EXTENTS)
		return "extent count out of range";
	for (uint32_t i = 0; i < n; i++) {
		uint64_t s = chj_le64(b->ext[i].start), c = chj_le64(b->ext[i].count);

		if (!c || s >= sb->nr_regions || c > sb->nr_regions - s) {
			snprintf(why, len, "extent %u (%llu+%llu) outside the %llu regions",
				 i, (unsigned long long)s, (unsigned long long)c,
				 (unsigned long long)sb->nr_regions);
			return why;
		}
		/* Sorted, disjoint and non-adjacent: start > previous end. */
		if (i && s <= prev_end) {
			snprintf(why, len, "extent %u not sorted after the one before", i);
			return why;
		}
		prev_end = s + c;
	}
	return NULL;
}

/* Checks of a block against its record; updates st when it fits. */
static const char *check_record(struct wstate *st, const struct chj_journal_block *b,
				char *why, size_t len)
{
	uint32_t flags = chj_le32(b->flags), n = chj_le32(b->nr_extents);
	uint64_t epoch = chj_le64(b->epoch);

	if (!st->in_record) {
		if (!(flags & CHJ_JF_FIRST))
			return "continues a record that has no first block";
		if (epoch < st->prev_epoch) {
			snprintf(why, len, "epoch %llu comes after epoch %llu",
				 (unsigned long long)epoch,
				 (unsigned long long)st->prev_epoch);
			return why;
		}
		st->rec_epoch = epoch;
		st->prev_end = 0;
	} else {
		if (epoch != st->rec_epoch) {
			snprintf(why, len, "epoch %llu inside the record of epoch %llu",
				 (unsigned long long)epoch,
				 (unsigned long long)st->rec_epoch);
			return why;
		}
		if (n && chj_le64(b->ext[0].start) < st->prev_end)
			return "extents overlap or are unsorted across the record";
	}
	if (n)
		st->prev_end = chj_le64(b->ext[n - 1].start) +
			       chj_le64(b->ext[n - 1].count);
	st->in_record = !(flags & CHJ_JF_LAST);
	if (!st->in_record)
		st->prev_epoch = epoch;
	return NULL;
}

static int visit(struct chj_jwalk *w, struct wstate *st, const struct chj_sb *sb,
		 uint64_t seq, const struct chj_journal_block *b)
{
	const char *why;
	char buf[160];
	struct chj_jblock jb;

	why = check_block(b, seq, sb, buf, sizeof(buf));
	if (why) {
		problem(w, seq, "journal block seq %llu: %s", (unsigned long long)seq, why);
		st->resync = 1;
		st->in_record = 0;
		return CHJ_OK;
	}
	/* A FIRST block while a record is open: that record lost its end. */
	if (st->in_record && !st->resync && (chj_le32(b->flags) & CHJ_JF_FIRST)) {
		problem(w, seq - 1, "journal block seq %llu: record of epoch %llu has no last block",
			(unsigned long long)seq - 1, (unsigned long long)st->rec_epoch);
		st->in_record = 0;
	}
	if (st->resync) {
		if (!(chj_le32(b->flags) & CHJ_JF_FIRST))
			return CHJ_OK;	/* rest of a record already reported */
		st->resync = 0;
		st->in_record = 0;
	}
	why = check_record(st, b, buf, sizeof(buf));
	if (why) {
		problem(w, seq, "journal block seq %llu: %s", (unsigned long long)seq, why);
		st->resync = 1;
		st->in_record = 0;
		return CHJ_OK;
	}
	jb.seq = seq;
	jb.epoch = chj_le64(b->epoch);
	jb.flags = chj_le32(b->flags);
	jb.nr_extents = chj_le32(b->nr_extents);
	jb.ext = b->ext;
	return w->block ? w->block(w->ctx, &jb) : 0;
}

void chj_journal_block_seal(struct chj_journal_block *b)
{
	b->magic = chj_cpu32(CHJ_JOURNAL_MAGIC);
	b->csum = chj_cpu32(chj_block_csum(b, CHJ_BLOCK_SIZE));
}

int chj_journal_walk(struct chj_meta *m, const struct chj_sb *sb,
		     struct chj_jwalk *w, struct chj_error *e)
{
	struct chj_superblock geo = { 0 };	/* for chj_journal_block_nr */
	struct wstate st = { 0 };
	uint8_t *buf = chj_blocks_alloc(CHUNK_BLOCKS);
	uint64_t seq = sb->journal_head;
	int rc = CHJ_OK;

	w->problems = 0;
	w->last_bad_seq = 0;
	if (!buf)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	geo.journal_start = chj_cpu64(sb->journal_start);
	geo.journal_blocks = chj_cpu64(sb->journal_blocks);
	while (!rc && seq < sb->journal_tail) {
		uint64_t nr = chj_journal_block_nr(&geo, seq);
		uint64_t n = sb->journal_tail - seq;

		/* One read up to the chunk size or the wrap of the ring. */
		if (n > CHUNK_BLOCKS)
			n = CHUNK_BLOCKS;
		if (n > sb->journal_start + sb->journal_blocks - nr)
			n = sb->journal_start + sb->journal_blocks - nr;
		rc = chj_read_blocks(m, nr, n, buf, e);
		for (uint64_t k = 0; !rc && k < n; k++) {
			rc = visit(w, &st, sb, seq + k,
				   (const void *)(buf + k * CHJ_BLOCK_SIZE));
			if (!rc && w->problems && w->stop_at_problem)
				goto out;
		}
		seq += n;
	}
	if (!rc && st.in_record && !st.resync)
		problem(w, sb->journal_tail - 1,
			"journal block seq %llu: record of epoch %llu has no last block",
			(unsigned long long)sb->journal_tail - 1,
			(unsigned long long)st.rec_epoch);
out:
	free(buf);
	return rc;
}
