// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Writing a fresh format (chj format, chj create, the tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "internal.h"

#define CHUNK_BLOCKS 64u

uint64_t chj_metadata_blocks_for(uint64_t origin_sectors,
				 uint32_t region_sectors,
				 uint64_t journal_blocks)
{
	uint64_t nr = chj_regions_for(origin_sectors, region_sectors);

	if (journal_blocks < CHJ_MIN_JOURNAL_BLOCKS)
		journal_blocks = CHJ_MIN_JOURNAL_BLOCKS;
	return CHJ_SB_COPIES + chj_bitmap_blocks_for(nr) + journal_blocks;
}

static int check_opts(struct chj_meta *m, const struct chj_format_opts *o,
		      struct chj_error *e)
{
	uint64_t nr, need;
	char h[32];

	if (!chj_region_sectors_valid(o->region_sectors))
		return chj_err(e, CHJ_ERR_INVAL,
			       "region size %llu sectors: must be a power of two from 4 KiB to 1 GiB",
			       (unsigned long long)o->region_sectors);
	if (!o->origin_sectors)
		return chj_err(e, CHJ_ERR_INVAL, "origin size: must not be zero");
	nr = chj_regions_for(o->origin_sectors, o->region_sectors);
	if (nr > (1ull << 40))
		return chj_err(e, CHJ_ERR_INVAL,
			       "region size: too small for this origin (%llu regions; at most 2^40)",
			       (unsigned long long)nr);
	need = chj_min_metadata_blocks(nr);
	if (m->dev_blocks < need)
		return chj_err(e, CHJ_ERR_INVAL,
			       "%s: too small: this origin and region size need at least %s",
			       m->path, chj_human_size(need * CHJ_BLOCK_SIZE, h, sizeof(h)));
	return CHJ_OK;
}

/* Every bitmap block stamped epoch 0: valid, and empty for epoch 1. */
static int write_bitmap(struct chj_meta *m, const struct chj_sb *sb,
			struct chj_error *e)
{
	uint8_t *buf = chj_blocks_alloc(CHUNK_BLOCKS);
	int rc = CHJ_OK;

	if (!buf)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	for (uint64_t i = 0; !rc && i < sb->bitmap_blocks; i += CHUNK_BLOCKS) {
		uint64_t n = sb->bitmap_blocks - i;

		if (n > CHUNK_BLOCKS)
			n = CHUNK_BLOCKS;
		for (uint64_t k = 0; k < n; k++)
			chj_bitmap_block_fill((void *)(buf + k * CHJ_BLOCK_SIZE), 0,
					      i + k, sb->nr_regions, 0);
		rc = chj_write_blocks(m, sb->bitmap_start + i, n, buf, e);
	}
	free(buf);
	return rc;
}

static void init_sb(struct chj_sb *sb, const struct chj_meta *m,
		    const struct chj_format_opts *o)
{
	memset(sb, 0, sizeof(*sb));
	if (o->uuid)
		memcpy(sb->uuid, o->uuid, sizeof(sb->uuid));
	else if (getrandom(sb->uuid, sizeof(sb->uuid), 0) != sizeof(sb->uuid))
		for (unsigned i = 0; i < sizeof(sb->uuid); i++)
			sb->uuid[i] = (uint8_t)(rand() ^ time(NULL) >> (i % 4));
	sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40;	/* RFC 4122 version 4 */
	sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;
	sb->region_sectors = o->region_sectors;
	sb->origin_sectors = o->origin_sectors;
	sb->nr_regions = chj_regions_for(o->origin_sectors, o->region_sectors);
	sb->metadata_blocks = m->dev_blocks;
	sb->bitmap_start = CHJ_SB_COPIES;
	sb->bitmap_blocks = chj_bitmap_blocks_for(sb->nr_regions);
	sb->journal_start = sb->bitmap_start + sb->bitmap_blocks;
	sb->journal_blocks = m->dev_blocks - sb->journal_start;
	sb->current_epoch = sb->oldest_epoch = 1;
	sb->format_time = o->now ? o->now : (uint64_t)time(NULL);
	sb->epoch_start_time = sb->format_time;
	sb->version = CHJ_VERSION;
	sb->chunk_shift = chj_default_chunk_shift(sb->region_sectors, sb->nr_regions);
}

int chj_format(struct chj_meta *m, const struct chj_format_opts *o,
	       struct chj_error *e)
{
	uint8_t *buf = chj_blocks_alloc(CHJ_SB_COPIES);
	struct chj_sb sb;
	int rc = check_opts(m, o, e);

	if (!buf)
		return chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	init_sb(&sb, m, o);
	/*
	 * Kill the old superblocks first: an interrupted reformat must not
	 * leave an old superblock pointing at a bitmap already reset.
	 */
	memset(buf, 0, CHJ_SB_COPIES * CHJ_BLOCK_SIZE);
	if (!rc)
		rc = chj_write_blocks(m, 0, CHJ_SB_COPIES, buf, e);
	if (!rc)
		rc = chj_meta_sync(m, e);
	if (!rc)
		rc = write_bitmap(m, &sb, e);
	if (!rc) {
		/* seq 0 in block 0 and seq 1 in block 1: both copies valid. */
		for (unsigned i = 0; i < CHJ_SB_COPIES; i++) {
			sb.seq = i;
			chj_sb_encode(&sb, (void *)(buf + i * CHJ_BLOCK_SIZE));
		}
		rc = chj_write_blocks(m, 0, CHJ_SB_COPIES, buf, e);
	}
	if (!rc)
		rc = chj_meta_sync(m, e);
	free(buf);
	return rc;
}
