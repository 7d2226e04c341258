/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * htab: find an entry of the caller's array by its key's hash (htab.c).
 *
 * Open addressing with linear probing, at most half full.  A slot holds an
 * entry's index in the caller's array and 32 bits of its hash; the table
 * never sees keys: a lookup yields the indices whose hash matches, and the
 * caller compares the keys:
 *
 *	size_t c;
 *	for (size_t i = ht_first(&h, hash, &c); i != HT_NONE; i = ht_next(&h, hash, &c))
 *		if (v[i].key == key)
 *			return &v[i];
 *
 * Entries are only added (ht_add, once per index), never removed; the
 * array may move (realloc), the indices stay.  A zeroed struct htab is
 * empty.  One hash for integer keys and one for strings are here too, so
 * every user mixes its keys the same way.
 *
 * u64set, a set of 64-bit keys (visited blocks, inodes seen, a memo's
 * keys), is the one set built on it: its keys in an array, indexed by
 * their hash.  It is the only hash set in chj-resolve.
 */
#ifndef CHJ_RESOLVE_HTAB_H
#define CHJ_RESOLVE_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab_slot {
	uint32_t hash;		/* the hash's low 32 bits */
	uint32_t idx1;		/* index + 1; 0 = empty */
};

struct htab {
	struct htab_slot *s;
	size_t cap, n;		/* cap: 0 or a power of two */
};

#define HT_NONE SIZE_MAX

/* Index entry idx under hash (an index already added must not be added
 * again).  Exits (chj-resolve: ...) past 2^31 entries. */
void ht_add(struct htab *h, uint64_t hash, size_t idx);
/* The first index added under hash, or HT_NONE; *cur is the cursor. */
size_t ht_first(const struct htab *h, uint64_t hash, size_t *cur);
/* The next one after *cur, or HT_NONE. */
size_t ht_next(const struct htab *h, uint64_t hash, size_t *cur);
/* Empty it and free its memory (a zeroed struct htab again). */
void ht_free(struct htab *h);

/* Hashes: of one or two 64-bit keys, of a NUL-terminated string. */
uint64_t ht_hash_u64(uint64_t a);
uint64_t ht_hash_pair(uint64_t a, uint64_t b);
uint64_t ht_hash_str(const char *s);

/*
 * A set of 64-bit keys, any value.  A key's index (the order it was added
 * in, 0 up) stays while the set lives: callers keep values beside it in
 * their own array (names.c's memo).  A zeroed struct u64set is empty.
 */
struct u64set {
	uint64_t *key;		/* key[0..n): the keys, in the order added */
	size_t n, cap;
	struct htab idx;	/* key's index by ht_hash_u64 */
};
/* Add key: 1 when it was new, 0 when already there. */
int u64set_add(struct u64set *s, uint64_t key);
int u64set_has(const struct u64set *s, uint64_t key);
/* The index of key in s->key, or HT_NONE. */
size_t u64set_index(const struct u64set *s, uint64_t key);
/* Empty it, its memory kept for the next keys. */
void u64set_clear(struct u64set *s);
/* Empty it and free its memory (a zeroed struct u64set again). */
void u64set_free(struct u64set *s);

#endif
