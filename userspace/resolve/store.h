/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The resolver state store (store.c, docs/resolve.md "The state store"):
 * per filesystem, a keyed hash of each inode's raw on-disk record as of the
 * start of recent epochs (snapshots), in an SQLite file next to the name
 * cache.  A candidate whose record hashes to its state at the start of the
 * epoch asked about, and whose other blocks did not change, is not listed.
 */
#ifndef CHJ_RESOLVE_STORE_H
#define CHJ_RESOLVE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "resolve.h"

#define ST_HASH		16	/* bytes of a record's keyed hash */
#define ST_KEEP		4	/* snapshots kept */

/* What a run does to the store after answering. */
enum st_update {
	ST_UPD_NONE,		/* off, or the current epoch's snapshot exists */
	ST_UPD_INCR,		/* re-read what changed since the epoch asked about */
	ST_UPD_FULL,		/* re-read every in-use record */
};

/* A staged new state: the record read (O_DIRECT) at [off, off + len). */
enum { ST_KNOWN, ST_FREE, ST_UNKNOWN };
struct st_ent {
	uint64_t root, ino, off;
	uint32_t len;
	int kind;
	uint8_t h[ST_HASH];
};

struct store {
	struct resolver *r;
	void *db;			/* sqlite3 *, NULL when off */
	char path[4200];
	uint8_t key[16];		/* SipHash key, random per store */
	int can_compare;		/* a snapshot of the epoch asked about */
	int failed;			/* a lookup failed: compare nothing */
	int reading;			/* the lookups' read transaction is open */
	enum st_update update;
	int keep;			/* ST_UPD_FULL keeping the older snapshots */
	uint64_t latest;		/* newest snapshot, 0 if none */
	void *q_get;			/* prepared statements */
	struct st_ent *v;
	size_t n, cap;
	unsigned char *scratch;
	size_t scap;
	/* statistics */
	uint64_t looked, same, unknown;
	uint64_t staged, marked, written;
	int rafd;			/* an fd of the file + 1 (0: none), for prefetch_file */
	char why[200];
	char err[200];			/* why a rebuild failed */
	char saved_err[1024];		/* the run's error state, kept across */
	int saved_code;			/* the store's own failures */
};

/* SipHash-2-4 with 128-bit output (Aumasson and Bernstein). */
void siphash128(const uint8_t key[16], const void *in, size_t len, uint8_t out[16]);

/*
 * Open (or create) the store of this chj device for a filesystem whose
 * identity (type, uuid, geometry) is ident.  Never fails: a store that
 * cannot be used is a warning (damaged, foreign, unsafe) or a note (none
 * yet), and the run is conservative.  s->db is NULL when the store is off.
 */
void store_open(struct resolver *r, struct store *s, const char *ident);
/* The record's keyed hash, bound to (root, ino). */
void store_hash(struct store *s, uint64_t root, uint64_t ino, const void *rec, size_t len,
		uint8_t out[ST_HASH]);
/*
 * 1 when the record of (root, ino) at the start of epoch r->since is
 * known and hashed to h; 0 otherwise (changed, unknown, absent, error).
 */
int store_same(struct store *s, uint64_t root, uint64_t ino, const uint8_t h[ST_HASH]);
/*
 * 1 when a value is known for (root, ino) at the start of epoch r->since,
 * copied to out; 0 otherwise (unknown: its region was marked, absent,
 * error).  btrfs keeps one such value, not a hash (btrfs.c, epoch_gen).
 */
int store_get(struct store *s, uint64_t root, uint64_t ino, uint8_t out[ST_HASH]);
/* About to call store_same for (root, ino[0..n)): the leaves those
 * searches read, read ahead (prefetch_sqlite); failing that, the file
 * whole when that is cheaper than the searches' own reads. */
void store_prefetch(struct store *s, uint64_t root, const uint64_t *ino, size_t n);
/*
 * The keys (the ino column) of root's rows that are open (valid for the
 * newest snapshot on): what an update must close when they are gone
 * (XFS: a directory's entries).  0, or -1 on an SQLite error (*keys NULL).
 */
int store_open_keys(struct store *s, uint64_t root, uint64_t **keys, size_t *n);
/* Stage a record read with O_DIRECT (kind ST_KNOWN with h, or ST_FREE). */
void store_stage(struct store *s, uint64_t root, uint64_t ino, uint64_t off, uint32_t len,
		 int kind, const uint8_t *h);
/*
 * The epoch-start rule: check the staged records' regions against the
 * marks of the current epoch (read now, after the records); marked ones
 * become unknown.  Then write the snapshot of the current epoch.
 */
void store_commit(struct store *s);
void store_close(struct store *s);
/* One line for --stats. */
void store_describe(const struct store *s, char *buf, size_t len);

/* For the fuzz harness: open the file at path as a store and look up. */
int store_fuzz_file(const char *path);

#endif
