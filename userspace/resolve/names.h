/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The name cache (names.c: built from the walk, refreshed from the changed
 * directories; namecache.c: its file, format and safety checks).
 */
#ifndef CHJ_RESOLVE_NAMES_H
#define CHJ_RESOLVE_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "resolve.h"

struct nent {
	uint64_t ino;
	uint32_t name;		/* offset in the arena */
	uint16_t len;
	uint8_t dtype;
};

struct ndir {
	uint64_t ino;
	struct nent *e;
	uint32_t n;
	int fresh;		/* read in this run */
	int stored;		/* loaded from the cache file */
};

struct names {
	struct ndir *d;
	size_t n, cap;
	struct htab idx;	/* d's index by directory inode */
	char *arena;
	size_t alen, acap;
	uint64_t root;
	uint64_t epoch;
	/* Loaded from a file that still holds exactly these entries: only
	 * the header needs rewriting. */
	int loaded, dirty;
	dev_t fdev;
	ino_t fino;
	off_t fsize;
	uint64_t blen;
	uint32_t bcrc;
};

/* The in-memory cache (names.c). */
struct ndir *nc_find(const struct names *nc, uint64_t ino);
struct ndir *nc_get(struct names *nc, uint64_t ino);
void nc_add(struct names *nc, struct ndir *d, size_t *cap, uint64_t ino, const char *name,
	    size_t len, uint8_t dtype);
void nc_free(struct names *nc);

/* The cache file (namecache.c). */
int cache_off(void);
/* The directory of the cache and the state store, and an fd of it when it
 * is safe (root's, writable by nobody else); -1 otherwise (warned). */
const char *cache_dir(void);
int cache_dir_open(struct resolver *r, int create);
/* The cache of this device, if usable (else NULL; unsafe ones warned). */
struct names *cache_load(struct resolver *r);
/* Write it (only the header when the entries are those loaded). */
void cache_save(struct resolver *r, struct names *nc);

#endif
