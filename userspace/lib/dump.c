// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Collect what chj dump shows: superblocks, per-epoch record sizes, marks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct dctx {
	struct chj_dump *d;
	size_t cap;
	int nomem;
};

static int count_block(void *ctx, const struct chj_jblock *b)
{
	struct dctx *c = ctx;
	struct chj_dump *d = c->d;
	struct chj_epoch_stat *s;

	/* Epochs are non-decreasing along the journal: compare with the last. */
	if (!d->nr_epochs || d->epochs[d->nr_epochs - 1].epoch != b->epoch) {
		if (d->nr_epochs == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 16;
			void *t = realloc(d->epochs, cap * sizeof(*d->epochs));

			if (!t) {
				c->nomem = 1;
				return 1;
			}
			d->epochs = t;
			c->cap = cap;
		}
		memset(&d->epochs[d->nr_epochs], 0, sizeof(*d->epochs));
		d->epochs[d->nr_epochs++].epoch = b->epoch;
	}
	s = &d->epochs[d->nr_epochs - 1];
	s->blocks++;
	s->extents += b->nr_extents;
	for (uint32_t i = 0; i < b->nr_extents; i++)
		s->regions += chj_le64(b->ext[i].count);
	return 0;
}

int chj_dump_collect(struct chj_meta *m, struct chj_dump *d,
		     struct chj_error *e)
{
	struct dctx c = { .d = d };
	struct chj_jwalk w = { .block = count_block, .ctx = &c };
	struct chj_bits bits;
	struct chj_bmscan bm = { .out = &bits };
	int rc;

	memset(d, 0, sizeof(*d));
	rc = chj_sb_read_copies(m, &d->copies, e);
	if (rc)
		return rc;
	rc = chj_sb_read(m, &d->sb, e);
	if (!rc)
		rc = chj_journal_walk(m, &d->sb, &w, e);
	if (!rc && c.nomem)
		rc = chj_err(e, CHJ_ERR_NOMEM, "%s: out of memory", m->path);
	if (rc) {
		chj_dump_free(d);
		return rc;
	}
	d->journal_ok = !w.problems;
	rc = chj_bits_init(&bits, d->sb.nr_regions, e);
	if (!rc && !(d->sb.flags & CHJ_SB_F_ALL_CHANGED))
		rc = chj_bitmap_scan(m, &d->sb, &bm, e);
	if (!rc && (d->sb.flags & CHJ_SB_F_ALL_CHANGED))
		chj_bits_set_range(&bits, 0, d->sb.nr_regions);
	if (!rc) {
		chj_sb_intent_regions(&d->sb, &bits);
		d->current_marked = chj_bits_count(&bits);
		d->damaged_bitmap_blocks = bm.damaged + bm.newer;
	}
	chj_bits_free(&bits);
	if (rc)
		chj_dump_free(d);
	return rc;
}

void chj_dump_free(struct chj_dump *d)
{
	free(d->epochs);
	d->epochs = NULL;
	d->nr_epochs = 0;
}
