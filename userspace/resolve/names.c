// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Names: every path of every listed inode.
 *
 * Without a cache, a walk of the mounted tree (walk.c) reads every
 * directory.  The walk's result is kept as a name cache: every directory's
 * entries (name, inode, type), tagged with the epoch C that was current
 * when the run began, the chj metadata's uuid and the filesystem's.  A later
 * run asked about changes since E <= C re-reads only the directories among
 * its results: a directory's entry list changes only through its blocks or
 * its inode (inline entries), and every change since C is a change since E,
 * so every directory whose entries changed since the cache was read is
 * among the results.  New directories are found in their parent's fresh
 * entries and read whole.  A directory is opened by its path from the
 * cache and must be the right inode; what cannot be re-read that way sends
 * the run back to the full walk.  The paths printed are checked with one
 * stat each.  A cache from before E (epoch C < E) would miss directory
 * changes between C and E: then the walk runs and the cache is rewritten.
 *
 * The cache file (namecache.c) lives in $CHJ_RESOLVE_CACHE_DIR (default
 * /var/cache/chj-resolve), one file per chj metadata device, mode 0600;
 * CHJ_RESOLVE_CACHE=off disables it.  It is an optimisation only: a
 * missing, damaged or unwritable cache means a walk.
 *
 * Cost: a run with the cache reads the file whole (its names stay in the
 * buffer read), looks up only the listed inodes' entries, and rewrites the
 * file only when an entry changed; otherwise only its header (the epoch)
 * is rewritten in place, and the header carries its own CRC, so a torn
 * header means a walk, never a wrong epoch.  Each listed path costs a stat
 * (a lookup and, mostly, an inode read from disk), a walked entry only its
 * share of a getdents: on a tree of at least WALK_MIN entries, when more
 * than one entry in WALK_RATIO is listed, the walk is cheaper and runs
 * instead (measured under TCG with cold caches: a stat costs 10-20 walked
 * entries).  Both give the same answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
#include "resolve.h"

#define WALK_MIN	65536u
#define WALK_RATIO	16u

/* ---- the in-memory cache ---- */

struct ndir *nc_find(const struct names *nc, uint64_t ino)
{
	uint64_t h = ht_hash_u64(ino);
	size_t c;

	for (size_t i = ht_first(&nc->idx, h, &c); i != HT_NONE; i = ht_next(&nc->idx, h, &c))
		if (nc->d[i].ino == ino)
			return &nc->d[i];
	return NULL;
}

struct ndir *nc_get(struct names *nc, uint64_t ino)
{
	struct ndir *d = nc_find(nc, ino);

	if (d)
		return d;
	xgrow((void **)&nc->d, &nc->cap, nc->n + 1, sizeof(*nc->d));
	ht_add(&nc->idx, ht_hash_u64(ino), nc->n);
	d = &nc->d[nc->n++];
	memset(d, 0, sizeof(*d));
	d->ino = ino;
	return d;
}

static uint32_t nc_name(struct names *nc, const char *s, size_t len)
{
	uint32_t off;

	if (nc->alen + len > UINT32_MAX) {
		fputs("chj-resolve: name cache too large\n", stderr);
		exit(RX_ERROR);
	}
	xgrow((void **)&nc->arena, &nc->acap, nc->alen + len, 1);
	memcpy(nc->arena + nc->alen, s, len);
	off = (uint32_t)nc->alen;
	nc->alen += len;
	return off;
}

void nc_add(struct names *nc, struct ndir *d, size_t *cap, uint64_t ino, const char *name,
		   size_t len, uint8_t dtype)
{
	xgrow((void **)&d->e, cap, d->n + 1, sizeof(*d->e));
	d->e[d->n].ino = ino;
	d->e[d->n].name = nc_name(nc, name, len);
	d->e[d->n].len = (uint16_t)len;
	d->e[d->n].dtype = dtype;
	d->n++;
}

void nc_free(struct names *nc)
{
	if (!nc)
		return;
	for (size_t i = 0; i < nc->n; i++)
		free(nc->d[i].e);
	free(nc->d);
	ht_free(&nc->idx);
	free(nc->arena);
	free(nc);
}

/* ---- building from the walk ---- */

struct collect {
	struct names *nc;
	uint64_t dir;
	struct ndir *cur;
	size_t cap;
	int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx);
	void *ctx;
};

static int collect_visit(struct resolver *r, const struct walk_entry *e, void *ctx)
{
	struct collect *c = ctx;
	static const unsigned char dt[] = {
		DT_UNKNOWN, DT_REG, DT_DIR, DT_LNK, DT_CHR, DT_BLK, DT_FIFO, DT_SOCK,
	};

	if (!*e->rel) {
		c->nc->root = e->ino;
	} else {
		if (!c->cur || c->cur->ino != e->dir_ino) {
			c->cur = nc_get(c->nc, e->dir_ino);
			c->cap = c->cur->n;
		}
		nc_add(c->nc, c->cur, &c->cap, e->ino, e->name, strlen(e->name), dt[e->type]);
	}
	if (e->type == FT_DIR) {
		nc_get(c->nc, e->ino);
		c->cur = NULL;	/* the array may have moved */
	}
	return c->visit ? c->visit(r, e, c->ctx) : 0;
}

/* ---- re-reading changed directories ---- */

/* Parents of directories: dir inode -> (parent dir, entry index). */
struct dpar {
	struct dpe {
		uint64_t ino, dir;	/* dir 0: removed */
		uint32_t idx;
	} *v;
	size_t n, cap;
	struct htab h;
};

static struct dpe *dpar_find(const struct dpar *p, uint64_t ino)
{
	uint64_t h = ht_hash_u64(ino);
	size_t c;

	for (size_t i = ht_first(&p->h, h, &c); i != HT_NONE; i = ht_next(&p->h, h, &c))
		if (p->v[i].ino == ino)
			return &p->v[i];
	return NULL;
}

static void dpar_set(struct dpar *p, uint64_t ino, uint64_t dir, uint32_t idx)
{
	struct dpe *e = dpar_find(p, ino);

	if (!e) {
		xgrow((void **)&p->v, &p->cap, p->n + 1, sizeof(*p->v));
		ht_add(&p->h, ht_hash_u64(ino), p->n);
		e = &p->v[p->n++];
		e->ino = ino;
	}
	e->dir = dir;
	e->idx = idx;
}

static int dpar_get(const struct dpar *p, uint64_t ino, uint64_t *dir, uint32_t *idx)
{
	const struct dpe *e = dpar_find(p, ino);

	if (!e || !e->dir)
		return 0;	/* unknown, or removed */
	*dir = e->dir;
	*idx = e->idx;
	return 1;
}

static void dpar_build(struct dpar *p, const struct names *nc)
{
	for (size_t i = 0; i < nc->n; i++)
		for (uint32_t k = 0; k < nc->d[i].n; k++)
			if (nc->d[i].e[k].dtype == DT_DIR)
				dpar_set(p, nc->d[i].e[k].ino, nc->d[i].ino, k);
}

static void dpar_free(struct dpar *p)
{
	free(p->v);
	ht_free(&p->h);
}

/* Path of directory ino relative to the mount ("" for the root); NULL if
 * no chain of entries leads there from the root. */
static char *dir_rel(const struct names *nc, const struct dpar *p, uint64_t ino)
{
	const struct nent **parts = NULL;
	size_t n = 0, cap = 0, total = 0;
	char *out, *o;

	/* Any depth; a chain longer than the directories known is a loop. */
	while (ino != nc->root) {
		uint64_t dir;
		uint32_t idx;
		const struct ndir *d;

		if (n > nc->n || !dpar_get(p, ino, &dir, &idx) || !(d = nc_find(nc, dir)) ||
		    idx >= d->n || d->e[idx].ino != ino) {
			free(parts);
			return NULL;
		}
		xgrow((void **)&parts, &cap, n + 1, sizeof(*parts));
		parts[n++] = &d->e[idx];
		total += d->e[idx].len + 1;
		ino = dir;
	}
	out = o = xmalloc(total + 1);
	while (n--) {
		memcpy(o, nc->arena + parts[n]->name, parts[n]->len);
		o += parts[n]->len;
		if (n)
			*o++ = '/';
	}
	*o = 0;
	free(parts);
	return out;
}

/* Re-read directory d (opened as fd): replace its entries. */
static int reread(struct names *nc, struct dpar *p, struct ndir *d, int fd,
		  uint64_t **newdirs, size_t *nnew, size_t *newcap)
{
	DIR *dp = fdopendir(fd);
	struct dirent *de;
	size_t cap = 0;
	struct nent *old;
	uint32_t oldn;
	int err;

	if (!dp) {
		close(fd);
		return -1;
	}
	/* Its old subdirectories lose this parent (unless listed again). */
	for (uint32_t k = 0; k < d->n; k++)
		if (d->e[k].dtype == DT_DIR) {
			uint64_t pd;
			uint32_t idx;

			if (dpar_get(p, d->e[k].ino, &pd, &idx) && pd == d->ino)
				dpar_set(p, d->e[k].ino, 0, 0);
		}
	old = d->e;
	oldn = d->n;
	d->e = NULL;
	d->n = 0;
	while ((errno = 0, de = readdir(dp))) {
		size_t len = strlen(de->d_name);
		unsigned char t = de->d_type;

		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (t == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
				continue;
			t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
			    S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
		}
		nc_add(nc, d, &cap, de->d_ino, de->d_name, len, t);
		if (t == DT_DIR) {
			dpar_set(p, de->d_ino, d->ino, d->n - 1);
			/* A directory the cache never saw: read it too. */
			if (!nc_find(nc, de->d_ino)) {
				xgrow((void **)newdirs, newcap, *nnew + 1, sizeof(**newdirs));
				(*newdirs)[(*nnew)++] = de->d_ino;
			}
		}
	}
	err = errno;
	d->fresh = 1;
	/* The same entries in the same order: the file need not be rewritten. */
	if (d->n != oldn || !d->stored)
		nc->dirty = 1;
	for (uint32_t k = 0; k < d->n && !nc->dirty; k++)
		if (d->e[k].ino != old[k].ino || d->e[k].dtype != old[k].dtype ||
		    d->e[k].len != old[k].len ||
		    memcmp(nc->arena + d->e[k].name, nc->arena + old[k].name, d->e[k].len))
			nc->dirty = 1;
	free(old);
	closedir(dp);
	return err ? -1 : 0;
}

/*
 * Re-read the directories among the results, and new ones.  0 when done;
 * 1 when some directory could not be reached by its cached path (the caller
 * walks instead).
 */
/*
 * Opening a directory by its path costs a lookup per component: a user's
 * 5000-level tree would make the refresh quadratic.  The lookups spent are
 * counted against a budget a walk's cost bounds (a few per cached entry);
 * past it the cache is given up and the tree walked (linear, by fds).
 */
static int spend(uint64_t *budget, const char *rel)
{
	uint64_t c = 1;

	for (const char *p = rel; *p; p++)
		c += *p == '/';
	if (c > *budget)
		return -1;
	*budget -= c;
	return 0;
}

static int refresh(struct resolver *r, struct names *nc, uint64_t *reread_n, uint64_t *budget)
{
	struct dpar p = { 0 };
	uint64_t *pend = NULL;
	size_t np = 0, pcap = 0;
	int progress = 1, rc = 0;
	struct stat mst;
	dev_t mdev;

	if (fstat(r->mnt_fd, &mst))
		return 1;
	mdev = mst.st_dev;
	dpar_build(&p, nc);
	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (!it || !it->reasons || it->root)
			continue;
		/* A directory by its inode, or by what the cache knows. */
		if (it->type == FT_DIR || nc_find(nc, it->ino)) {
			xgrow((void **)&pend, &pcap, np + 1, sizeof(*pend));
			pend[np++] = it->ino;
		}
	}
	while (np && progress) {
		size_t keep = 0;

		progress = 0;
		for (size_t i = 0; i < np; i++) {
			uint64_t ino = pend[i];
			struct ndir *d = nc_get(nc, ino);
			char *rel;
			int fd;
			struct stat st;

			if (d->fresh) {
				progress = 1;
				continue;
			}
			rel = dir_rel(nc, &p, ino);
			if (rel && spend(budget, rel)) {
				free(rel);
				rc = 1;
				break;
			}
			fd = rel ? rel_open(r->mnt_fd, rel, O_RDONLY | O_DIRECTORY) : -1;
			free(rel);
			if (fd < 0 || fstat(fd, &st) || st.st_ino != ino || st.st_dev != mdev) {
				if (fd >= 0)
					close(fd);
				pend[keep++] = ino;	/* its parent first */
				continue;
			}
			if (reread(nc, &p, d, fd, &pend, &np, &pcap)) {
				rc = 1;
				break;
			}
			(*reread_n)++;
			progress = 1;
		}
		if (rc)
			break;
		np = keep;
	}
	/*
	 * Left over: directories no chain of entries reaches any more
	 * (deleted, their parent re-read), which is fine; or ones whose path
	 * does not lead to them, which is not.
	 */
	for (size_t i = 0; i < np && !rc; i++) {
		char *rel = dir_rel(nc, &p, pend[i]);

		if (rel)
			rc = 1;
		free(rel);
	}
	free(pend);
	dpar_free(&p);
	return rc;
}

/* Every path of every listed inode, from the cache; checked with a stat. */
static int cache_paths(struct resolver *r, struct names *nc, uint64_t *dropped, uint64_t *budget)
{
	int rc = 0;
	struct dpar p = { 0 };
	struct item *rootit = res_find(&r->res, 0, nc->root);
	/* A filter of the listed inodes: most entries are not among them. */
	size_t fbits = 1 << 16;
	uint64_t *filter;

	while (fbits < r->res.n * 16 && fbits < ((size_t)1 << 30))
		fbits *= 2;
	filter = xcalloc(fbits / 64, sizeof(*filter));
	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (it && it->reasons && !it->root) {
			size_t b = ht_hash_u64(it->ino) & (fbits - 1);

			filter[b / 64] |= 1ull << (b % 64);
		}
	}
	dpar_build(&p, nc);
	if (rootit && rootit->reasons)
		item_add_path(rootit, "");
	for (size_t i = 0; i < nc->n; i++) {
		const struct ndir *d = &nc->d[i];
		char *base = NULL;
		int have_base = 0, dfd = -1;

		for (uint32_t k = 0; k < d->n && !rc; k++) {
			size_t b = ht_hash_u64(d->e[k].ino) & (fbits - 1);
			struct item *it;
			char *rel;
			size_t bl;
			struct stat st;

			if (!(filter[b / 64] & 1ull << (b % 64)))
				continue;
			it = res_find(&r->res, 0, d->e[k].ino);
			if (!it || !it->reasons)
				continue;
			if (!have_base) {
				/* The directory, opened once for its entries'
				 * checks (its path's lookups paid once). */
				base = dir_rel(nc, &p, d->ino);
				have_base = 1;
				if (base && spend(budget, base)) {
					rc = 1;
					break;
				}
				if (base)
					dfd = rel_open(r->mnt_fd, base, O_PATH | O_DIRECTORY);
			}
			if (!base)
				break;	/* an unreachable (stale) directory */
			bl = strlen(base);
			rel = xmalloc(bl + d->e[k].len + 2);
			memcpy(rel, base, bl);
			if (bl)
				rel[bl++] = '/';
			memcpy(rel + bl, nc->arena + d->e[k].name, d->e[k].len);
			rel[bl + d->e[k].len] = 0;
			if (dfd < 0 ? !rel_lstat(r->mnt_fd, rel, &st) :
			    !fstatat(dfd, rel + bl, &st, AT_SYMLINK_NOFOLLOW)) {
				if (st.st_ino == it->ino) {
					item_add_path(it, rel);
					if (it->type == FT_UNKNOWN)
						it->type = ftype_from_mode(st.st_mode);
				} else {
					(*dropped)++;
				}
			} else if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
				(*dropped)++;	/* gone, or a symlink now */
			} else {
				/* Cannot be checked: listed, conservatively. */
				item_add_path(it, rel);
			}
			free(rel);
		}
		if (dfd >= 0)
			close(dfd);
		free(base);
		if (rc)
			break;
	}
	free(filter);
	dpar_free(&p);
	return rc;
}

int resolve_names(struct resolver *r,
		  int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx),
		  void *ctx)
{
	struct names *nc = NULL;
	struct collect c = { 0 };
	uint64_t reread_n = 0, dropped = 0;
	int use = !cache_off() && !visit && !strcmp(r->mnt_root ? r->mnt_root : "/", "/");
	int rc;

	if (use)
		nc = cache_load(r);
	if (nc && (nc->epoch < r->since || nc->epoch > r->current_epoch)) {
		snprintf(r->st.cache, sizeof(r->st.cache), "from epoch %llu: not usable since %llu, rebuilt",
			 (unsigned long long)nc->epoch, (unsigned long long)r->since);
		nc_free(nc);
		nc = NULL;
	}
	if (nc) {
		size_t entries = 0, listed = 0;

		for (size_t i = 0; i < nc->n; i++)
			entries += nc->d[i].n;
		for (size_t i = 0; i < r->res.cap; i++)
			listed += r->res.tab[i] && r->res.tab[i]->reasons && !r->res.tab[i]->root;
		if (entries >= WALK_MIN && listed > entries / WALK_RATIO) {
			snprintf(r->st.cache, sizeof(r->st.cache),
				 "not used: %zu inodes to name of %zu entries, a walk is cheaper: walked",
				 listed, entries);
			nc_free(nc);
			nc = NULL;
		}
	}
	if (nc) {
		struct stat st;
		uint64_t budget = WALK_MIN;

		/* Lookups by path: not more than a walk would cost. */
		for (size_t i = 0; i < nc->n; i++)
			budget += 4 * (uint64_t)nc->d[i].n;
		if (!fstat(r->mnt_fd, &st) && st.st_ino == nc->root &&
		    !refresh(r, nc, &reread_n, &budget) && !cache_paths(r, nc, &dropped, &budget)) {
			r->st.dirs_walked = reread_n;
			snprintf(r->st.cache, sizeof(r->st.cache),
				 "used (from epoch %llu): %llu directories re-read, %llu stale paths dropped",
				 (unsigned long long)nc->epoch, (unsigned long long)reread_n,
				 (unsigned long long)dropped);
			nc->epoch = r->current_epoch;
			cache_save(r, nc);
			nc_free(nc);
			return RX_OK;
		}
		snprintf(r->st.cache, sizeof(r->st.cache),
			 "not usable (a directory moved out of reach, or paths too deep to look up): walked");
		nc_free(nc);
		/* Paths may have been added: start over. */
		for (size_t i = 0; i < r->res.cap; i++) {
			struct item *it = r->res.tab[i];

			if (it)
				item_clear_paths(it);
		}
	}
	if (!use)
		return walk_tree(r, visit, ctx);
	c.nc = xcalloc(1, sizeof(*c.nc));
	c.visit = visit;
	c.ctx = ctx;
	rc = walk_tree(r, collect_visit, &c);
	if (!rc) {
		c.nc->epoch = r->current_epoch;
		cache_save(r, c.nc);
	}
	nc_free(c.nc);
	return rc;
}
