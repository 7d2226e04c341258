/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The name index (names.c: built from the walk, refreshed from the changed
 * directories, looked up by inode; nameindex.c: its SQLite file, trust
 * rules and queries).
 */
#ifndef CHJ_RESOLVE_NAMES_H
#define CHJ_RESOLVE_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "resolve.h"

/* One directory entry: its directory, name (at offset name of the list's
 * arena, not NUL-terminated), inode, DT_* type. */
struct nent {
	uint64_t dir, ino;
	uint32_t name;
	uint16_t len;
	uint8_t dtype;
};

struct nlist {
	struct nent *v;
	size_t n, cap;
	char *a;
	size_t alen, acap;
};

#define NL_NAME(l, e) ((l)->a + (e)->name)
void nl_add(struct nlist *l, uint64_t dir, const char *name, size_t len, uint64_t ino,
	    uint8_t dtype);
void nl_free(struct nlist *l);
/* Sort by name (bytewise, then length: the index's order). */
void nl_sort(struct nlist *l);

/* An open name index (nameindex.c).  Every call below runs inside the
 * run's one transaction; any SQLite error or row this code would not have
 * written sets failed, and the caller walks instead. */
struct nidx {
	void *db;			/* sqlite3 * */
	char path[4200];
	char ident[200];		/* the identity it must hold */
	void *q[8];			/* prepared statements */
	int usable;			/* holds a tree of this filesystem */
	int failed;
	uint64_t epoch, root, entries;
	/* statistics of the run */
	uint64_t looked, inserted, deleted;
	char why[120];
	int rafd;			/* an fd of the file + 1 (0: none), for prefetch_file */
};

int cache_off(void);
/* The directory of the name index and the state store, and an fd of it
 * when it is safe (root's, writable by nobody else); -1 otherwise
 * (warned). */
const char *cache_dir(void);
int cache_dir_open(struct resolver *r, int create);

/* Open (or create) the index of this device inside a write transaction:
 * 0, x->usable when it holds a tree of this filesystem; -1 when it is not
 * to be used or touched (unsafe: warned). */
int nidx_open(struct resolver *r, struct nidx *x);
/* Commit (with epoch, root, entry count) or roll back; closes. */
int nidx_close(struct nidx *x, int commit);
/* About to search it for the inodes v[0..n) (by_dir 0: their names,
 * nidx_by_ino) or for the entries of the directories v[0..n) (by_dir 1):
 * the leaves those searches read, read ahead (prefetch_sqlite); failing
 * that, the file whole when that is cheaper than the searches' own
 * reads. */
void nidx_prefetch(struct nidx *x, int by_dir, const uint64_t *v, size_t n);
/* Empty it for a rebuild (a walk), dropping its tables (or the file's
 * content) when SQLite cannot delete the rows; -1 on error. */
int nidx_clear(struct nidx *x);
/* The rebuild's last step: the by-inode index (built sorted, at once). */
int nidx_finish_build(struct nidx *x);

/* The entries naming ino (only directory entries: dirs_only), at most max,
 * appended to l.  -1 (failed) on error. */
int nidx_by_ino(struct nidx *x, uint64_t ino, int dirs_only, size_t max, struct nlist *l);
/* The entries of directory dir, appended to l. */
int nidx_list(struct nidx *x, uint64_t dir, struct nlist *l);
/* Whether directory dir has any entry recorded: 1, 0, or -1. */
int nidx_has_entries(struct nidx *x, uint64_t dir);
/* Add or replace one entry (entries counts one more: replace with
 * nidx_del first); delete one (entries counts those deleted). */
int nidx_put(struct nidx *x, uint64_t dir, const char *name, size_t len, uint64_t ino,
	     uint8_t dtype);
int nidx_del(struct nidx *x, uint64_t dir, const char *name, size_t len);
/* Delete every entry of dir; the subdirectories among them in *sub. */
int nidx_del_dir(struct nidx *x, uint64_t dir, uint64_t **sub, size_t *nsub, size_t *subcap);
/* For the fuzz harness: open the file at path as an index of an all-zero
 * identity, look up inodes 1-64 (the entries found appended to l, their
 * count returned), update it as a run would, then rebuild it. */
long nidx_fuzz_file(const char *path, struct nlist *l);

#endif
