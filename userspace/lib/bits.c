// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * A plain bitset over regions.  Answers are built as the union of journal
 * extents and the current bitmap in one of these: its size is bounded by the
 * bitmap the kernel already keeps in memory, and it needs no sorting or
 * merging however fragmented the extents are.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int chj_bits_init(struct chj_bits *b, uint64_t nbits, struct chj_error *e)
{
	uint64_t words = nbits / 64 + 1;

	b->nbits = nbits;
	b->w = words <= SIZE_MAX / 8 ? calloc(words, 8) : NULL;
	if (!b->w)
		return chj_err(e, CHJ_ERR_NOMEM,
			       "region map: out of memory for %llu regions",
			       (unsigned long long)nbits);
	return CHJ_OK;
}

void chj_bits_free(struct chj_bits *b)
{
	free(b->w);
	b->w = NULL;
	b->nbits = 0;
}

void chj_bits_set_range(struct chj_bits *b, uint64_t start, uint64_t n)
{
	uint64_t end = start + n;

	while (start < end && (start & 63))
		b->w[start / 64] |= 1ull << (start & 63), start++;
	if (end - start >= 64) {
		memset(&b->w[start / 64], 0xff, (end - start) / 64 * 8);
		start += (end - start) & ~63ull;
	}
	while (start < end)
		b->w[start / 64] |= 1ull << (start & 63), start++;
}

int chj_bits_test(const struct chj_bits *b, uint64_t i)
{
	return i < b->nbits && (b->w[i / 64] >> (i & 63)) & 1;
}

/* Next set (want = 1) or clear (want = 0) bit at or after i, or nbits. */
static uint64_t find(const struct chj_bits *b, uint64_t i, int want)
{
	while (i < b->nbits) {
		uint64_t w = b->w[i / 64];

		if (!want)
			w = ~w;
		w &= ~0ull << (i & 63);
		if (w) {
			i = (i & ~63ull) + __builtin_ctzll(w);
			return i < b->nbits ? i : b->nbits;
		}
		i = (i & ~63ull) + 64;
	}
	return b->nbits;
}

int chj_bits_next_run(const struct chj_bits *b, uint64_t *pos,
		      uint64_t *start, uint64_t *n)
{
	uint64_t s = find(b, *pos, 1), end;

	if (s >= b->nbits)
		return 0;
	end = find(b, s, 0);
	*start = s;
	*n = end - s;
	*pos = end;
	return 1;
}

uint64_t chj_bits_count(const struct chj_bits *b)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < b->nbits / 64 + 1; i++)
		c += __builtin_popcountll(b->w[i]);
	return c;
}

int chj_bits_any(const struct chj_bits *b, uint64_t first, uint64_t last)
{
	if (last >= b->nbits)
		last = b->nbits - 1;
	if (!b->nbits || first > last)
		return 0;
	for (uint64_t w = first / 64; w <= last / 64; w++) {
		uint64_t m = ~0ull;

		if (w == first / 64)
			m &= ~0ull << (first & 63);
		if (w == last / 64 && (last & 63) != 63)
			m &= (1ull << ((last & 63) + 1)) - 1;
		if (b->w[w] & m)
			return 1;
	}
	return 0;
}
