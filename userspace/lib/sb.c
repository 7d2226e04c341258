// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Superblocks: two copies in blocks 0 and 1.  Commit N goes to block N % 2,
 * so a torn write damages only the copy that was being replaced; the valid
 * copy with the highest seq is the one in force.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void chj_sb_decode(const struct chj_superblock *r, struct chj_sb *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->seq = chj_le64(r->seq);
	sb->flags = chj_le32(r->flags);
	memcpy(sb->uuid, r->uuid, sizeof(sb->uuid));
	sb->region_sectors = chj_le32(r->region_sectors);
	sb->nr_regions = chj_le64(r->nr_regions);
	sb->origin_sectors = chj_le64(r->origin_sectors);
	sb->metadata_blocks = chj_le64(r->metadata_blocks);
	sb->bitmap_start = chj_le64(r->bitmap_start);
	sb->bitmap_blocks = chj_le64(r->bitmap_blocks);
	sb->journal_start = chj_le64(r->journal_start);
	sb->journal_blocks = chj_le64(r->journal_blocks);
	sb->current_epoch = chj_le64(r->current_epoch);
	sb->oldest_epoch = chj_le64(r->oldest_epoch);
	sb->journal_head = chj_le64(r->journal_head);
	sb->journal_tail = chj_le64(r->journal_tail);
	sb->epoch_start_time = chj_le64(r->epoch_start_time);
	sb->format_time = chj_le64(r->format_time);
	sb->version = chj_le32(r->version);
	if (sb->version >= 2) {
		const struct chj_intent *in =
			(const void *)((const uint8_t *)r + CHJ_INTENT_OFFSET);

		sb->chunk_shift = chj_le32(in->chunk_shift);
		memcpy(sb->intent, in->bits, sizeof(sb->intent));
	}
}

/* Fill every field and the checksum of a raw superblock. */
void chj_sb_encode(const struct chj_sb *sb, struct chj_superblock *r)
{
	struct chj_intent *in;

	memset(r, 0, sizeof(*r));
	r->magic = chj_cpu32(CHJ_SB_MAGIC);
	r->version = chj_cpu32(CHJ_VERSION);
	r->flags = chj_cpu32(sb->flags);
	r->seq = chj_cpu64(sb->seq);
	memcpy(r->uuid, sb->uuid, sizeof(r->uuid));
	r->block_size = chj_cpu32(CHJ_BLOCK_SIZE);
	r->region_sectors = chj_cpu32(sb->region_sectors);
	r->nr_regions = chj_cpu64(sb->nr_regions);
	r->origin_sectors = chj_cpu64(sb->origin_sectors);
	r->metadata_blocks = chj_cpu64(sb->metadata_blocks);
	r->bitmap_start = chj_cpu64(sb->bitmap_start);
	r->bitmap_blocks = chj_cpu64(sb->bitmap_blocks);
	r->journal_start = chj_cpu64(sb->journal_start);
	r->journal_blocks = chj_cpu64(sb->journal_blocks);
	r->current_epoch = chj_cpu64(sb->current_epoch);
	r->oldest_epoch = chj_cpu64(sb->oldest_epoch);
	r->journal_head = chj_cpu64(sb->journal_head);
	r->journal_tail = chj_cpu64(sb->journal_tail);
	r->epoch_start_time = chj_cpu64(sb->epoch_start_time);
	r->format_time = chj_cpu64(sb->format_time);
	r->csum = chj_cpu32(chj_block_csum(r, CHJ_SB_BYTES));
	in = (void *)((uint8_t *)r + CHJ_INTENT_OFFSET);
	memset(in, 0, sizeof(*in));
	in->magic = chj_cpu32(CHJ_INTENT_MAGIC);
	in->seq = chj_cpu64(sb->seq);
	in->chunk_shift = chj_cpu32(sb->version >= 2 ? sb->chunk_shift :
				    chj_default_chunk_shift(sb->region_sectors,
							    sb->nr_regions));
	if (sb->version >= 2)
		memcpy(in->bits, sb->intent, sizeof(in->bits));
	in->csum = chj_cpu32(chj_block_csum(in, sizeof(*in)));
}

uint32_t chj_chunk_shift(uint32_t region_sectors, uint32_t chunk_sectors,
			 uint64_t nr_regions)
{
	uint64_t chunk = chunk_sectors ? chunk_sectors : CHJ_DEFAULT_CHUNK_SECTORS;
	uint32_t want = 0;

	while (region_sectors && ((uint64_t)region_sectors << want) < chunk && want < 31)
		want++;
	return chj_chunk_shift_for(nr_regions, want);
}

uint32_t chj_default_chunk_shift(uint32_t region_sectors, uint64_t nr_regions)
{
	/* 4 MiB chunks, as dm-chj's default chunk_sectors (8192). */
	return chj_chunk_shift(region_sectors, 0, nr_regions);
}

uint64_t chj_sb_marked_chunks(const struct chj_sb *sb)
{
	uint64_t n = 0;

	if (sb->version < 2)
		return 0;
	for (size_t i = 0; i < sizeof(sb->intent); i++)
		n += (uint64_t)__builtin_popcount(sb->intent[i]);
	return n;
}

void chj_sb_intent_regions(const struct chj_sb *sb, struct chj_bits *b)
{
	uint64_t nc;

	if (sb->version < 2 || sb->chunk_shift > CHJ_MAX_CHUNK_SHIFT)
		return;
	/* Checked on read: nc <= CHJ_MAX_CHUNKS, no bit past it. */
	nc = chj_chunks_for(sb->nr_regions, sb->chunk_shift);
	for (uint64_t c = 0; c < nc && c < CHJ_MAX_CHUNKS; c++) {
		uint64_t first = c << sb->chunk_shift, n = 1ull << sb->chunk_shift;

		if (!chj_intent_test(sb->intent, c))
			continue;
		if (n > sb->nr_regions - first)
			n = sb->nr_regions - first;
		chj_bits_set_range(b, first, n);
	}
}

void chj_uuid_str(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

enum chj_sb_state chj_sb_classify(const void *block, unsigned idx,
				  uint64_t dev_blocks, const char **why)
{
	const struct chj_superblock *r = block;

	*why = NULL;
	if (all_zero(r, CHJ_BLOCK_SIZE)) {
		*why = "never written";
		return CHJ_SB_ZERO;
	}
	if (chj_le32(r->magic) != CHJ_SB_MAGIC) {
		*why = "not a chj superblock (bad magic)";
		return CHJ_SB_BAD_MAGIC;
	}
	if (chj_le32(r->csum) != chj_block_csum(r, CHJ_SB_BYTES)) {
		*why = "checksum mismatch";
		return CHJ_SB_BAD_CSUM;
	}
	*why = chj_sb_check(r, dev_blocks);
	if (*why)
		return CHJ_SB_BAD_FIELDS;
	if (chj_le64(r->seq) % CHJ_SB_COPIES != idx) {
		*why = "sequence number does not belong in this block";
		return CHJ_SB_MISPLACED;
	}
	if (chj_le32(r->version) >= 2) {
		const struct chj_intent *in =
			(const void *)((const uint8_t *)r + CHJ_INTENT_OFFSET);

		*why = chj_intent_check(r, in, chj_block_csum(in, sizeof(*in)));
		if (*why)
			return CHJ_SB_BAD_FIELDS;
	}
	return CHJ_SB_VALID;
}

int chj_sb_read_copies(struct chj_meta *m, struct chj_sb_copies *c,
		       struct chj_error *e)
{
	uint8_t *buf;
	int rc;

	memset(c, 0, sizeof(*c));
	c->best = -1;
	if (m->dev_blocks < CHJ_SB_COPIES)
		return chj_err(e, CHJ_ERR_CORRUPT,
			       "%s: too small to hold chj metadata (%llu bytes)",
			       m->path, (unsigned long long)m->size);
	buf = chj_blocks_alloc(CHJ_SB_COPIES);
	if (!buf)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	rc = chj_read_blocks(m, 0, CHJ_SB_COPIES, buf, e);
	for (unsigned i = 0; !rc && i < CHJ_SB_COPIES; i++) {
		const struct chj_superblock *r =
			(const void *)(buf + i * CHJ_BLOCK_SIZE);

		c->state[i] = chj_sb_classify(r, i, m->dev_blocks, &c->why[i]);
		chj_sb_decode(r, &c->sb[i]);
		c->sb[i].copy = i;
		if (c->state[i] == CHJ_SB_VALID &&
		    (c->best < 0 || c->sb[i].seq > c->sb[c->best].seq))
			c->best = i;
	}
	free(buf);
	return rc;
}

int chj_sb_read(struct chj_meta *m, struct chj_sb *sb, struct chj_error *e)
{
	struct chj_sb_copies c;
	int rc = chj_sb_read_copies(m, &c, e);

	if (rc)
		return rc;
	if (c.best < 0) {
		if (c.state[0] == CHJ_SB_ZERO && c.state[1] == CHJ_SB_ZERO)
			return chj_err(e, CHJ_ERR_CORRUPT,
				       "%s: no chj metadata (not formatted)", m->path);
		return chj_err(e, CHJ_ERR_CORRUPT,
			       "%s: no valid chj superblock (block 0: %s; block 1: %s)",
			       m->path, c.why[0], c.why[1]);
	}
	*sb = c.sb[c.best];
	return CHJ_OK;
}

int chj_sb_commit(struct chj_meta *m, struct chj_sb *sb, struct chj_error *e)
{
	struct chj_superblock *raw = chj_blocks_alloc(1);
	struct chj_sb next = *sb;
	const char *why;
	int rc;

	if (!raw)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	next.seq = sb->seq + 1;
	next.copy = next.seq % CHJ_SB_COPIES;
	memset(raw, 0, CHJ_BLOCK_SIZE);
	chj_sb_encode(&next, raw);
	/* Never write a superblock the readers would refuse. */
	why = chj_sb_check(raw, m->dev_blocks);
	if (why)
		rc = chj_err(e, CHJ_ERR_INVAL, "%s: refusing to write superblock: %s",
			     m->path, why);
	else
		rc = chj_write_blocks(m, next.copy, 1, raw, e);
	if (!rc)
		rc = chj_meta_sync(m, e);
	if (!rc) {
		/* What was written: format 2, with its chunk size. */
		chj_sb_decode(raw, sb);
		sb->copy = next.copy;
	}
	free(raw);
	return rc;
}
