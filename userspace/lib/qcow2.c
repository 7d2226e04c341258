// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Write the qcow2 v3 wrapper of chj_qcow2.h (QEMU's docs/interop/qcow2.txt).
 *
 * Cluster size 2 MiB.  Clusters, in file order:
 *   0              header, data file name and bitmaps extensions
 *   1              refcount table (one entry)
 *   2              refcount block (16-bit refcounts, 1 Mi clusters)
 *   L1             l1_size entries
 *   L2 tables      every guest cluster mapped to the same offset of the
 *                  data file (data_file_raw requires the mapping)
 *   bitmap table   one entry per bitmap cluster: 0 all zeros, 1 all ones,
 *                  else the cluster's offset
 *   directory      the one bitmap directory entry
 *   bitmap data    only the clusters neither all zeros nor all ones
 * Metadata for a 1 TiB origin: 4 MiB of L2, at most 16 bitmap clusters at
 * 4 KiB granularity.  The bitmap is disabled (not "auto") and not in use,
 * so QEMU opens it read-only as it is; the autoclear bits say the bitmaps
 * extension and the raw data file are valid.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "chj_qcow2.h"

#define CB		CHJ_QCOW2_CLUSTER_BITS
#define CS		(1ull << CB)
#define L2_ENTRIES	(CS / 8)
#define BITS_PER_CL	(CS * 8)
#define OFLAG_COPIED	(1ull << 63)
#define INCOMPAT_DATA_FILE	(1ull << 2)
#define AUTOCLEAR_BITMAPS	(1ull << 0)
#define AUTOCLEAR_DATA_RAW	(1ull << 1)
#define EXT_DATA_FILE	0x44415441u
#define EXT_BITMAPS	0x23852875u
#define HEADER_LEN	112
#define DIR_ENTRY_LEN	24
#define BT_DIRTY	1
#define BME_ALL_ONES	1ull
/* QEMU's BME_MAX_PHYS_SIZE: 512 MiB of bitmap clusters. */
#define MAX_PHYS_BYTES	(512ull << 20)

static uint64_t pad8(uint64_t n) { return (n + 7) & ~7ull; }
static uint64_t div_up(uint64_t a, uint64_t b) { return a / b + !!(a % b); }

struct w {
	int fd;
	uint8_t *buf;		/* one cluster */
	uint64_t next;		/* next free cluster */
	uint64_t *table;	/* bitmap table */
	uint64_t table_size;
	uint64_t cur;		/* bitmap cluster in buf, or UINT64_MAX */
	uint64_t data_clusters;
	struct chj_error *e;
};

static int wr(struct w *w, const void *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(w->fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return chj_err(w->e, CHJ_ERR_IO, "qcow2 image: write: %s",
				       n < 0 ? strerror(errno) : "short write");
		p = (const uint8_t *)p + n;
		len -= n;
		off += n;
	}
	return CHJ_OK;
}

/* Bits [a, b) of the cluster in buf. */
static void set_bits(uint8_t *buf, uint64_t a, uint64_t b)
{
	while (a < b && a % 8)
		buf[a / 8] |= 1u << (a % 8), a++;
	if (b - a >= 8) {
		memset(buf + a / 8, 0xff, (b - a) / 8);
		a += (b - a) / 8 * 8;
	}
	while (a < b)
		buf[a / 8] |= 1u << (a % 8), a++;
}

static int w_flush(struct w *w)
{
	int rc;

	if (w->cur == UINT64_MAX)
		return CHJ_OK;
	if (w->buf[0] == 0xff && !memcmp(w->buf, w->buf + 1, CS - 1)) {
		w->table[w->cur] = BME_ALL_ONES;
	} else {
		rc = wr(w, w->buf, CS, w->next << CB);
		if (rc)
			return rc;
		w->table[w->cur] = w->next++ << CB;
		w->data_clusters++;
	}
	w->cur = UINT64_MAX;
	return CHJ_OK;
}

/* Set granules [a, b) of the whole bitmap. */
static int mark(struct w *w, uint64_t a, uint64_t b)
{
	while (a < b) {
		uint64_t k = a / BITS_PER_CL, end = (k + 1) * BITS_PER_CL;
		int rc;

		if (k != w->cur) {
			rc = w_flush(w);
			if (rc)
				return rc;
			memset(w->buf, 0, CS);
			w->cur = k;
		}
		if (end > b)
			end = b;
		set_bits(w->buf, a - k * BITS_PER_CL, end - k * BITS_PER_CL);
		a = end;
	}
	return CHJ_OK;
}

static int bitmap(struct w *w, const struct chj_qcow2_opts *o,
		  chj_range_iter next, void *ctx, uint64_t *dirty)
{
	uint64_t g = o->gran_bits, done = 0;	/* granules below done are set */
	struct chj_range r;
	int rc;

	*dirty = 0;
	while (next(ctx, &r)) {
		uint64_t a, b;

		if (r.start > o->size >> CHJ_SECTOR_SHIFT ||
		    r.len > (o->size >> CHJ_SECTOR_SHIFT) - r.start)
			return chj_err(w->e, CHJ_ERR_INVAL,
				       "changed range %llu+%llu: beyond the end of the %llu-byte origin",
				       (unsigned long long)r.start, (unsigned long long)r.len,
				       (unsigned long long)o->size);
		/* outward: from the granule holding the first byte to the one
		 * holding the last */
		a = (r.start << CHJ_SECTOR_SHIFT) >> g;
		b = (((r.start + r.len) << CHJ_SECTOR_SHIFT) + (1ull << g) - 1) >> g;
		if (!r.len)
			continue;
		if (a < done)
			a = done;
		if (a >= b)
			continue;
		/* the last granule may reach past the end: count to the end */
		*dirty += (b << g > o->size ? o->size : b << g) - (a << g);
		rc = mark(w, a, b);
		if (rc)
			return rc;
		done = b;
	}
	return w_flush(w);
}

static int write_header(struct w *w, const struct chj_qcow2_opts *o, uint64_t l1_size,
		  uint64_t l1_off, uint64_t dir_off, uint64_t dir_len)
{
	size_t dl = strlen(o->data_file);
	uint8_t *h = w->buf, *p;

	memset(h, 0, CS);
	memcpy(h, "QFI\xfb", 4);
	put_be32(h + 4, 3);
	put_be32(h + 20, CB);
	put_be64(h + 24, o->size);
	put_be32(h + 36, l1_size);
	put_be64(h + 40, l1_off);
	put_be64(h + 48, 1 * CS);		/* refcount table */
	put_be32(h + 56, 1);
	put_be64(h + 72, INCOMPAT_DATA_FILE);
	put_be64(h + 88, AUTOCLEAR_BITMAPS | AUTOCLEAR_DATA_RAW);
	put_be32(h + 96, 4);		/* 16-bit refcounts */
	put_be32(h + 100, HEADER_LEN);	/* byte 104: compression type zlib */
	p = h + HEADER_LEN;
	put_be32(p, EXT_DATA_FILE);
	put_be32(p + 4, dl);
	memcpy(p + 8, o->data_file, dl);
	p += 8 + pad8(dl);
	put_be32(p, EXT_BITMAPS);
	put_be32(p + 4, 24);
	put_be32(p + 8, 1);		/* nb_bitmaps */
	put_be64(p + 16, dir_len);
	put_be64(p + 24, dir_off);
	/* then the end-of-extensions marker, zero */
	return wr(w, h, CS, 0);
}

int chj_qcow2_write(int fd, const struct chj_qcow2_opts *o, chj_range_iter next,
		    void *ctx, struct chj_qcow2_stats *st, struct chj_error *e)
{
	struct w w = { .fd = fd, .cur = UINT64_MAX, .e = e };
	size_t nl = o->bitmap ? strlen(o->bitmap) : 0;
	uint64_t guest_clusters, l1_size, l1_off, l2_off, bt_off, dir_off, dir_len;
	uint64_t granules, dirty = 0, i, j;
	int rc;

	if (!o->size || o->size % 512 || o->size > (1ull << 62))
		return chj_err(e, CHJ_ERR_INVAL, "qcow2 image: bad size %llu",
			       (unsigned long long)o->size);
	if (!nl || nl > CHJ_QCOW2_MAX_NAME)
		return chj_err(e, CHJ_ERR_INVAL, "bitmap name: must be 1 to %d bytes",
			       CHJ_QCOW2_MAX_NAME);
	if (o->data_file[0] != '/' || strlen(o->data_file) > 4096)
		return chj_err(e, CHJ_ERR_INVAL, "%s: data file path must be absolute, at most 4096 bytes",
			       o->data_file);
	if (o->gran_bits < CHJ_QCOW2_MIN_GRAN_BITS || o->gran_bits > CHJ_QCOW2_MAX_GRAN_BITS)
		return chj_err(e, CHJ_ERR_INVAL, "granularity 2^%u: QEMU takes 512 B to 2 GiB",
			       o->gran_bits);
	guest_clusters = div_up(o->size, CS);
	l1_size = div_up(guest_clusters, L2_ENTRIES);
	granules = div_up(o->size, 1ull << o->gran_bits);
	w.table_size = div_up(granules, BITS_PER_CL);
	if (w.table_size * CS > MAX_PHYS_BYTES)
		return chj_err(e, CHJ_ERR_INVAL,
			       "bitmap of %llu bits: more than QEMU's 512 MiB of bitmap clusters; choose a coarser --granularity",
			       (unsigned long long)granules);
	l1_off = 3 * CS;
	l2_off = l1_off + div_up(l1_size * 8, CS) * CS;
	bt_off = l2_off + l1_size * CS;
	dir_off = bt_off + div_up(w.table_size * 8, CS) * CS;
	dir_len = pad8(DIR_ENTRY_LEN + nl);
	w.next = (dir_off >> CB) + 1;

	w.buf = malloc(CS);
	w.table = calloc(w.table_size, 8);
	if (!w.buf || !w.table) {
		rc = chj_err(e, CHJ_ERR_NOMEM, "qcow2 image: out of memory");
		goto out;
	}
	/* Bitmap data first: it decides how many clusters the file has. */
	rc = bitmap(&w, o, next, ctx, &dirty);
	if (rc)
		goto out;
	if (w.next > CS / 2) {
		rc = chj_err(e, CHJ_ERR_INVAL, "qcow2 image: origin too large for one refcount block");
		goto out;
	}
	/* L1, then each L2 table: guest cluster g at data file offset g. */
	memset(w.buf, 0, CS);
	for (i = 0; i < l1_size; i++)
		put_be64(w.buf + 8 * (i % L2_ENTRIES), (l2_off + i * CS) | OFLAG_COPIED);
	rc = wr(&w, w.buf, l1_size * 8, l1_off);
	for (i = 0; !rc && i < l1_size; i++) {
		memset(w.buf, 0, CS);
		for (j = 0; j < L2_ENTRIES && i * L2_ENTRIES + j < guest_clusters; j++)
			put_be64(w.buf + 8 * j, ((i * L2_ENTRIES + j) << CB) | OFLAG_COPIED);
		rc = wr(&w, w.buf, CS, l2_off + i * CS);
	}
	if (rc)
		goto out;
	for (i = 0; i < w.table_size; i++)
		w.table[i] = htobe64(w.table[i]);
	rc = wr(&w, w.table, w.table_size * 8, bt_off);
	if (rc)
		goto out;
	/* The directory entry: disabled, not in use, no extra data. */
	memset(w.buf, 0, dir_len);
	put_be64(w.buf, bt_off);
	put_be32(w.buf + 8, w.table_size);
	w.buf[16] = BT_DIRTY;
	w.buf[17] = o->gran_bits;
	w.buf[18] = nl >> 8;
	w.buf[19] = nl & 0xff;
	memcpy(w.buf + DIR_ENTRY_LEN, o->bitmap, nl);
	rc = wr(&w, w.buf, dir_len, dir_off);
	if (rc)
		goto out;
	/* Refcount table and block: every cluster of the file used once. */
	memset(w.buf, 0, CS);
	put_be64(w.buf, 2 * CS);
	rc = wr(&w, w.buf, 8, 1 * CS);
	if (rc)
		goto out;
	memset(w.buf, 0, CS);
	for (i = 0; i < w.next; i++)
		w.buf[2 * i + 1] = 1;
	rc = wr(&w, w.buf, 2 * w.next, 2 * CS);
	if (!rc)
		rc = write_header(&w, o, l1_size, l1_off, dir_off, dir_len);
	if (!rc && ftruncate(fd, w.next << CB))
		rc = chj_err(e, CHJ_ERR_IO, "qcow2 image: truncate: %s", strerror(errno));
	if (!rc && st) {
		st->dirty_bytes = dirty;
		st->data_clusters = w.data_clusters;
		st->file_bytes = w.next << CB;
	}
out:
	free(w.buf);
	free(w.table);
	return rc;
}
