// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The name cache's file: one per chj metadata device in
 * $CHJ_RESOLVE_CACHE_DIR (default /var/cache/chj-resolve), mode 0600.
 * A 128-byte header (magic, version, chj and filesystem uuids and type,
 * epoch, root directory, body length, the body's CRC-32C and the header's
 * own), then per directory its inode, entry count and entries (inode,
 * type, name length, name), little-endian.  Only read from a regular file
 * of root's, mode 0600 at most, in a directory owned by root that nobody
 * else can write: anything else is a warning and a run without the cache.
 * Torn or damaged files fail their CRCs: a walk, never a wrong answer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "libchj.h"
#include "names.h"

#define NC_MAGIC	"CHJRNAM1"
#define NC_VERSION	2u
#define NC_HDR		128u

int cache_off(void)
{
	const char *v = getenv("CHJ_RESOLVE_CACHE");

	return v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"));
}

const char *cache_dir(void)
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
int cache_dir_open(struct resolver *r, int create)
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

/* The header: magic, version, chj uuid, fs uuid and type, epoch, root,
 * body length and its CRC-32C, and the CRC-32C of the header before it. */
static void make_hdr(const struct resolver *r, const struct names *nc, uint64_t body_len,
		     uint32_t crc, unsigned char *h)
{
	memset(h, 0, NC_HDR);
	memcpy(h, NC_MAGIC, 8);
	put_le64(h + 8, NC_VERSION);
	memcpy(h + 16, r->chj_uuid, 16);
	memcpy(h + 32, r->fs_uuid, sizeof(r->fs_uuid) < 48 ? sizeof(r->fs_uuid) : 48);
	memcpy(h + 80, r->fstype, 16);
	put_le64(h + 96, nc->epoch);
	put_le64(h + 104, nc->root);
	put_le64(h + 112, body_len);
	put_le32(h + 120, crc);
	put_le32(h + 124, chj_crc32c(h, 124));
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
		dino = le64(p);
		n = le64(p + 8);
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
			d->e[d->n].ino = le64(p);
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

struct names *cache_load(struct resolver *r)
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
	blen = le64(h + 112);
	make_hdr(r, &(struct names){ .epoch = le64(h + 96), .root = le64(h + 104) }, blen,
		 le32(h + 120), want);
	/* Names are offsets into the body: at most 4 GiB of it. */
	if (memcmp(h, want, NC_HDR) || blen != (uint64_t)st.st_size - NC_HDR || blen > UINT32_MAX)
		goto bad;
	body = xmalloc(blen + 1);
	if (fread(body, 1, blen, f) != blen || chj_crc32c(body, blen) != le32(h + 120))
		goto bad;
	nc = nc_parse(body, blen);
	body = NULL;	/* the arena now, or freed */
	if (!nc)
		goto bad;
	nc->epoch = le64(h + 96);
	nc->root = le64(h + 104);
	nc->loaded = 1;
	nc->fdev = st.st_dev;
	nc->fino = st.st_ino;
	nc->fsize = st.st_size;
	nc->blen = blen;
	nc->bcrc = le32(h + 120);
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
void cache_save(struct resolver *r, struct names *nc)
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
		put_le64(body + blen, d->ino);
		put_le64(body + blen + 8, d->n);
		blen += 16;
		for (uint32_t k = 0; k < d->n; k++) {
			const struct nent *e = &d->e[k];

			xgrow((void **)&body, &bcap, blen + 11 + e->len, 1);
			put_le64(body + blen, e->ino);
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
