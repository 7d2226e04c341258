/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * btplan.c: which leaf pages of a SQLite B-tree a set of searches will
 * read, found from the tree's interior pages, so that those leaves (and
 * only those) can be read ahead together.
 *
 * The state store and the name index are SQLite files of 40-400 MB; a
 * steady-state run searches them for a few thousand keys, one search
 * after another.  Reading the whole file ahead costs time in proportion
 * to the file (the tree), not to the searches (the changes); this reads
 * the interior pages the searches pass through (about 1 % of the tree),
 * level by level, each level's pages advised together, and names the
 * leaves.  Nothing read here decides anything: the searches themselves
 * still go through SQLite, so a wrong or damaged page only makes the read
 * ahead useless, never an answer wrong.  Every byte is bounds-checked and
 * every loop bounded all the same (fuzz/fuzz_btplan.c).
 */
#ifndef CHJ_RESOLVE_BTPLAN_H
#define CHJ_RESOLVE_BTPLAN_H

#include <stddef.h>
#include <stdint.h>

/* The file, page by page. */
struct bt_src {
	void *ctx;
	/* Page pgno (1-based) whole into buf (psize bytes): 0, or -1. */
	int (*read)(void *ctx, uint32_t pgno, void *buf);
	/* Pages pgno .. pgno + n - 1 are about to be read (may be NULL). */
	void (*advise)(void *ctx, uint32_t pgno, uint32_t n);
	uint32_t psize;		/* page size, 512 .. 65536, a power of two */
	uint32_t usable;	/* bytes of a page in use (page size - reserved) */
	uint32_t npages;	/* pages in the file */
};

/* A search key: the first one or two integer columns of an entry. */
struct bt_key {
	int64_t k[2];
};

/* qsort's order of keys: by k[0], then k[1]. */
int bt_key_order(const void *a, const void *b);

/* The most interior pages read for one plan: beyond it, the caller
 * reads ahead as it would without a plan. */
#define BT_MAX_INTERIOR	16384u

/*
 * Advise (src->advise) every leaf page of the index B-tree rooted at
 * page root that may hold an entry whose first ncols (1 or 2) integer
 * columns equal one of keys[0..n) (sorted ascending, by k[0] then k[1]).
 * Returns the number of leaf pages advised (0: no key can be in the
 * tree), or -1 when the tree is not an index B-tree this reads, a page
 * could not be read, or the plan would exceed BT_MAX_INTERIOR pages (or
 * 4M cells: btplan.c).
 */
long bt_plan(const struct bt_src *src, uint32_t root, const struct bt_key *keys, size_t n,
	     int ncols);

/* The page size and usable size from a SQLite file's first 100 bytes:
 * 0, or -1 when it is not a SQLite 3 header. */
int bt_header(const uint8_t *hdr, size_t len, uint32_t *psize, uint32_t *usable);

#endif
