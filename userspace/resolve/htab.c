// SPDX-License-Identifier: GPL-2.0 OR MIT
/* htab: find an entry of the caller's array by its key's hash (htab.h). */
#include <stdio.h>
#include <stdlib.h>

#include "htab.h"
#include "resolve.h"

uint64_t ht_hash_u64(uint64_t a)
{
	return hash64(a);
}

uint64_t ht_hash_pair(uint64_t a, uint64_t b)
{
	return hash64(a ^ hash64(b + 0x9e3779b97f4a7c15ull));
}

uint64_t ht_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return hash64(h);
}

static void slot_put(struct htab_slot *s, size_t cap, uint32_t hash, uint32_t idx1)
{
	size_t i = hash & (cap - 1);

	while (s[i].idx1)
		i = (i + 1) & (cap - 1);
	s[i].hash = hash;
	s[i].idx1 = idx1;
}

/* Slots keep 32 bits of the hash, enough to place them in 2^32 slots. */
#define HT_MAX_ENTRIES ((size_t)1 << 31)

void ht_add(struct htab *h, uint64_t hash, size_t idx)
{
	if (idx >= HT_MAX_ENTRIES - 1 || h->n >= HT_MAX_ENTRIES - 1) {
		fputs("chj-resolve: hash table: more than 2^31 entries\n", stderr);
		exit(RX_ERROR);
	}
	if ((h->n + 1) * 2 > h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 64;
		struct htab_slot *ns = xcalloc(ncap, sizeof(*ns));

		for (size_t i = 0; i < h->cap; i++)
			if (h->s[i].idx1)
				slot_put(ns, ncap, h->s[i].hash, h->s[i].idx1);
		free(h->s);
		h->s = ns;
		h->cap = ncap;
	}
	slot_put(h->s, h->cap, (uint32_t)hash, (uint32_t)idx + 1);
	h->n++;
}

static size_t probe_scan(const struct htab *h, uint32_t hash, size_t i, size_t *cur)
{
	for (; h->s[i].idx1; i = (i + 1) & (h->cap - 1))
		if (h->s[i].hash == hash) {
			*cur = i;
			return h->s[i].idx1 - 1;
		}
	*cur = i;
	return HT_NONE;
}

size_t ht_first(const struct htab *h, uint64_t hash, size_t *cur)
{
	if (!h->cap) {
		*cur = 0;
		return HT_NONE;
	}
	return probe_scan(h, (uint32_t)hash, (uint32_t)hash & (h->cap - 1), cur);
}

size_t ht_next(const struct htab *h, uint64_t hash, size_t *cur)
{
	if (!h->cap || !h->s[*cur].idx1)
		return HT_NONE;
	return probe_scan(h, (uint32_t)hash, (*cur + 1) & (h->cap - 1), cur);
}

void ht_free(struct htab *h)
{
	free(h->s);
	h->s = NULL;
	h->cap = h->n = 0;
}
