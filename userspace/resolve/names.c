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

/* ---- directory paths, looked up in the index and kept for the run ---- */

struct nctx {
	struct resolver *r;
	struct nidx *x;
	/* dir inode -> its path relative to the mount (NULL: none reaches it) */
	struct u64set mkey;
	char **mval;		/* mval[i]: mkey.key[i]'s path */
	size_t mvcap;
	struct u64set fresh;	/* directories re-read in this run */
	struct dircur cur;	/* directories opened by path, and its cost */
	uint64_t charged;	/* cur.opens already spent from the budget */
};

static void memo_clear(struct nctx *c)
{
	for (size_t i = 0; i < c->mkey.n; i++)
		free(c->mval[i]);
	free(c->mval);
	c->mval = NULL;
	c->mvcap = 0;
	u64set_free(&c->mkey);
}

/* The memo's entry for ino: 1 and *path when known. */
static int memo_get(const struct nctx *c, uint64_t ino, const char **path)
{
	size_t i = u64set_index(&c->mkey, ino);

	if (i == HT_NONE)
		return 0;
	*path = c->mval[i];
	return 1;
}

/* Keep path (taken: freed with the memo) for ino; inode 0 is never a key. */
static void memo_put(struct nctx *c, uint64_t ino, char *path)
{
	size_t i;

	if (!ino) {
		free(path);
		return;
	}
	i = u64set_index(&c->mkey, ino);
	if (i == HT_NONE) {
		u64set_add(&c->mkey, ino);
		i = c->mkey.n - 1;
		xgrow((void **)&c->mval, &c->mvcap, c->mkey.n, sizeof(*c->mval));
	} else {
		free(c->mval[i]);
	}
	c->mval[i] = path;
}

/*
 * The path of directory ino relative to the mount ("" for the root), from
 * the entries naming it, up to the root: one index search per level not
 * yet known in this run.  NULL when no chain of entries leads there (or on
 * an index error: x->failed).  A directory has one name; where the index
 * still holds two (its old parent not re-read yet), the one in a
 * directory re-read in this run is taken, else the first: the caller
 * checks that the path leads to ino.
 */
static const char *dir_rel(struct nctx *c, uint64_t ino)
{
	struct nlist parts = { 0 }, tmp = { 0 };
	struct u64set seen = { 0 };
	const char *base = NULL, *known;
	uint64_t cur = ino;
	size_t total, len;
	char *out;

	if (memo_get(c, ino, &known))
		return known;
	for (;;) {
		size_t pick = 0;

		if (cur == c->x->root) {
			base = "";
			break;
		}
		if (memo_get(c, cur, &known)) {
			base = known;
			break;
		}
		/* A chain that comes back is a loop: not a path. */
		if (!u64set_add(&seen, cur))
			break;
		tmp.n = tmp.alen = 0;
		if (nidx_by_ino(c->x, cur, 1, 8, &tmp) || !tmp.n)
			break;
		for (size_t i = 0; i < tmp.n; i++)
			if (u64set_has(&c->fresh, tmp.v[i].dir)) {
				pick = i;
				break;
			}
		nl_add(&parts, tmp.v[pick].dir, NL_NAME(&tmp, &tmp.v[pick]), tmp.v[pick].len, cur,
		       DT_DIR);
		cur = tmp.v[pick].dir;
	}
	u64set_free(&seen);
	nl_free(&tmp);
	if (!base) {
		if (!c->x->failed)
			memo_put(c, ino, NULL);
		nl_free(&parts);
		return NULL;
	}
	/* Every directory on the way gets its path: parts[k] names the k-th. */
	total = strlen(base);
	for (size_t k = 0; k < parts.n; k++)
		total += parts.v[k].len + 1;
	out = xmalloc(total + 1);
	len = strlen(base);
	memcpy(out, base, len + 1);
	if (!parts.n)
		memo_put(c, ino, xstrdup(out));
	for (size_t k = parts.n; k--;) {
		const struct nent *e = &parts.v[k];

		if (len)
			out[len++] = '/';
		memcpy(out + len, NL_NAME(&parts, e), e->len);
		len += e->len;
		out[len] = 0;
		memo_put(c, e->ino, xstrdup(out));
	}
	free(out);
	nl_free(&parts);
	return memo_get(c, ino, &known) ? known : NULL;
}

/*
 * The refresh and the naming cost index searches (a directory's path is
 * looked up a level at a time, again after a re-read that moved or added
 * directories) and openat calls (one per component not shared with the
 * path the cursor stood on).  A user's tree of new directories 5000 levels
 * deep makes the searches quadratic (12.5 million, 471 s in the VM): both
 * are counted against a budget a walk's cost bounds (a few per indexed
 * entry); past it the index is given up and the tree walked (linear, by
 * fds).
 */
static int spend(struct nctx *c, uint64_t *budget)
{
	uint64_t now = c->cur.opens + c->x->looked, n = now - c->charged;

	c->charged = now;
	if (n > *budget)
		return -1;
	*budget -= n;
	return 0;
}

struct relino {
	const char *rel;
	uint64_t ino;
};

static int relino_cmp(const void *pa, const void *pb)
{
	const struct relino *a = pa, *b = pb;

	return rel_cmp(a->rel, b->rel);
}

/* Pending directories in the order of their paths (those without one
 * last): a cursor then opens each level once.  -1 past the budget. */
static int pend_sort(struct nctx *c, uint64_t *v, size_t n, uint64_t *budget)
{
	struct relino *ri;
	size_t k = 0;

	if (n < 2)
		return 0;
	ri = xmalloc(n * sizeof(*ri));
	for (size_t i = 0; i < n; i++) {
		const char *rel = dir_rel(c, v[i]);

		if (c->x->failed || spend(c, budget)) {
			free(ri);
			return -1;
		}
		ri[i].rel = rel ? rel : "";
		ri[i].ino = v[i];
		k = i + 1;
	}
	qsort(ri, k, sizeof(*ri), relino_cmp);
	for (size_t i = 0; i < k; i++)
		v[i] = ri[i].ino;
	free(ri);
	return 0;
}

/* ---- building from the walk ---- */

struct collect {
	struct nidx *x;
	int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx);
	void *ctx;
};

static const unsigned char ft_dt[] = {
	DT_UNKNOWN, DT_REG, DT_DIR, DT_LNK, DT_CHR, DT_BLK, DT_FIFO, DT_SOCK,
};

static int collect_visit(struct resolver *r, const struct walk_entry *e, void *ctx)
{
	struct collect *c = ctx;

	if (!*e->rel)
		c->x->root = e->ino;
	else if (!c->x->failed)
		nidx_put(c->x, e->dir_ino, e->name, strlen(e->name), e->ino, ft_dt[e->type]);
	return c->visit ? c->visit(r, e, c->ctx) : 0;
}

/* ---- re-reading changed directories ---- */

static int name_cmp(const struct nlist *a, const struct nent *x, const struct nlist *b,
		    const struct nent *y)
{
	int c = memcmp(NL_NAME(a, x), NL_NAME(b, y), x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Add ino to the list v (a directory to read, or one that lost a name). */
static void push(uint64_t **v, size_t *n, size_t *cap, uint64_t ino)
{
	xgrow((void **)v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = ino;
}

struct pending {
	uint64_t *pend, *gone;
	size_t np, pcap, ng, gcap;
};

/*
 * Re-read directory dir (opened as fd): its entries in the index become
 * those read, writing only the ones that differ.  A directory among the
 * new entries is read too (new, moved here, or a reused inode number); a
 * directory among the entries removed is collected afterwards if nothing
 * names it any more.
 */
static int reread(struct nctx *c, uint64_t dir, int fd, struct pending *p)
{
	struct nidx *x = c->x;
	struct nlist old = { 0 }, cur = { 0 };
	DIR *dp = fdopendir(fd);
	struct dirent *de;
	size_t i = 0, j = 0;
	int err, dirs = 0;

	if (!dp) {
		close(fd);
		return -1;
	}
	while ((errno = 0, de = readdir(dp))) {
		unsigned char t = de->d_type;

		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (t == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
				if (path_gone(errno))
					continue;
				break;	/* errno set: the index not updated */
			}
			t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
			    S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
		}
		nl_add(&cur, dir, de->d_name, strlen(de->d_name), de->d_ino, t);
	}
	err = errno;
	closedir(dp);
	if (err || nidx_list(x, dir, &old)) {
		nl_free(&cur);
		nl_free(&old);
		return -1;
	}
	nl_sort(&cur);
	nl_sort(&old);
	while (!x->failed && (i < old.n || j < cur.n)) {
		const struct nent *o = i < old.n ? &old.v[i] : NULL;
		const struct nent *n = j < cur.n ? &cur.v[j] : NULL;
		int d = !o ? 1 : !n ? -1 : name_cmp(&old, o, &cur, n);

		/* A name read twice (never, but cheap to be sure of). */
		if (n && j && !name_cmp(&cur, n, &cur, &cur.v[j - 1])) {
			j++;
			continue;
		}
		if (d < 0 || (!d && (o->ino != n->ino || o->dtype != n->dtype))) {
			/* Gone, or naming another inode now. */
			nidx_del(x, dir, NL_NAME(&old, o), o->len);
			if (o->dtype == DT_DIR) {
				push(&p->gone, &p->ng, &p->gcap, o->ino);
				dirs = 1;
			}
		}
		if (d > 0 || (!d && (o->ino != n->ino || o->dtype != n->dtype))) {
			nidx_put(x, dir, NL_NAME(&cur, n), n->len, n->ino, n->dtype);
			if (n->dtype == DT_DIR) {
				if (!u64set_has(&c->fresh, n->ino))
					push(&p->pend, &p->np, &p->pcap, n->ino);
				dirs = 1;
			}
		}
		i += d <= 0;
		j += d >= 0;
	}
	nl_free(&cur);
	nl_free(&old);
	/* Paths through the directories that moved are not known any more. */
	if (dirs)
		memo_clear(c);
	return x->failed ? -1 : 0;
}

/* A directory that lost its name: if nothing names it now, its entries
 * go, and so do those of its subdirectories that nothing else names. */
static int collect_gone(struct nctx *c, struct pending *p)
{
	struct nlist tmp = { 0 };

	while (p->ng && !c->x->failed) {
		uint64_t ino = p->gone[--p->ng];

		tmp.n = tmp.alen = 0;
		if (nidx_by_ino(c->x, ino, 1, 1, &tmp) || tmp.n)
			continue;
		nidx_del_dir(c->x, ino, &p->gone, &p->ng, &p->gcap);
	}
	nl_free(&tmp);
	return c->x->failed ? -1 : 0;
}

/* Whether the index knows ino as a directory (an entry of type DT_DIR
 * names it, or it has entries): 1, 0, -1. */
static int known_dir(struct nidx *x, uint64_t ino)
{
	struct nlist tmp = { 0 };
	int rc = nidx_by_ino(x, ino, 1, 1, &tmp);

	if (!rc)
		rc = tmp.n ? 1 : nidx_has_entries(x, ino);
	nl_free(&tmp);
	return rc;
}

/*
 * Re-read the directories among the results, and new ones.  0 when done;
 * 1 when some directory could not be reached by its indexed path, or on an
 * index error (the caller walks instead).
 */
static int refresh(struct nctx *c, uint64_t *reread_n, uint64_t *budget)
{
	struct resolver *r = c->r;
	struct pending p = { 0 };
	uint64_t *unk = NULL;
	size_t nu = 0, ucap = 0;
	int progress = 1, rc = 0;
	struct stat mst;
	dev_t mdev;

	if (fstat(r->mnt_fd, &mst))
		return 1;
	mdev = mst.st_dev;
	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (!it || !it->reasons || it->root)
			continue;
		/* A directory by its inode; the root always (no entry names
		 * it, and empty when the index was written it had no rows:
		 * its new entries were never read, and what is under them
		 * went unnamed, exit 0).  An inode of another type read now
		 * is no directory to re-read (had it been one, its entry
		 * went with it from a parent re-read here: collect_gone). */
		if (it->type == FT_DIR || it->ino == c->x->root)
			push(&p.pend, &p.np, &p.pcap, it->ino);
		else if (it->type == FT_UNKNOWN)
			push(&unk, &nu, &ucap, it->ino);
	}
	/* Of unknown type: a directory when the index knows it as one. */
	nidx_prefetch(c->x, 1, unk, nu);
	for (size_t i = 0; i < nu && !rc; i++) {
		int k = known_dir(c->x, unk[i]);

		if (k < 0)
			rc = 1;
		else if (k)
			push(&p.pend, &p.np, &p.pcap, unk[i]);
	}
	free(unk);
	/* The directories' entries, searched by reread. */
	nidx_prefetch(c->x, 1, p.pend, p.np);
	/* The searches above are one or two per result: linear, not charged. */
	c->charged = c->cur.opens + c->x->looked;
	while (!rc && p.np && progress) {
		size_t keep = 0;

		progress = 0;
		if (pend_sort(c, p.pend, p.np, budget)) {
			rc = 1;
			break;
		}
		for (size_t i = 0; i < p.np; i++) {
			uint64_t ino = p.pend[i];
			const char *rel;
			int fd;
			struct stat st;

			if (u64set_has(&c->fresh, ino)) {
				progress = 1;
				continue;
			}
			rel = dir_rel(c, ino);
			if (c->x->failed) {
				rc = 1;
				break;
			}
			fd = rel ? dircur_open(&c->cur, rel, O_RDONLY | O_DIRECTORY) : -1;
			if (spend(c, budget)) {
				if (fd >= 0)
					close(fd);
				rc = 1;
				break;
			}
			if (fd < 0 || fstat(fd, &st) || st.st_ino != ino || st.st_dev != mdev) {
				if (fd >= 0)
					close(fd);
				p.pend[keep++] = ino;	/* its parent first */
				continue;
			}
			u64set_add(&c->fresh, ino);
			if (reread(c, ino, fd, &p)) {
				rc = 1;
				break;
			}
			(*reread_n)++;
			progress = 1;
		}
		if (rc)
			break;
		p.np = keep;
	}
	if (!rc && collect_gone(c, &p))
		rc = 1;
	if (!rc)
		memo_clear(c);
	/*
	 * Left over: directories no chain of entries reaches any more
	 * (deleted, their parent re-read), which is fine; or ones whose path
	 * does not lead to them, which is not.
	 */
	for (size_t i = 0; i < p.np && !rc; i++)
		if (dir_rel(c, p.pend[i]) || c->x->failed)
			rc = 1;
	free(p.pend);
	free(p.gone);
	return rc;
}

/* ---- naming the listed inodes ---- */

static int by_dir(const void *pa, const void *pb)
{
	const struct nent *a = pa, *b = pb;

	return (a->dir > b->dir) - (a->dir < b->dir);
}

/* A directory's run of entries in the list, and its path. */
struct dgroup {
	const char *rel;
	size_t start, end;
};

static int dgroup_cmp(const void *pa, const void *pb)
{
	const struct dgroup *a = pa, *b = pb;

	return rel_cmp(a->rel, b->rel);
}

/* The paths index_paths is about to check, stat'ed in parallel first
 * (prefetch.c): its serial checks then find them cached. */
static void warm_paths(struct nctx *c, const struct nlist *all, const struct dgroup *g,
		       size_t ng)
{
	char **v = xmalloc((all->n ? all->n : 1) * sizeof(*v));
	size_t n = 0;

	for (size_t k = 0; k < ng; k++) {
		size_t bl = strlen(g[k].rel);

		for (size_t i = g[k].start; i < g[k].end; i++) {
			const struct nent *e = &all->v[i];
			size_t pcap = 0;

			v[n] = NULL;
			rel_join(&v[n++], &pcap, g[k].rel, bl, NL_NAME(all, e), e->len);
		}
	}
	prefetch_lstat(c->r->mnt_fd, v, n);
	while (n)
		free(v[--n]);
	free(v);
}

/* The inodes of the paths about to be stat'ed, and of their directories,
 * read ahead where the method knows how (r->ino_prefetch). */
static void warm_inodes(struct resolver *r, const struct nlist *all, const struct dgroup *g,
			size_t ng)
{
	uint64_t *v;
	size_t n = 0;

	if (!r->ino_prefetch || !ng)
		return;
	v = xmalloc((all->n + ng) * sizeof(*v));
	for (size_t k = 0; k < ng; k++) {
		v[n++] = all->v[g[k].start].dir;
		for (size_t i = g[k].start; i < g[k].end; i++)
			v[n++] = all->v[i].ino;
	}
	r->ino_prefetch(r, v, n);
	free(v);
}

/* Every path of every listed inode, from the index; each checked with a
 * stat (an entry that names another inode now is dropped). */
static int index_paths(struct nctx *c, uint64_t *dropped, uint64_t *budget)
{
	struct resolver *r = c->r;
	struct nlist all = { 0 };
	struct item *rootit = res_find(&r->res, 0, c->x->root);
	struct dgroup *g = NULL;
	size_t ng = 0, gcap = 0;
	char *rel = NULL;
	size_t rcap = 0;
	int rc = 0;

	if (rootit && rootit->reasons)
		item_add_path(rootit, "");
	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (it && it->reasons && !it->root && it->ino != c->x->root &&
		    nidx_by_ino(c->x, it->ino, 0, SIZE_MAX, &all)) {
			nl_free(&all);
			return 1;
		}
	}
	/* By directory, in path order: each directory's path is looked up
	 * once, and the cursor opens each level once.  The searches above
	 * (one per listed inode) are not charged. */
	c->charged = c->cur.opens + c->x->looked;
	if (all.n > 1)
		qsort(all.v, all.n, sizeof(*all.v), by_dir);
	{
		/* Their directories' names, searched next (dir_rel). */
		uint64_t *dirs = NULL;
		size_t nd = 0, dcap = 0;

		for (size_t i = 0; i < all.n; i++)
			if (!nd || dirs[nd - 1] != all.v[i].dir)
				push(&dirs, &nd, &dcap, all.v[i].dir);
		nidx_prefetch(c->x, 0, dirs, nd);
		free(dirs);
	}
	for (size_t i = 0; i < all.n;) {
		uint64_t dir = all.v[i].dir;
		const char *base = dir_rel(c, dir);
		size_t end = i;

		while (end < all.n && all.v[end].dir == dir)
			end++;
		if (c->x->failed || spend(c, budget)) {
			rc = 1;
			break;
		}
		if (base) {	/* else an unreachable (stale) directory */
			xgrow((void **)&g, &gcap, ng + 1, sizeof(*g));
			g[ng].rel = base;
			g[ng].start = i;
			g[ng++].end = end;
		}
		i = end;
	}
	if (!rc && ng > 1)
		qsort(g, ng, sizeof(*g), dgroup_cmp);
	if (!rc) {
		warm_inodes(r, &all, g, ng);
		warm_paths(c, &all, g, ng);
	}
	for (size_t k = 0; k < ng && !rc; k++) {
		const char *base = g[k].rel;
		size_t bl = strlen(base);
		int dfd = dircur_dir(&c->cur, base, bl), derr = errno;

		if (spend(c, budget)) {
			rc = 1;
			break;
		}
		for (size_t i = g[k].start; i < g[k].end; i++) {
			const struct nent *e = &all.v[i];
			struct item *it = res_find(&r->res, 0, e->ino);
			size_t o = rel_join(&rel, &rcap, base, bl, NL_NAME(&all, e), e->len);
			struct stat st;
			int err = derr;

			if (dfd >= 0 && !fstatat(dfd, rel + o, &st, AT_SYMLINK_NOFOLLOW)) {
				if (st.st_ino == it->ino) {
					item_add_path(it, rel);
					if (it->type == FT_UNKNOWN)
						it->type = ftype_from_mode(st.st_mode);
				} else {
					(*dropped)++;
				}
				continue;
			}
			if (dfd >= 0)
				err = errno;
			if (path_gone(err))
				(*dropped)++;	/* gone, or a symlink now */
			else	/* cannot be checked: listed, conservatively */
				item_add_path(it, rel);
		}
	}
	free(rel);
	free(g);
	nl_free(&all);
	return rc;
}

static void clear_paths(struct resolver *r)
{
	for (size_t i = 0; i < r->res.cap; i++)
		if (r->res.tab[i])
			item_clear_paths(r->res.tab[i]);
}

/* Commit the index for the run's epoch; a note when it cannot be. */
static void save(struct resolver *r, struct nidx *x)
{
	size_t l = strlen(r->st.cache);

	x->epoch = r->current_epoch;
	if (nidx_close(x, 1))
		snprintf(r->st.cache + l, sizeof(r->st.cache) - l, "%snot saved", l ? "; " : "");
}

int resolve_names(struct resolver *r,
		  int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx),
		  void *ctx)
{
	struct nidx x;
	struct nctx c = { .r = r, .x = &x };
	struct collect col = { .x = &x, .visit = visit, .ctx = ctx };
	uint64_t reread_n = 0, dropped = 0;
	int use = !cache_off() && !strcmp(r->mnt_root ? r->mnt_root : "/", "/");
	struct stat st;
	int rc;

	if (!use || nidx_open(r, &x))
		return walk_tree(r, visit, ctx);
	dircur_init(&c.cur, r->mnt_fd);
	if (x.usable && (x.epoch < r->since || x.epoch > r->current_epoch)) {
		snprintf(r->st.cache, sizeof(r->st.cache), "from epoch %llu: not usable since %llu, rebuilt",
			 (unsigned long long)x.epoch, (unsigned long long)r->since);
		x.usable = 0;
	}
	if (x.usable && (fstat(r->mnt_fd, &st) || st.st_ino != x.root)) {
		snprintf(r->st.cache, sizeof(r->st.cache), "of another root directory: rebuilt");
		x.usable = 0;
	}
	if (visit && x.usable) {
		/* A walk that visits everything, and an index that can be
		 * used: the index is left as it is. */
		nidx_close(&x, 0);
		return walk_tree(r, visit, ctx);
	}
	if (x.usable) {
		size_t listed = 0;
		uint64_t budget = WALK_MIN + 4 * x.entries;
		int walk;

		for (size_t i = 0; i < r->res.cap; i++)
			listed += r->res.tab[i] && r->res.tab[i]->reasons && !r->res.tab[i]->root;
		/* Many to name: a walk is cheaper (the index is still kept
		 * current, from the changed directories alone). */
		walk = x.entries >= WALK_MIN && listed > x.entries / WALK_RATIO;
		{
			/* Their names: searched by refresh (known_dir) and
			 * index_paths. */
			uint64_t *ino = NULL;
			size_t ni = 0, icap = 0;

			for (size_t i = 0; i < r->res.cap; i++) {
				const struct item *it = r->res.tab[i];

				if (it && it->reasons && !it->root)
					push(&ino, &ni, &icap, it->ino);
			}
			nidx_prefetch(&x, 0, ino, ni);
			free(ino);
		}
		if (!refresh(&c, &reread_n, &budget) &&
		    (walk || !index_paths(&c, &dropped, &budget))) {
			rc = walk ? walk_tree(r, NULL, NULL) : RX_OK;
			if (walk)
				snprintf(r->st.cache, sizeof(r->st.cache),
					 "updated (from epoch %llu): %llu directories re-read; not used to name: %zu inodes of %llu entries, a walk is cheaper: walked",
					 (unsigned long long)x.epoch, (unsigned long long)reread_n, listed,
					 (unsigned long long)x.entries);
			else {
				r->st.dirs_walked = reread_n;
				snprintf(r->st.cache, sizeof(r->st.cache),
					 "used (from epoch %llu): %llu directories re-read, %llu stale paths dropped, %llu index lookups",
					 (unsigned long long)x.epoch, (unsigned long long)reread_n,
					 (unsigned long long)dropped, (unsigned long long)x.looked);
			}
			memo_clear(&c);
			u64set_free(&c.fresh);
			dircur_free(&c.cur);
			if (rc)
				nidx_close(&x, 0);
			else
				save(r, &x);
			return rc;
		}
		snprintf(r->st.cache, sizeof(r->st.cache), "%s: walked, rebuilt",
			 x.failed ? "not usable (damaged)" :
			 "not usable (a directory moved out of reach, or paths too deep to look up)");
		memo_clear(&c);
		u64set_free(&c.fresh);
		/* Paths may have been added: start over. */
		clear_paths(r);
	} else if (!r->st.cache[0] && x.why[0]) {
		snprintf(r->st.cache, sizeof(r->st.cache), "%s", x.why);
	}
	dircur_free(&c.cur);
	if (nidx_clear(&x)) {
		nidx_close(&x, 0);
		return walk_tree(r, visit, ctx);
	}
	rc = walk_tree(r, collect_visit, &col);
	if (rc || nidx_finish_build(&x)) {
		nidx_close(&x, 0);
		return rc;
	}
	{
		size_t l = strlen(r->st.cache);

		snprintf(r->st.cache + l, sizeof(r->st.cache) - l, "%swritten (epoch %llu, %llu entries)",
			 l ? "; " : "", (unsigned long long)r->current_epoch,
			 (unsigned long long)x.entries);
	}
	save(r, &x);
	return RX_OK;
}
