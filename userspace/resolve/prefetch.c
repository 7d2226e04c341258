// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Warming the kernel's caches for paths about to be checked one at a time.
 *
 * The steady state checks every listed path with a stat (names.c) and
 * opens the changed directories by path (xfs.c): with cold caches each is
 * a directory lookup and an inode read from the disk, and done one after
 * the other they wait on one read at a time (1000 listed files in 1000
 * directories: about 1 s of a 1.9 s run, docs/resolve.md).  Here a few
 * threads stat the same paths first, each through its own cursor (the
 * same rules: no symlink followed, nothing outside the mount), so that the
 * reads are in flight together; what they find is thrown away.  The
 * caller then does its checks exactly as before, serially, and finds the
 * inodes in the cache: only when the reads happen changes, never what is
 * read or what it means.  Every thread has ended when prefetch_lstat
 * returns, so its file descriptors are closed before the caller opens any.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btplan.h"
#include "resolve.h"

/* Enough reads in flight for a disk's queue; few enough to be cheap. */
#define PF_THREADS	16
/* Paths a thread takes at a time: neighbours in rel_cmp order share
 * directories, which its cursor then opens once. */
#define PF_CHUNK	8
/* Below this, threads cost more than they save. */
#define PF_MIN		16

struct pf {
	int mnt_fd;
	char *const *rel;
	size_t n;
	atomic_size_t next;
};

static void *pf_worker(void *arg)
{
	struct pf *p = arg;
	struct dircur cur;
	struct stat st;
	size_t i;

	dircur_init(&cur, p->mnt_fd);
	while ((i = atomic_fetch_add(&p->next, PF_CHUNK)) < p->n)
		for (size_t k = i; k < i + PF_CHUNK && k < p->n; k++)
			(void)dircur_lstat(&cur, p->rel[k], &st);	/* errors: the caller's to see */
	dircur_free(&cur);
	return NULL;
}

unsigned prefetch_lstat(int mnt_fd, char *const *rel, size_t n)
{
	struct pf p = { .mnt_fd = mnt_fd, .rel = rel, .n = n };
	pthread_t t[PF_THREADS];
	unsigned nt = 0, want = PF_THREADS;

	if (n < PF_MIN)
		return 0;
	if (want > n / PF_CHUNK)
		want = (unsigned)(n / PF_CHUNK);
	atomic_init(&p.next, 0);
	/* A thread that cannot be made is one fewer; none is no prefetch. */
	while (nt < want && !pthread_create(&t[nt], NULL, pf_worker, &p))
		nt++;
	for (unsigned k = 0; k < nt; k++)
		pthread_join(t[k], NULL);
	return nt;
}

/*
 * A SQLite file about to get `lookups` searches, each a walk down its
 * B-tree whose leaves are mostly not cached: one read of 4 KiB after
 * another.  Reading the whole file ahead is one sequential stream that the
 * kernel issues at once (POSIX_FADV_WILLNEED; it returns without waiting,
 * and SQLite's reads then wait only for pages still on their way): on the
 * host benchmark's disk 50 MB in 0.03 s, where 2640 searches of the name
 * index cost 0.5 s.  A sequential read costs about as much as 50-400
 * random ones of 4 KiB (SSD and disk alike), so the file is read whole
 * only when the searches would touch more than one page in PF_FILE_RATIO;
 * a run with a handful of changes reads no more than before.  When the
 * keys searched for are known, prefetch_btree reads ahead only the leaves
 * they lead to (btplan.c), and this is its fallback.
 */
#define PF_FILE_RATIO	32
/* The kernel reads no more than the device's readahead window per call
 * (read_ahead_kb; 128 KiB by default), so the file goes in steps of it. */
#define PF_FILE_STEP	(128 << 10)

int prefetch_file(int fd, uint64_t lookups)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    lookups * PF_FILE_RATIO < (uint64_t)st.st_size / 4096)
		return 0;
	return !prefetch_range(fd, 0, (uint64_t)st.st_size);
}

int prefetch_range(int fd, uint64_t off, uint64_t len)
{
	for (uint64_t o = off; o < off + len; o += PF_FILE_STEP) {
		uint64_t n = off + len - o < PF_FILE_STEP ? off + len - o : PF_FILE_STEP;

		if (posix_fadvise(fd, (off_t)o, (off_t)n, POSIX_FADV_WILLNEED))
			return -1;
	}
	return 0;
}

/* A SQLite file read through its own fd, for bt_plan. */
struct fd_src {
	int fd;
	uint32_t psize;
};

static int fd_read(void *ctx, uint32_t pgno, void *buf)
{
	const struct fd_src *f = ctx;
	off_t off = (off_t)(pgno - 1) * f->psize;

	return pread(f->fd, buf, f->psize, off) == (ssize_t)f->psize ? 0 : -1;
}

static void fd_advise(void *ctx, uint32_t pgno, uint32_t n)
{
	const struct fd_src *f = ctx;

	(void)prefetch_range(f->fd, (uint64_t)(pgno - 1) * f->psize, (uint64_t)n * f->psize);
}

/* Only the leaves of fd's B-tree rooted at page root that searches for
 * keys[0..n) will read, read ahead: how many leaf pages, or -1 when it
 * cannot tell. */
static long prefetch_btree(int fd, uint32_t root, const struct bt_key *keys, size_t n,
			   int ncols)
{
	uint8_t hdr[100];
	struct stat st;
	struct fd_src f = { .fd = fd };
	struct bt_src s = { .ctx = &f, .read = fd_read, .advise = fd_advise };

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    bt_header(hdr, sizeof(hdr), &s.psize, &s.usable) ||
	    (uint64_t)st.st_size / s.psize > UINT32_MAX)
		return -1;
	f.psize = s.psize;
	s.npages = (uint32_t)((uint64_t)st.st_size / s.psize);
	return bt_plan(&s, root, keys, n, ncols);
}

/* The root page of db's table or index tree: 0 when there is none. */
static uint32_t root_page(sqlite3 *db, const char *tree)
{
	sqlite3_stmt *q;
	sqlite3_int64 root = 0;

	if (sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_schema WHERE name = ?1", -1, &q,
			       NULL))
		return 0;
	sqlite3_bind_text(q, 1, tree, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW)
		root = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return root > 0 && root <= UINT32_MAX ? (uint32_t)root : 0;
}

void prefetch_sqlite(void *db, int fd, const char *tree, const int64_t *prefix,
		     const uint64_t *v, size_t n)
{
	uint32_t root;
	struct bt_key *k;
	long rc = -1;

	if (!db || fd < 0 || !n)
		return;
	root = root_page(db, tree);
	if (root) {
		k = xmalloc(n * sizeof(*k));
		for (size_t i = 0; i < n; i++) {
			k[i].k[0] = prefix ? *prefix : (int64_t)v[i];
			k[i].k[1] = prefix ? (int64_t)v[i] : 0;
		}
		qsort(k, n, sizeof(*k), bt_key_order);
		rc = prefetch_btree(fd, root, k, n, prefix ? 2 : 1);
		free(k);
	}
	if (rc < 0)
		prefetch_file(fd, n);
}
