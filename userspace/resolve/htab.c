// SPDX-License-Identifier: GPL-2.0 OR MIT
/* htab: find an entry of the caller's array by its key's hash (htab.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "resolve.h"

/* splitmix64's finaliser: every bit of the key moves the low bits the
 * table indexes by. */
uint64_t ht_hash_u64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t ht_hash_pair(uint64_t a, uint64_t b)
{
	return ht_hash_u64(a ^ ht_hash_u64(b + 0x9e3779b97f4a7c15ull));
}

uint64_t ht_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return ht_hash_u64(h);
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

/* ---- u64set: a set of 64-bit keys on the table ---- */

size_t u64set_index(const struct u64set *s, uint64_t key)
{
	uint64_t h = ht_hash_u64(key);
	size_t c;

	for (size_t i = ht_first(&s->idx, h, &c); i != HT_NONE; i = ht_next(&s->idx, h, &c))
		if (s->key[i] == key)
			return i;
	return HT_NONE;
}

int u64set_has(const struct u64set *s, uint64_t key)
{
	return u64set_index(s, key) != HT_NONE;
}

int u64set_add(struct u64set *s, uint64_t key)
{
	if (u64set_index(s, key) != HT_NONE)
		return 0;
	xgrow((void **)&s->key, &s->cap, s->n + 1, sizeof(*s->key));
	s->key[s->n] = key;
	ht_add(&s->idx, ht_hash_u64(key), s->n);
	s->n++;
	return 1;
}

void u64set_clear(struct u64set *s)
{
	if (s->idx.cap)
		memset(s->idx.s, 0, s->idx.cap * sizeof(*s->idx.s));
	s->idx.n = 0;
	s->n = 0;
}

void u64set_free(struct u64set *s)
{
	ht_free(&s->idx);
	free(s->key);
	memset(s, 0, sizeof(*s));
}
