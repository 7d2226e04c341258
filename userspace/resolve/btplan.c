// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The leaf pages a set of searches of a SQLite index B-tree will read
 * (btplan.h says why).  From the file format (sqlite.org/fileformat.html):
 * an interior index page (type 2) holds cells of a 4-byte left child and a
 * key record, sorted, and a right-most child; every entry under the left
 * child of cell i sorts at or before cell i's key and at or after cell
 * i-1's.  So a search for a key prefix can only end in the children whose
 * neighbouring keys bracket it, and a level of the tree is found from the
 * one above.  Leaves (type 10) all sit at one depth: once one child of a
 * level is a leaf, the whole level is advised and nothing more is read.
 */
#include <stdlib.h>
#include <string.h>

#include "btplan.h"
#include "bytes.h"
#include "resolve.h"

#define PT_INTERIOR_INDEX	2
#define PT_LEAF_INDEX		10
/* A B-tree deeper than this is not one SQLite wrote. */
#define BT_MAX_DEPTH		40

/* The most cells read for one plan (a real tree's plan reads a few
 * hundred interior pages of about a hundred cells). */
#define BT_MAX_CELLS		(1u << 22)

/* A level's pages, each once (seen: a bit per page of the file, so a
 * level never holds more entries than the file has pages). */
struct u32v {
	uint32_t *v;
	size_t n, cap;
	uint8_t *seen;
};

static void u32v_push(struct u32v *a, uint32_t x)
{
	if (a->seen[x >> 3] & (1u << (x & 7)))
		return;
	a->seen[x >> 3] |= (uint8_t)(1u << (x & 7));
	xgrow((void **)&a->v, &a->cap, a->n + 1, sizeof(*a->v));
	a->v[a->n++] = x;
}

static int u32_cmp(const void *pa, const void *pb)
{
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	return (a > b) - (a < b);
}

/* Sorted (each page is there once already). */
static void u32v_sort(struct u32v *a)
{
	if (a->n > 1)
		qsort(a->v, a->n, sizeof(*a->v), u32_cmp);
}

/* Empty, for the next level. */
static void u32v_clear(struct u32v *a)
{
	for (size_t i = 0; i < a->n; i++)
		a->seen[a->v[i] >> 3] = 0;
	a->n = 0;
}

/* Runs of consecutive pages, each advised in one call. */
static void advise_all(const struct bt_src *s, const struct u32v *a)
{
	if (!s->advise)
		return;
	for (size_t i = 0, j; i < a->n; i = j) {
		for (j = i + 1; j < a->n && a->v[j] == a->v[j - 1] + 1; j++)
			;
		s->advise(s->ctx, a->v[i], (uint32_t)(j - i));
	}
}

/* A SQLite varint at p, at most len bytes: its length, or 0. */
static unsigned varint(const uint8_t *p, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned i = 0; i < 9 && i < len; i++) {
		if (i == 8) {
			*v = x << 8 | p[i];
			return 9;
		}
		x = x << 7 | (p[i] & 0x7f);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

/* The bytes of a record column of serial type t holding an integer, or
 * -1 for any other type (NULL, a float, text, a blob). */
static int int_width(uint64_t t)
{
	static const signed char w[] = { -1, 1, 2, 3, 4, 6, 8, -1, 0, 0 };

	return t < sizeof(w) ? w[t] : -1;
}

/* The first ncols integer columns of the record rec[0..len): 0, or -1
 * when the record is cut short or a column is not an integer. */
static int record_key(const uint8_t *rec, size_t len, int ncols, struct bt_key *k)
{
	uint64_t hsz, t;
	size_t ho, body;
	unsigned l = varint(rec, len, &hsz);

	if (!l || hsz > len || hsz < l)
		return -1;
	ho = l;
	body = (size_t)hsz;
	for (int c = 0; c < ncols; c++) {
		int w;
		int64_t v = 0;

		l = varint(rec + ho, (size_t)hsz - ho, &t);
		if (!l || (w = int_width(t)) < 0)
			return -1;
		ho += l;
		if (body + (size_t)w > len)
			return -1;
		if (t == 9)
			v = 1;
		else if (w > 0) {
			/* Big-endian, two's complement, sign from the first byte. */
			v = (int8_t)rec[body];
			for (int b = 1; b < w; b++)
				v = (int64_t)((uint64_t)v << 8 | rec[body + b]);
		}
		k->k[c] = v;
		body += (size_t)w;
	}
	return 0;
}

static int key_cmp(const struct bt_key *a, const struct bt_key *b, int ncols)
{
	for (int c = 0; c < ncols; c++)
		if (a->k[c] != b->k[c])
			return a->k[c] < b->k[c] ? -1 : 1;
	return 0;
}

int bt_key_order(const void *a, const void *b)
{
	return key_cmp(a, b, 2);
}

/* The first of keys[0..n) not before lo. */
static size_t lower_bound(const struct bt_key *keys, size_t n, const struct bt_key *lo, int ncols)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (key_cmp(&keys[m], lo, ncols) < 0)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* How much of an index cell's payload of psz bytes is on its page
 * (the rest is on overflow pages, not read here). */
static size_t local_bytes(uint64_t psz, uint32_t usable)
{
	uint64_t x = ((uint64_t)usable - 12) * 64 / 255 - 23;
	uint64_t m = ((uint64_t)usable - 12) * 32 / 255 - 23;
	uint64_t k;

	if (psz <= x)
		return (size_t)psz;
	k = m + (psz - m) % (usable - 4);
	return (size_t)(k <= x ? k : m);
}

/*
 * The children of interior page buf (header at hdr) that a search for a
 * key of keys[0..n) can enter, added to next: 0, or -1 when the page is
 * malformed.  A key that cannot be read bounds nothing: both children
 * beside it stay candidates.
 */
static int pick_children(const struct bt_src *s, const uint8_t *buf, size_t hdr,
			 const struct bt_key *keys, size_t n, int ncols, struct u32v *next,
			 size_t *cells)
{
	uint32_t ncells = be16(buf + hdr + 3), u = s->usable;
	struct bt_key lo = { { 0, 0 } };
	int have_lo = 0;

	if (hdr + 12 + 2 * (size_t)ncells > u || (*cells += ncells) > BT_MAX_CELLS)
		return -1;
	for (uint32_t i = 0; i <= ncells; i++) {
		struct bt_key hi = { { 0, 0 } };
		int have_hi = 0;
		uint32_t child;
		size_t j;

		if (i < ncells) {
			size_t off = be16(buf + hdr + 12 + 2 * (size_t)i);
			uint64_t psz;
			unsigned l;

			if (off < hdr + 12 || off + 4 >= u)
				return -1;
			child = be32(buf + off);
			l = varint(buf + off + 4, u - off - 4, &psz);
			if (!l)
				return -1;
			{
				size_t at = off + 4 + l, loc = local_bytes(psz, u);

				if (at > u)
					return -1;
				if (loc > u - at)
					loc = u - at;
				have_hi = !record_key(buf + at, loc, ncols, &hi);
			}
		} else {
			child = be32(buf + hdr + 8);
		}
		if (!child || child > s->npages)
			return -1;
		j = have_lo ? lower_bound(keys, n, &lo, ncols) : 0;
		if (j < n && (!have_hi || key_cmp(&keys[j], &hi, ncols) <= 0))
			u32v_push(next, child);
		lo = hi;
		have_lo = have_hi;
	}
	return 0;
}

long bt_plan(const struct bt_src *s, uint32_t root, const struct bt_key *keys, size_t n,
	     int ncols)
{
	struct u32v cur = { 0 }, next = { 0 };
	uint8_t *buf;
	size_t interior = 0, cells = 0;
	long rc = -1;

	if (ncols < 1 || ncols > 2 || !s->read || s->psize < 512 || s->psize > 65536 ||
	    s->usable < 480 || s->usable > s->psize || !root || root > s->npages)
		return -1;
	if (!n)
		return 0;
	buf = xmalloc(s->psize);
	/* Page numbers run 1 .. npages: a bit each (a quarter of a per cent
	 * of the file's size at 512-byte pages). */
	cur.seen = xcalloc((size_t)s->npages / 8 + 1, 1);
	next.seen = xcalloc((size_t)s->npages / 8 + 1, 1);
	u32v_push(&cur, root);
	for (int depth = 0; depth < BT_MAX_DEPTH; depth++) {
		u32v_clear(&next);
		/* (Each level below the root was advised when it was found.) */
		for (size_t i = 0; i < cur.n; i++) {
			size_t hdr = cur.v[i] == 1 ? 100 : 0;

			if (s->read(s->ctx, cur.v[i], buf))
				goto out;
			if (buf[hdr] == PT_LEAF_INDEX && !depth) {
				rc = 1;		/* the root is the only leaf */
				goto out;
			}
			if (buf[hdr] != PT_INTERIOR_INDEX || ++interior > BT_MAX_INTERIOR ||
			    pick_children(s, buf, hdr, keys, n, ncols, &next, &cells))
				goto out;
		}
		u32v_sort(&next);
		if (!next.n) {
			rc = 0;
			goto out;
		}
		/* The level's reads in flight together; then one page of it
		 * tells what the whole level is. */
		advise_all(s, &next);
		if (s->read(s->ctx, next.v[0], buf))
			goto out;
		if (buf[next.v[0] == 1 ? 100 : 0] == PT_LEAF_INDEX) {
			rc = (long)next.n;
			goto out;
		}
		{
			struct u32v t = cur;

			cur = next;
			next = t;
		}
	}
out:
	free(buf);
	free(cur.v);
	free(next.v);
	free(cur.seen);
	free(next.seen);
	return rc;
}

int bt_header(const uint8_t *hdr, size_t len, uint32_t *psize, uint32_t *usable)
{
	uint32_t ps;

	if (len < 100 || memcmp(hdr, "SQLite format 3", 16))
		return -1;
	ps = be16(hdr + 16);
	if (ps == 1)
		ps = 65536;
	if (ps < 512 || ps > 65536 || (ps & (ps - 1)) || ps - hdr[20] < 480)
		return -1;
	*psize = ps;
	*usable = ps - hdr[20];
	return 0;
}
