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
 * The cache lives in $CHJ_RESOLVE_CACHE_DIR (default
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

#include "libchj.h"
#include "resolve.h"

#define NC_MAGIC	"CHJRNAM1"
#define NC_VERSION	2u
#define NC_HDR		128u
#define WALK_MIN	65536u
#define WALK_RATIO	16u

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
	uint64_t *tab;		/* open addressing: dir inode -> index + 1 */
	size_t tcap;
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

/* ---- the in-memory cache ---- */

static size_t hslot(uint64_t ino, size_t cap)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static void nc_rehash(struct names *nc)
{
	size_t cap = nc->tcap ? nc->tcap * 2 : 1024;

	while (cap < nc->n * 2 + 2)
		cap *= 2;
	free(nc->tab);
	nc->tab = xcalloc(cap, sizeof(*nc->tab));
	nc->tcap = cap;
	for (size_t i = 0; i < nc->n; i++) {
		size_t s = hslot(nc->d[i].ino, cap);

		while (nc->tab[s])
			s = (s + 1) & (cap - 1);
		nc->tab[s] = i + 1;
	}
}

static struct ndir *nc_find(const struct names *nc, uint64_t ino)
{
	if (!nc->tcap)
		return NULL;
	for (size_t s = hslot(ino, nc->tcap); nc->tab[s]; s = (s + 1) & (nc->tcap - 1))
		if (nc->d[nc->tab[s] - 1].ino == ino)
			return &nc->d[nc->tab[s] - 1];
	return NULL;
}

static struct ndir *nc_get(struct names *nc, uint64_t ino)
{
	struct ndir *d = nc_find(nc, ino);

	if (d)
		return d;
	xgrow((void **)&nc->d, &nc->cap, nc->n + 1, sizeof(*nc->d));
	d = &nc->d[nc->n++];
	memset(d, 0, sizeof(*d));
	d->ino = ino;
	if ((nc->n + 1) * 2 > nc->tcap)
		nc_rehash(nc);
	else {
		size_t s = hslot(ino, nc->tcap);

		while (nc->tab[s])
			s = (s + 1) & (nc->tcap - 1);
		nc->tab[s] = nc->n;
	}
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

static void nc_add(struct names *nc, struct ndir *d, size_t *cap, uint64_t ino, const char *name,
		   size_t len, uint8_t dtype)
{
	xgrow((void **)&d->e, cap, d->n + 1, sizeof(*d->e));
	d->e[d->n].ino = ino;
	d->e[d->n].name = nc_name(nc, name, len);
	d->e[d->n].len = (uint16_t)len;
	d->e[d->n].dtype = dtype;
	d->n++;
}

static void nc_free(struct names *nc)
{
	if (!nc)
		return;
	for (size_t i = 0; i < nc->n; i++)
		free(nc->d[i].e);
	free(nc->d);
	free(nc->tab);
	free(nc->arena);
	free(nc);
}

/* ---- the cache file ---- */

static int cache_off(void)
{
	const char *v = getenv("CHJ_RESOLVE_CACHE");

	return v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"));
}

static const char *cache_dir(void)
{
	const char *dir = getenv("CHJ_RESOLVE_CACHE_DIR");

	return dir && *dir ? dir : "/var/cache/chj-resolve";
}

/* The file's name inside the cache directory. */
static void cache_name(const struct resolver *r, char *buf, size_t len)
{
	char u[37];

	chj_uuid_str(r->chj_uuid, u);
	snprintf(buf, len, "%s.names", u);
}

/*
 * The cache directory, opened, if it is safe: a directory owned by root
 * that no group or other can write (else another user could plant a FIFO
 * that hangs the run, or a symlink to a device or another cache).  -1
 * otherwise: missing is quiet (no cache yet), unsafe is a warning, and the
 * run goes on without the cache.  With create, a missing default directory
 * is made.
 */
static int cache_dir_open(struct resolver *r, int create)
{
	const char *dir = cache_dir();
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create && !getenv("CHJ_RESOLVE_CACHE_DIR") &&
	    !mkdir(dir, 0700))
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			fprintf(stderr, "chj-resolve: warning: name cache directory %s: %s: running without the cache\n",
				dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || st.st_uid != 0 || (st.st_mode & 022)) {
		fprintf(stderr, "chj-resolve: warning: name cache directory %s is not owned by root or is writable by others: running without the cache\n",
			dir);
		snprintf(r->st.cache, sizeof(r->st.cache), "not used: unsafe directory");
		close(fd);
		return -1;
	}
	return fd;
}

/* Open the cache file for reading: a regular file owned by root, mode 0600
 * at most; never a FIFO, device or symlink.  -1 (with a warning when it
 * exists but is not such a file). */
static int cache_file_open(int dfd, const char *name, struct stat *st)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		if (errno != ENOENT)
			fprintf(stderr, "chj-resolve: warning: name cache %s/%s: %s: running without the cache\n",
				cache_dir(), name, strerror(errno));
		return -1;
	}
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_uid != 0 || (st->st_mode & 077)) {
		fprintf(stderr, "chj-resolve: warning: name cache %s/%s is not a regular file of root's, mode 0600: running without the cache\n",
			cache_dir(), name);
		close(fd);
		return -1;
	}
	return fd;
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The header: magic, version, chj uuid, fs uuid and type, epoch, root,
 * body length and its CRC-32C, and the CRC-32C of the header before it. */
static void make_hdr(const struct resolver *r, const struct names *nc, uint64_t body_len,
		     uint32_t crc, unsigned char *h)
{
	memset(h, 0, NC_HDR);
	memcpy(h, NC_MAGIC, 8);
	put64(h + 8, NC_VERSION);
	memcpy(h + 16, r->chj_uuid, 16);
	memcpy(h + 32, r->fs_uuid, sizeof(r->fs_uuid) < 48 ? sizeof(r->fs_uuid) : 48);
	memcpy(h + 80, r->fstype, 16);
	put64(h + 96, nc->epoch);
	put64(h + 104, nc->root);
	put64(h + 112, body_len);
	put32(h + 120, crc);
	put32(h + 124, chj_crc32c(h, 124));
}

/*
 * The body of a cache file: per directory its inode, entry count, and
 * entries (inode, type, name length, name).  body (blen bytes, malloc'd
 * with one spare byte) becomes the name arena: each name stays where it
 * was read.  NULL (body freed) when it does not parse.  Cost: linear in
 * blen (each directory found once by hash).
 */
static struct names *nc_parse(unsigned char *body, uint64_t blen)
{
	struct names *nc = xcalloc(1, sizeof(*nc));
	unsigned char *p, *end;

	nc->arena = (char *)body;
	nc->alen = blen;
	nc->acap = blen + 1;
	for (p = body, end = p + blen; p < end;) {
		uint64_t dino, n;
		struct ndir *d;

		if (end - p < 16)
			goto bad;
		dino = get64(p);
		n = get64(p + 8);
		p += 16;
		if (!dino || nc_find(nc, dino) || n > (uint64_t)(end - p) / 11)
			goto bad;
		d = nc_get(nc, dino);
		d->stored = 1;
		d->e = n ? xmalloc(n * sizeof(*d->e)) : NULL;
		for (uint64_t i = 0; i < n; i++) {
			size_t len;

			if (end - p < 11)
				goto bad;
			len = (size_t)p[9] | (size_t)p[10] << 8;
			if (!len || len > 255 || (size_t)(end - p) < 11 + len ||
			    memchr(p + 11, '/', len) || memchr(p + 11, 0, len))
				goto bad;
			d->e[d->n].ino = get64(p);
			d->e[d->n].name = (uint32_t)(p + 11 - (unsigned char *)nc->arena);
			d->e[d->n].len = (uint16_t)len;
			d->e[d->n].dtype = p[8];
			d->n++;
			p += 11 + len;
		}
	}
	return nc;
bad:
	nc_free(nc);
	return NULL;
}

/* For the fuzz harness: parse a body; the directories found, or -1. */
long names_parse_body(const unsigned char *buf, size_t len)
{
	unsigned char *body = xmalloc(len + 1);
	struct names *nc;
	long n;

	memcpy(body, buf, len);
	nc = nc_parse(body, len);
	if (!nc)
		return -1;
	n = (long)nc->n;
	nc_free(nc);
	return n;
}

static struct names *cache_load(struct resolver *r)
{
	char name[64];
	unsigned char h[NC_HDR], want[NC_HDR];
	unsigned char *body = NULL;
	struct names *nc = NULL;
	struct stat st;
	uint64_t blen;
	FILE *f;
	int dfd = cache_dir_open(r, 0), fd;

	if (dfd < 0)
		return NULL;
	cache_name(r, name, sizeof(name));
	fd = cache_file_open(dfd, name, &st);
	close(dfd);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return NULL;
	}
	if (fread(h, 1, NC_HDR, f) != NC_HDR)
		goto bad;
	blen = get64(h + 112);
	make_hdr(r, &(struct names){ .epoch = get64(h + 96), .root = get64(h + 104) }, blen,
		 get32(h + 120), want);
	/* Names are offsets into the body: at most 4 GiB of it. */
	if (memcmp(h, want, NC_HDR) || blen != (uint64_t)st.st_size - NC_HDR || blen > UINT32_MAX)
		goto bad;
	body = xmalloc(blen + 1);
	if (fread(body, 1, blen, f) != blen || chj_crc32c(body, blen) != get32(h + 120))
		goto bad;
	nc = nc_parse(body, blen);
	body = NULL;	/* the arena now, or freed */
	if (!nc)
		goto bad;
	nc->epoch = get64(h + 96);
	nc->root = get64(h + 104);
	nc->loaded = 1;
	nc->fdev = st.st_dev;
	nc->fino = st.st_ino;
	nc->fsize = st.st_size;
	nc->blen = blen;
	nc->bcrc = get32(h + 120);
	fclose(f);
	return nc;
bad:
	/* Unusable (damaged, foreign, another filesystem): walk instead. */
	free(body);
	fclose(f);
	nc_free(nc);
	return NULL;
}

/*
 * The entries are those of the file loaded (no directory re-read found a
 * change): rewrite its header in place, for the new epoch.  -1 when that
 * cannot be done (the file was replaced meanwhile, ...): write it whole.
 */
static int cache_touch(struct resolver *r, struct names *nc)
{
	char name[64];
	unsigned char h[NC_HDR];
	struct stat st;
	int fd, ok, dfd = cache_dir_open(r, 0);

	if (dfd < 0)
		return -1;
	cache_name(r, name, sizeof(name));
	fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	close(dfd);
	if (fd < 0)
		return -1;
	make_hdr(r, nc, nc->blen, nc->bcrc, h);
	ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_dev == nc->fdev &&
	     st.st_ino == nc->fino && st.st_size == nc->fsize && st.st_uid == 0 &&
	     !(st.st_mode & 077) && pwrite(fd, h, NC_HDR, 0) == (ssize_t)NC_HDR;
	if (close(fd))
		ok = 0;
	if (!ok)
		return -1;
	{
		size_t l = strlen(r->st.cache);

		snprintf(r->st.cache + l, sizeof(r->st.cache) - l, "%sonly the header rewritten (epoch %llu)",
			 l ? "; " : "", (unsigned long long)nc->epoch);
	}
	return 0;
}

/* Write the cache: only directories reachable from the root. */
static void cache_save(struct resolver *r, struct names *nc)
{
	char path[64], tmp[96];
	unsigned char h[NC_HDR];
	unsigned char *body = NULL;
	size_t blen = 0, bcap = 0, qn = 0, qcap = 0;
	uint64_t *q = NULL;
	const char *dir = cache_dir();
	int fd, dfd;
	FILE *f;

	if (nc->loaded && !nc->dirty && !cache_touch(r, nc))
		return;
	dfd = cache_dir_open(r, 1);
	if (dfd < 0) {
		if (!r->st.cache[0])
			snprintf(r->st.cache, sizeof(r->st.cache), "not saved (%.60s unusable)", dir);
		return;
	}
	cache_name(r, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	/* Breadth first from the root; mark each directory once. */
	for (size_t i = 0; i < nc->n; i++)
		nc->d[i].fresh = 0;
	xgrow((void **)&q, &qcap, 1, sizeof(*q));
	q[qn++] = nc->root;
	for (size_t qi = 0; qi < qn; qi++) {
		struct ndir *d = nc_find(nc, q[qi]);

		if (!d || d->fresh)
			continue;
		d->fresh = 1;
		xgrow((void **)&body, &bcap, blen + 16, 1);
		put64(body + blen, d->ino);
		put64(body + blen + 8, d->n);
		blen += 16;
		for (uint32_t k = 0; k < d->n; k++) {
			const struct nent *e = &d->e[k];

			xgrow((void **)&body, &bcap, blen + 11 + e->len, 1);
			put64(body + blen, e->ino);
			body[blen + 8] = e->dtype;
			body[blen + 9] = (unsigned char)e->len;
			body[blen + 10] = (unsigned char)(e->len >> 8);
			memcpy(body + blen + 11, nc->arena + e->name, e->len);
			blen += 11 + e->len;
			if (e->dtype == DT_DIR) {
				xgrow((void **)&q, &qcap, qn + 1, sizeof(*q));
				q[qn++] = e->ino;
			}
		}
	}
	free(q);
	make_hdr(r, nc, blen, chj_crc32c(body, blen), h);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		snprintf(r->st.cache, sizeof(r->st.cache), "not saved (%.60s: %s)", dir,
			 strerror(errno));
		free(body);
		close(dfd);
		return;
	}
	/* No fsync: a torn cache fails its CRC and means a walk. */
	if (fwrite(h, 1, NC_HDR, f) != NC_HDR || fwrite(body, 1, blen, f) != blen ||
	    fclose(f) || renameat(dfd, tmp, dfd, path)) {
		snprintf(r->st.cache, sizeof(r->st.cache), "not saved (%s)", strerror(errno));
		unlinkat(dfd, tmp, 0);
	} else if (!r->st.cache[0]) {
		snprintf(r->st.cache, sizeof(r->st.cache), "written (epoch %llu)",
			 (unsigned long long)nc->epoch);
	}
	close(dfd);
	free(body);
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
	uint64_t *key, *dir;
	uint32_t *idx;
	size_t cap;
};

static void dpar_set(struct dpar *p, uint64_t ino, uint64_t dir, uint32_t idx)
{
	size_t s;

	if (!p->cap) {
		p->cap = 1 << 16;
		p->key = xcalloc(p->cap, sizeof(*p->key));
		p->dir = xcalloc(p->cap, sizeof(*p->dir));
		p->idx = xcalloc(p->cap, sizeof(*p->idx));
	}
	for (s = hslot(ino, p->cap); p->key[s] && p->key[s] != ino; s = (s + 1) & (p->cap - 1))
		;
	p->key[s] = ino;
	p->dir[s] = dir;
	p->idx[s] = idx;
}

static int dpar_get(const struct dpar *p, uint64_t ino, uint64_t *dir, uint32_t *idx)
{
	if (!p->cap)
		return 0;
	for (size_t s = hslot(ino, p->cap); p->key[s]; s = (s + 1) & (p->cap - 1))
		if (p->key[s] == ino) {
			if (!p->dir[s])
				return 0;	/* removed */
			*dir = p->dir[s];
			*idx = p->idx[s];
			return 1;
		}
	return 0;
}

static void dpar_build(struct dpar *p, const struct names *nc)
{
	size_t dirs = 0;

	for (size_t i = 0; i < nc->n; i++)
		for (uint32_t k = 0; k < nc->d[i].n; k++)
			dirs += nc->d[i].e[k].dtype == DT_DIR;
	p->cap = 1 << 16;
	while (p->cap < dirs * 2 + 2)
		p->cap *= 2;
	p->key = xcalloc(p->cap, sizeof(*p->key));
	p->dir = xcalloc(p->cap, sizeof(*p->dir));
	p->idx = xcalloc(p->cap, sizeof(*p->idx));
	for (size_t i = 0; i < nc->n; i++)
		for (uint32_t k = 0; k < nc->d[i].n; k++)
			if (nc->d[i].e[k].dtype == DT_DIR)
				dpar_set(p, nc->d[i].e[k].ino, nc->d[i].ino, k);
}

static void dpar_free(struct dpar *p)
{
	free(p->key);
	free(p->dir);
	free(p->idx);
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
static int refresh(struct resolver *r, struct names *nc, uint64_t *reread_n)
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
static void cache_paths(struct resolver *r, struct names *nc, uint64_t *dropped)
{
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
			size_t b = hslot(it->ino, fbits);

			filter[b / 64] |= 1ull << (b % 64);
		}
	}
	dpar_build(&p, nc);
	if (rootit && rootit->reasons)
		item_add_path(rootit, "");
	for (size_t i = 0; i < nc->n; i++) {
		const struct ndir *d = &nc->d[i];
		char *base = NULL;
		int have_base = 0;

		for (uint32_t k = 0; k < d->n; k++) {
			size_t b = hslot(d->e[k].ino, fbits);
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
				base = dir_rel(nc, &p, d->ino);
				have_base = 1;
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
			if (!rel_lstat(r->mnt_fd, rel, &st)) {
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
		free(base);
	}
	free(filter);
	dpar_free(&p);
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

		if (!fstat(r->mnt_fd, &st) && st.st_ino == nc->root && !refresh(r, nc, &reread_n)) {
			cache_paths(r, nc, &dropped);
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
		snprintf(r->st.cache, sizeof(r->st.cache), "not usable (a directory moved out of reach): walked");
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
