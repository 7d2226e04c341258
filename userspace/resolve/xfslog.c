// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The XFS log.  syncfs() forces the log, but XFS writes logged metadata
 * (inode cores, directory and attribute blocks) back to its home location
 * only later, when the AIL is pushed: a chmod or a rename can sit in the
 * log alone for a long time.  So when log blocks changed, the transactions
 * written there are read, and what they carry counts as changed:
 *   - inode items: the inode (ilf_ino), with xattr/extent-map reasons from
 *     the fields logged;
 *   - buffer items: the disk range of the buffer (a directory block, an
 *     attribute block, an inode cluster...), classified like any changed
 *     range by the caller;
 *   - inode-create items: the new inode chunk's range;
 *   - bmap and attr intents: their inode.
 * And the inode numbers written into directory entries: the logged parts
 * of directory data blocks, and the data fork of inodes logged with it
 * (short-form directories).  A RENAME_EXCHANGE rewrites two entries and
 * writes neither inode (xfs_cross_rename): those numbers are how the
 * caller finds the entries that may name another inode than before.
 * Other item types (extent-free, rmap and refcount intents and their done
 * items, quota) change no file by themselves; an unknown type stops
 * everything: "full scan needed".
 *
 * Which transactions: the log is written sequentially, so the blocks
 * written since the epoch form one circular run of changed log blocks (its
 * start follows the largest unchanged gap).  A transaction counts when its
 * first record (the one with its start op) lies in that run.  The content
 * of a log transaction (a CIL checkpoint) is fixed before its first record
 * is written, so one that began before the epoch holds only changes made
 * before it, which a backup taken after the checkpoint already saw.  Its
 * items may still be written home after the epoch: with the whole run
 * read ("complete"), the caller can tell such writebacks from changes.
 * When every log block changed, the log may have wrapped since the epoch:
 * then the whole active log (tail to head) counts, and nothing is left
 * out.
 *
 * Records: a header basic block (512 bytes, big-endian) plus extension
 * headers for large records, then the data, whose first word in every
 * basic block was replaced by the cycle number (restored from the
 * headers).  Log items are in the writer's byte order: little-endian here.
 */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "libchj.h"
#include "resolve.h"
#include "xfs.h"

#define BB			512u
#define XLOG_MAGIC		0xfeedbabeu
#define XLOG_CYCLE_SIZE		32768u
#define XLOG_MAX_RECORD		(256u * 1024)
#define XLOG_REC_SIZE		328u	/* sizeof(struct xlog_rec_header), x86-64 */
#define XLOG_REC_SIZE_OTHER	324u	/* the same on i386 */
#define XLOG_EXT_HDR_SIZE	260u	/* sizeof(struct xlog_rec_ext_header) */
#define XLOG_FMT_LINUX_LE	1u

#define XLOG_START_TRANS	0x01
#define XLOG_COMMIT_TRANS	0x02
#define XLOG_CONTINUE_TRANS	0x04
#define XLOG_WAS_CONT_TRANS	0x08
#define XLOG_END_TRANS		0x10
#define XLOG_UNMOUNT_TRANS	0x20

#define XFS_TRANS_HEADER_MAGIC	0x5452414eu
#define TRANS_HDR_LEN		16u

#define XFS_LI_EFI		0x1236
#define XFS_LI_EFD		0x1237
#define XFS_LI_IUNLINK		0x1238
#define XFS_LI_INODE		0x123b
#define XFS_LI_BUF		0x123c
#define XFS_LI_DQUOT		0x123d
#define XFS_LI_QUOTAOFF		0x123e
#define XFS_LI_ICREATE		0x123f
#define XFS_LI_RUI		0x1240
#define XFS_LI_RUD		0x1241
#define XFS_LI_CUI		0x1242
#define XFS_LI_CUD		0x1243
#define XFS_LI_BUI		0x1244
#define XFS_LI_BUD		0x1245
#define XFS_LI_ATTRI		0x1246
#define XFS_LI_ATTRD		0x1247

#define XFS_ILOG_DEXT		0x004
#define XFS_ILOG_DBROOT		0x008
#define XFS_ILOG_ADATA		0x040
#define XFS_ILOG_AEXT		0x080
#define XFS_ILOG_ABROOT		0x100
#define XFS_ILOG_DDATA		0x002
#define XFS_BLF_CANCEL		0x4
#define XFS_BLF_CHUNK		128u	/* bytes per bit of a buffer's dirty map */
#define XFS_BLF_DATAMAP_WORDS	16u	/* 64 KiB / 128 / 32 */
#define XFS_BLFT_SHIFT		11
#define XFS_BLFT_MASK		0x1fu
#define XFS_BLFT_UNKNOWN_BUF	0
#define XFS_BLFT_DIR_BLOCK_BUF	10
#define XFS_BLFT_DIR_DATA_BUF	11
#define SCAN_MAX		(1u << 17)	/* > the largest directory block */

#define FMT_MAX			65536u

struct pend_ino {
	uint64_t ino;
	unsigned reasons;
};

struct xtrans {
	uint32_t tid;
	int touched;
	int have_hdr;
	unsigned hdr_len;
	uint32_t item_total, item_cnt;
	int collecting;		/* the current region is an item's format */
	unsigned char *fmt;
	size_t fmt_len, fmt_cap;
	struct pend_ino *inos;
	size_t ninos, icap;
	struct rangeset bufs;	/* device bytes */
	/* The current item (known once its format region is decoded). */
	unsigned cur_type, cur_blft;
	uint32_t cur_fields;
	/* A region whose contents are scanned for entry inode numbers:
	 * SCAN_DIRDATA (8-byte aligned), SCAN_SHORTFORM (any offset). */
	int scanning;
	unsigned char *sbuf;
	size_t slen, scap;
	uint64_t *vals;
	size_t nvals, vcap;
	struct u64set vseen;	/* vals, deduplicated */
	struct xtrans *next;
};

struct xlog {
	struct resolver *r;
	const struct xfs_geo *g;
	const struct rangeset *changed;
	struct xlog_out *out;
	uint64_t bbs;		/* log length in basic blocks */
	struct xtrans *trans;
	unsigned char *rec;	/* one record: headers + data, unpacked */
	unsigned char *crcbuf;
	int incomplete;		/* a record of the changed arc was unreadable */
	/*
	 * Work spent on header-shaped blocks that were not records (their
	 * claimed length read and CRC-checked for nothing), and its bound:
	 * a real log's stale and torn headers cover about one log's length
	 * at most, a crafted one could make every block claim 256 KiB.
	 */
	uint64_t failed_bytes, fail_budget;
	int over;		/* the bound was passed: exit 3 */
	int64_t arc;		/* the changed run's first block (arc_start), -1: none */
};

static struct xtrans *find_trans(struct xlog *l, uint32_t tid)
{
	for (struct xtrans *t = l->trans; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

static void free_trans(struct xlog *l, struct xtrans *t)
{
	struct xtrans **pp;

	for (pp = &l->trans; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	free(t->fmt);
	free(t->inos);
	free(t->sbuf);
	free(t->vals);
	u64set_free(&t->vseen);
	rs_free(&t->bufs);
	free(t);
}

static void pend_ino(struct xtrans *t, uint64_t ino, unsigned reasons)
{
	xgrow((void **)&t->inos, &t->icap, t->ninos + 1, sizeof(*t->inos));
	t->inos[t->ninos].ino = ino;
	t->inos[t->ninos].reasons = reasons;
	t->ninos++;
}

/*
 * The parts of a logged buffer [start, start + len) that the item carries:
 * its dirty map (blf_map_size words from offset 20, one bit per 128-byte
 * chunk) says which chunks were changed since the buffer was last written
 * home, and only those are replayed, so only those may differ from the
 * home copy (an inode cluster whose unlinked pointer of one inode was
 * logged changed no other inode of the cluster).  A map that does not fit
 * the format region or the buffer counts the whole buffer.
 */
static void buf_ranges(struct xtrans *t, const unsigned char *f, size_t n, uint64_t start,
		       uint64_t len)
{
	uint32_t words = n >= 20 ? le32(f + 16) : 0;
	uint64_t chunks = len / XFS_BLF_CHUNK, run = 0, any = 0;

	if (!words || words > XFS_BLF_DATAMAP_WORDS || 20 + (size_t)words * 4 > n ||
	    len % XFS_BLF_CHUNK || chunks > (uint64_t)words * 32) {
		rs_add(&t->bufs, start, len);
		return;
	}
	for (uint64_t c = 0; c <= (uint64_t)words * 32; c++) {
		int bit = c < (uint64_t)words * 32 && (le32(f + 20 + 4 * (c / 32)) >> (c % 32)) & 1;

		if (bit && c >= chunks) {
			/* A chunk past the buffer: not a map XFS wrote. */
			rs_add(&t->bufs, start, len);
			return;
		}
		if (bit) {
			run++;
			any = 1;
			continue;
		}
		if (run)
			rs_add(&t->bufs, start + (c - run) * XFS_BLF_CHUNK, run * XFS_BLF_CHUNK);
		run = 0;
	}
	if (!any)
		rs_add(&t->bufs, start, len);
}

/* Decode a complete item format region. */
static int decode_item(struct xlog *l, struct xtrans *t)
{
	const unsigned char *f = t->fmt;
	size_t n = t->fmt_len;
	const struct xfs_geo *g = l->g;
	unsigned type;

	t->cur_type = 0;
	if (n < 4)
		return 0;
	type = le16(f);
	t->cur_type = type;
	switch (type) {
	case XFS_LI_INODE: {
		uint32_t fields;
		uint64_t ino;
		unsigned rsn = RSN_INODE | RSN_JOURNAL;

		if (n >= 56)
			ino = le64(f + 16);
		else if (n >= 52)
			ino = le64(f + 12);	/* xfs_inode_log_format_32 */
		else
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: short inode item (%zu bytes)", n);
		fields = le32(f + 4);
		t->cur_fields = fields;
		if (fields & (XFS_ILOG_ADATA | XFS_ILOG_AEXT | XFS_ILOG_ABROOT))
			rsn |= RSN_XATTR;
		if (fields & (XFS_ILOG_DEXT | XFS_ILOG_DBROOT))
			rsn |= RSN_MAPPING;
		pend_ino(t, ino, rsn);
		return 0;
	}
	case XFS_LI_BUF: {
		uint16_t flags, len;
		int64_t blkno;

		if (n < 16)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: short buffer item");
		flags = le16(f + 4);
		len = le16(f + 6);
		blkno = (int64_t)le64(f + 8);
		t->cur_blft = flags & XFS_BLF_CANCEL ? XFS_BLFT_MASK :
			      (unsigned)(flags >> XFS_BLFT_SHIFT) & XFS_BLFT_MASK;
		/* A cancelled buffer was freed: nothing is written home. */
		if (!(flags & XFS_BLF_CANCEL) && blkno >= 0 && len)
			buf_ranges(t, f, n, (uint64_t)blkno * BB, (uint64_t)len * BB);
		return 0;
	}
	case XFS_LI_ICREATE: {
		uint64_t agno, agbno, length;

		if (n < 24)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: short inode-create item");
		agno = be32(f + 4);
		agbno = be32(f + 8);
		length = be32(f + 20);
		if (agno < g->agcount && agbno < g->agblocks && length <= g->agblocks - agbno)
			rs_add(&t->bufs, (agno * g->agblocks + agbno) * g->bs, length * g->bs);
		return 0;
	}
	case XFS_LI_BUI: {
		uint32_t ne;

		if (n < 16)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: short bmap intent");
		ne = le32(f + 4);
		if ((uint64_t)ne * 32 + 16 > n)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: bmap intent with %u extents in %zu bytes",
				       ne, n);
		for (uint32_t i = 0; i < ne; i++)
			pend_ino(t, le64(f + 16 + 32 * i), RSN_INODE | RSN_MAPPING | RSN_JOURNAL);
		return 0;
	}
	case XFS_LI_ATTRI:
		if (n < 24)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: short attr intent");
		pend_ino(t, le64(f + 16), RSN_INODE | RSN_XATTR | RSN_JOURNAL);
		return 0;
	case XFS_LI_EFI: case XFS_LI_EFD: case XFS_LI_IUNLINK: case XFS_LI_DQUOT:
	case XFS_LI_QUOTAOFF: case XFS_LI_RUI: case XFS_LI_RUD: case XFS_LI_CUI:
	case XFS_LI_CUD: case XFS_LI_BUD: case XFS_LI_ATTRD:
		return 0;
	}
	return rx_fail(l->r, RX_FULL_SCAN, "XFS log: unknown log item type 0x%x", type);
}

enum { SCAN_NONE, SCAN_DIRDATA, SCAN_SHORTFORM };

static void push_val(struct xtrans *t, uint64_t v)
{
	/* Short-form scanning tries two values per byte: keep each once. */
	if (!v || !u64set_add(&t->vseen, v))
		return;
	xgrow((void **)&t->vals, &t->vcap, t->nvals + 1, sizeof(*t->vals));
	t->vals[t->nvals++] = v;
}

/*
 * The inode numbers a scanned region may hold.  Directory data blocks
 * (block, leaf and node form): entries are 8-byte aligned and begin with
 * the 64-bit inode number, and a logged region starts at a 128-byte chunk
 * of the block.  Short-form directories pack their entries with 4- or
 * 8-byte numbers at any offset: every offset counts.  Extra values only
 * cost false positives.
 */
static void scan_region(struct xtrans *t)
{
	const unsigned char *b = t->sbuf;

	if (t->scanning && test_hook("CHJ_RESOLVE_DEBUG"))
		fprintf(stderr, "xfslog: tid %08x: item type %#x blft %u fields %#x region %u: %zu bytes scanned (magic %08x owner %llu)\n",
			t->tid, t->cur_type, t->cur_blft, t->cur_fields, t->item_cnt, t->slen,
			t->slen >= 48 ? be32(b) : 0, t->slen >= 48 ? (unsigned long long)be64(b + 40) : 0ull);

	if (t->scanning == SCAN_DIRDATA) {
		for (size_t o = 0; o + 8 <= t->slen; o += 8)
			push_val(t, be64(b + o));
	} else if (t->scanning == SCAN_SHORTFORM) {
		for (size_t o = 0; o + 4 <= t->slen; o++) {
			push_val(t, be32(b + o));
			if (o + 8 <= t->slen)
				push_val(t, be64(b + o));
		}
	}
	t->scanning = SCAN_NONE;
	t->slen = 0;
}

static void scan_append(struct xtrans *t, const unsigned char *d, size_t len)
{
	size_t take = len;

	if (t->slen + take > SCAN_MAX)
		take = SCAN_MAX - t->slen;
	xgrow((void **)&t->sbuf, &t->scap, t->slen + take + 1, 1);
	memcpy(t->sbuf + t->slen, d, take);
	t->slen += take;
}

static int finish_region(struct xlog *l, struct xtrans *t)
{
	int rc = 0;

	scan_region(t);
	if (t->collecting)
		rc = decode_item(l, t);
	t->collecting = 0;
	t->fmt_len = 0;
	return rc;
}

static void collect(struct xtrans *t, const unsigned char *d, size_t len)
{
	size_t take = len;

	if (t->fmt_len + take > FMT_MAX)
		take = FMT_MAX - t->fmt_len;
	xgrow((void **)&t->fmt, &t->fmt_cap, t->fmt_len + take + 1, 1);
	memcpy(t->fmt + t->fmt_len, d, take);
	t->fmt_len += take;
}

static int region_start(struct xlog *l, struct xtrans *t, const unsigned char *d, size_t len)
{
	int rc;

	if (!len)
		return 0;
	rc = finish_region(l, t);
	if (rc)
		return rc;
	if (!t->have_hdr) {
		/* The transaction header, possibly split across records. */
		if (len > TRANS_HDR_LEN || (len >= 4 && le32(d) != XFS_TRANS_HEADER_MAGIC))
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: bad transaction header");
		t->hdr_len = (unsigned)len;
		t->have_hdr = len == TRANS_HDR_LEN;
		return 0;
	}
	if (t->item_cnt >= t->item_total) {
		/* First region of a new item: its format structure. */
		if (len < 4)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: item region of %zu bytes", len);
		t->item_total = le16(d + 2);
		t->item_cnt = 1;
		if (!t->item_total)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: item with no regions");
		t->collecting = 1;
		collect(t, d, len);
		return 0;
	}
	t->item_cnt++;
	/* Region 2 on of a directory data buffer; region 3 of an inode
	 * is its data fork when logged (after the format and the core). */
	if (t->cur_type == XFS_LI_BUF &&
	    (t->cur_blft == XFS_BLFT_DIR_DATA_BUF || t->cur_blft == XFS_BLFT_DIR_BLOCK_BUF ||
	     t->cur_blft == XFS_BLFT_UNKNOWN_BUF))
		t->scanning = SCAN_DIRDATA;
	else if (t->cur_type == XFS_LI_INODE && (t->cur_fields & XFS_ILOG_DDATA) &&
		 t->item_cnt == 3)
		t->scanning = SCAN_SHORTFORM;
	if (t->scanning)
		scan_append(t, d, len);
	return 0;
}

static void region_append(struct xtrans *t, const unsigned char *d, size_t len)
{
	if (!t->have_hdr) {
		t->hdr_len += (unsigned)len;
		if (t->hdr_len >= TRANS_HDR_LEN)
			t->have_hdr = 1;
		return;
	}
	if (t->collecting)
		collect(t, d, len);
	else if (t->scanning)
		scan_append(t, d, len);
}

static void emit_trans(struct xlog *l, struct xtrans *t)
{
	if (test_hook("CHJ_RESOLVE_DEBUG"))
		fprintf(stderr, "xfslog: tid %08x touched %d: %zu inodes (first %llu), %zu buffer ranges, %zu entry inode numbers\n",
			t->tid, t->touched, t->ninos,
			t->ninos ? (unsigned long long)t->inos[0].ino : 0ull, t->bufs.n, t->nvals);
	if (!t->touched)
		return;
	l->out->transactions++;
	for (size_t i = 0; i < t->ninos; i++)
		l->out->inode(l->out->ctx, t->inos[i].ino, t->inos[i].reasons);
	rs_normalize(&t->bufs);
	for (size_t i = 0; i < t->bufs.n; i++)
		l->out->range(l->out->ctx, t->bufs.v[i].start, t->bufs.v[i].len);
	if (t->nvals) {
		struct xlog_out *o = l->out;

		/* Each number once over the whole log (memory bounded by the
		 * distinct numbers, not by the bytes scanned). */
		for (size_t i = 0; i < t->nvals; i++) {
			if (!u64set_add(&o->entry_seen, t->vals[i]))
				continue;
			xgrow((void **)&o->entry_inos, &o->entry_cap, o->nentry_inos + 1,
			      sizeof(*o->entry_inos));
			o->entry_inos[o->nentry_inos++] = t->vals[i];
		}
	}
}

/* The ops of one unpacked record. */
static int record_ops(struct xlog *l, const unsigned char *dp, uint32_t len, uint32_t nops,
		      int touched)
{
	const unsigned char *end = dp + len;
	int rc;

	while (dp < end && nops--) {
		uint32_t tid, olen;
		unsigned flags;
		struct xtrans *t;

		if (end - dp < 12)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: op header overruns its record");
		tid = be32(dp);
		olen = be32(dp + 4);
		flags = dp[9];
		dp += 12;
		if (olen > (uint32_t)(end - dp))
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: op overruns its record");
		t = find_trans(l, tid);
		if (!t) {
			/* Ops of a transaction begun before the parse
			 * start: it began before the epoch, skip them. */
			if (flags & XLOG_START_TRANS) {
				t = xcalloc(1, sizeof(*t));
				t->tid = tid;
				t->touched = touched;
				rs_init(&t->bufs);
				t->next = l->trans;
				l->trans = t;
			}
			dp += olen;
			continue;
		}
		flags &= ~XLOG_END_TRANS;
		if (flags & XLOG_WAS_CONT_TRANS)
			flags &= ~XLOG_CONTINUE_TRANS;
		switch (flags) {
		case 0:
		case XLOG_CONTINUE_TRANS:
			rc = region_start(l, t, dp, olen);
			break;
		case XLOG_WAS_CONT_TRANS:
			region_append(t, dp, olen);
			rc = 0;
			break;
		case XLOG_COMMIT_TRANS:
			rc = finish_region(l, t);
			if (!rc)
				emit_trans(l, t);
			free_trans(l, t);
			break;
		case XLOG_UNMOUNT_TRANS:
			free_trans(l, t);
			rc = 0;
			break;
		default:
			rc = rx_fail(l->r, RX_FULL_SCAN, "XFS log: op flags 0x%x", flags);
		}
		if (rc)
			return rc;
		dp += olen;
	}
	return 0;
}

/* Read n basic blocks of the log starting at block b, wrapping. */
static int read_bbs(struct xlog *l, uint64_t b, uint64_t n, unsigned char *buf)
{
	while (n) {
		uint64_t k = b + n > l->bbs ? l->bbs - b : n;

		if (raw_read(l->r, buf, k * BB, l->g->log_start + b * BB))
			return -1;
		buf += k * BB;
		n -= k;
		b = (b + k) % l->bbs;
	}
	return 0;
}

struct rechdr {
	uint32_t cycle, version, len, crc, nops, fmt, size, prev;
	uint64_t lsn, tail_lsn;
	unsigned hblks;
};

/* Parse and sanity-check the record header at log block b; 0 if valid. */
static int parse_hdr(struct xlog *l, const unsigned char *h, uint64_t b, struct rechdr *rh)
{
	if (be32(h) != XLOG_MAGIC)
		return -1;
	rh->cycle = be32(h + 4);
	rh->version = be32(h + 8);
	rh->len = be32(h + 12);
	rh->lsn = be64(h + 16);
	rh->tail_lsn = be64(h + 24);
	rh->crc = le32(h + 32);
	rh->prev = be32(h + 36);
	rh->nops = be32(h + 40);
	rh->fmt = be32(h + 300);
	rh->size = be32(h + 320);
	if (!(rh->version & 3) || (rh->version & ~3u) || rh->len > XLOG_MAX_RECORD ||
	    (uint64_t)rh->len / BB + 1 >= l->bbs || rh->lsn >> 32 != rh->cycle ||
	    (rh->lsn & 0xffffffffu) != b || memcmp(h + 304, l->g->uuid, 16))
		return -1;
	rh->hblks = 1;
	if ((rh->version & 2) && rh->size > XLOG_CYCLE_SIZE) {
		if (rh->size > XLOG_MAX_RECORD)
			return -1;
		rh->hblks = (rh->size + XLOG_CYCLE_SIZE - 1) / XLOG_CYCLE_SIZE;
	}
	/* Enough extension headers for the data's cycle words. */
	if ((rh->len + BB - 1) / BB > (uint64_t)rh->hblks * (XLOG_CYCLE_SIZE / BB))
		return -1;
	return 0;
}

/*
 * Read the whole record at log block b into l->rec (headers, then data),
 * check its CRC (v5) and restore the cycle words.  0 if valid.
 */
static int record_valid(struct xlog *l, unsigned char *rec, const struct rechdr *rh, uint64_t dbbs);

static int read_record(struct xlog *l, uint64_t b, struct rechdr *rh)
{
	unsigned char *rec = l->rec;
	uint64_t dbbs;

	if (read_bbs(l, b, 1, rec) || parse_hdr(l, rec, b, rh))
		return -1;
	dbbs = (rh->len + BB - 1) / BB;
	l->out->read_bytes += (rh->hblks + dbbs) * BB;
	if (read_bbs(l, b, rh->hblks + dbbs, rec))
		return -1;
	if (record_valid(l, rec, rh, dbbs)) {
		l->failed_bytes += (rh->hblks + dbbs) * BB;
		if (l->failed_bytes > l->fail_budget)
			l->over = 1;
		return -1;
	}
	return 0;
}

/* The CRC (v5) of the record read into rec; its cycle words restored. */
static int record_valid(struct xlog *l, unsigned char *rec, const struct rechdr *rh, uint64_t dbbs)
{
	unsigned char *dp;

	dp = rec + (size_t)rh->hblks * BB;
	if (l->g->crc) {
		unsigned xheads = (rh->len + XLOG_CYCLE_SIZE - 1) / XLOG_CYCLE_SIZE;
		size_t o;
		int ok = 0;

		for (int pass = 0; pass < 2 && !ok; pass++) {
			unsigned hs = pass ? XLOG_REC_SIZE_OTHER : XLOG_REC_SIZE;

			o = 0;
			memcpy(l->crcbuf, rec, hs);
			memset(l->crcbuf + 32, 0, 4);
			o = hs;
			for (unsigned i = 1; i < xheads && i < rh->hblks; i++) {
				memcpy(l->crcbuf + o, rec + (size_t)i * BB, XLOG_EXT_HDR_SIZE);
				o += XLOG_EXT_HDR_SIZE;
			}
			memcpy(l->crcbuf + o, dp, rh->len);
			o += rh->len;
			ok = chj_crc32c(l->crcbuf, o) == rh->crc;
		}
		if (!ok)
			return -1;
	}
	/* Restore the first word of every data block. */
	for (uint64_t i = 0; i < dbbs; i++) {
		uint64_t j = i / (XLOG_CYCLE_SIZE / BB), k = i % (XLOG_CYCLE_SIZE / BB);
		const unsigned char *src = j ? rec + j * BB + 4 + 4 * k : rec + 44 + 4 * k;

		memcpy(dp + i * BB, src, 4);
	}
	return 0;
}

static int record_touched(struct xlog *l, uint64_t b, const struct rechdr *rh)
{
	uint64_t n = rh->hblks + (rh->len + BB - 1) / BB;

	if (b + n <= l->bbs)
		return rs_overlaps(l->changed, l->g->log_start + b * BB, n * BB);
	return rs_overlaps(l->changed, l->g->log_start + b * BB, (l->bbs - b) * BB) ||
	       rs_overlaps(l->changed, l->g->log_start, (b + n - l->bbs) * BB);
}

struct cand {
	uint64_t lsn, b;
	uint64_t d;		/* distance from the changed run's start */
	int state;		/* 0 not read yet, 1 a record, -1 not one */
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return (x->lsn < y->lsn) - (x->lsn > y->lsn);	/* newest first */
}

static int cmp_cand_d(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a, *y = *(const struct cand *const *)b;

	return (x->d > y->d) - (x->d < y->d);
}

/* Is candidate c a record (read once; 0 if so, its header in *rh)? */
static int cand_record(struct xlog *l, struct cand *c, struct rechdr *rh)
{
	if (c->state < 0 || l->over)
		return -1;
	if (read_record(l, c->b, rh)) {
		c->state = -1;
		return -1;
	}
	c->state = 1;
	return 0;
}

/*
 * Where the blocks written since the epoch begin: the changed log blocks
 * form one circular run (the log is written sequentially), which starts
 * after the largest unchanged gap.  -1 if no log block is unchanged (the
 * log may have wrapped since the epoch).
 */
static int64_t arc_start(struct xlog *l)
{
	const struct rangeset *c = l->changed;
	uint64_t ls = l->g->log_start, le = ls + l->g->log_bytes;
	uint64_t prev_end = 0, first = 0, best_gap = 0, best = 0, total = 0;
	int any = 0;

	for (size_t i = rs_find(c, ls); i < c->n && c->v[i].start < le; i++) {
		uint64_t a = c->v[i].start > ls ? c->v[i].start : ls;
		uint64_t e = c->v[i].start + c->v[i].len < le ? c->v[i].start + c->v[i].len : le;

		a = (a - ls) / BB;
		e = (e - ls + BB - 1) / BB;
		total += e - a;
		if (!any) {
			first = a;
			any = 1;
		} else if (a - prev_end > best_gap) {
			best_gap = a - prev_end;
			best = a;
		}
		prev_end = e;
	}
	if (!any || total >= l->bbs)
		return -1;
	/* The gap that wraps from the last run around to the first. */
	if (l->bbs - prev_end + first >= best_gap) {
		best_gap = l->bbs - prev_end + first;
		best = first;
	}
	return best_gap ? (int64_t)best : -1;
}

/* The record headers in changed log blocks (read in 1 MiB pieces), as
 * candidates in *cv: the newest is the head.  RX_OK or the read's error. */
static int changed_headers(struct xlog *l, unsigned char *chunk, struct cand **cv, size_t *nc)
{
	const struct xfs_geo *g = l->g;
	const struct rangeset *changed = l->changed;
	uint64_t lend = g->log_start + g->log_bytes;
	size_t ccap = 0;
	struct rechdr rh;

	for (size_t i = rs_find(changed, g->log_start);
	     i < changed->n && changed->v[i].start < lend; i++) {
		uint64_t a = changed->v[i].start > g->log_start ? changed->v[i].start : g->log_start;
		uint64_t e = changed->v[i].start + changed->v[i].len;

		if (e > lend)
			e = lend;
		a = (a - g->log_start) / BB;
		e = (e - g->log_start + BB - 1) / BB;
		for (uint64_t b = a; b < e;) {
			uint64_t n = e - b > (1u << 20) / BB ? (1u << 20) / BB : e - b;

			if (read_bbs(l, b, n, chunk))
				return l->r->err_code;
			for (uint64_t k = 0; k < n; k++) {
				const unsigned char *h = chunk + k * BB;

				if (be32(h) == XLOG_MAGIC && !parse_hdr(l, h, b + k, &rh)) {
					xgrow((void **)cv, &ccap, *nc + 1, sizeof(**cv));
					(*cv)[*nc] = (struct cand){ .lsn = rh.lsn, .b = b + k };
					(*nc)++;
				}
			}
			b += n;
		}
	}
	return RX_OK;
}

/*
 * The first record of the changed run (nearest the run's start first,
 * without reading the others): 1 and *p0b, *p0_lsn.  A record header
 * nearer the run's start that cannot be read hides what it carried: then
 * l->incomplete (nothing is left out later).
 */
static int run_start(struct xlog *l, struct cand *cv, size_t nc, const struct rechdr *head,
		     uint64_t *p0b, uint64_t *p0_lsn)
{
	int64_t arc = arc_start(l);
	struct cand **byd;
	struct rechdr rh;
	int have = 0;

	l->arc = arc;
	if (arc < 0)
		return 0;
	byd = xmalloc(nc * sizeof(*byd));
	for (size_t i = 0; i < nc; i++) {
		cv[i].d = (cv[i].b + l->bbs - (uint64_t)arc) % l->bbs;
		byd[i] = &cv[i];
	}
	qsort(byd, nc, sizeof(*byd), cmp_cand_d);
	for (size_t i = 0; i < nc && !have && !l->over; i++) {
		if (byd[i]->lsn <= head->lsn && !cand_record(l, byd[i], &rh)) {
			*p0b = byd[i]->b;
			*p0_lsn = byd[i]->lsn;
			have = 1;
		} else {
			/* A header nearer the start that is not a record (or a
			 * newer one than the head). */
			l->incomplete = 1;
		}
	}
	free(byd);
	return have;
}

/* From block startb (lsn start_lsn) to the head, record by record, each
 * record's ops parsed (all of them from the run's first record on). */
static int parse_to_head(struct xlog *l, uint64_t startb, uint64_t start_lsn, uint64_t headb,
			 const struct rechdr *head, int have_p0)
{
	struct resolver *r = l->r;
	struct rechdr rh;
	uint64_t b = startb, steps;
	int rc;

	for (steps = 0; steps <= l->bbs; steps++) {
		if (read_record(l, b, &rh))
			return rx_fail(r, RX_FULL_SCAN, "XFS log: unreadable record at block %llu before the head",
				       (unsigned long long)b);
		if (rh.lsn > head->lsn || rh.lsn < start_lsn)
			return rx_fail(r, RX_FULL_SCAN, "XFS log: record at block %llu out of sequence",
				       (unsigned long long)b);
		l->out->records++;
		rc = record_ops(l, l->rec + (size_t)rh.hblks * BB, rh.len, rh.nops,
				have_p0 || record_touched(l, b, &rh));
		if (rc)
			return rc;
		if (b == headb)
			return RX_OK;
		b = (b + rh.hblks + (rh.len + BB - 1) / BB) % l->bbs;
	}
	return rx_fail(r, RX_FULL_SCAN, "XFS log: the head was not reached from the tail");
}

/*
 * A live log: every record read was CRC-checked and in sequence, so one
 * overwritten while read already ended the run in exit 3.  The head read
 * again must be the same record: if the log went a whole lap meanwhile,
 * what was read may be a mix of laps.  Then the transactions not
 * committed yet count as well, when touched.
 */
static int head_recheck(struct xlog *l, uint64_t headb, const struct rechdr *head)
{
	struct xlog_out *out = l->out;
	struct rechdr rh;
	int rc;

	if (out->before_head_reread)
		out->before_head_reread(out->ctx, l->g->log_start + headb * BB);
	if (read_record(l, headb, &rh) || rh.lsn != head->lsn)
		return rx_fail(l->r, RX_FULL_SCAN, "XFS log: the head moved a whole lap during the scan");
	for (struct xtrans *t = l->trans; t; t = t->next) {
		rc = finish_region(l, t);
		if (rc)
			return rc;
		emit_trans(l, t);
	}
	return RX_OK;
}

/* An LSN as a place in the log's sequence of blocks (cycles of bbs). */
static uint64_t lsn_pos(const struct xlog *l, uint64_t lsn)
{
	return (lsn >> 32) * l->bbs + (lsn & 0xffffffffu);
}

/*
 * The tail as of the change map, when it is an older start than the head
 * record's tail (the whole log changed, no run to start from): records
 * between the two held changes written home since the map was read, into
 * no mark; their records still tell (lapped_since_map checks they are
 * still there).  *startb and *start_lsn moved there; else unchanged.
 */
static void start_at_map_tail(struct xlog *l, const struct rechdr *head, uint64_t *startb,
			      uint64_t *start_lsn)
{
	const struct xlog_out *out = l->out;
	uint64_t t = out->map_tail;

	/* Only a tail in the log, at most a lap behind the head then. */
	if (!out->map_known || (t & 0xffffffffu) >= l->bbs || t > out->map_head ||
	    lsn_pos(l, out->map_head) - lsn_pos(l, t) >= l->bbs || t >= head->tail_lsn)
		return;
	*startb = t & 0xffffffffu;
	*start_lsn = t;
}

/*
 * The change map was read with the log's head at map_head.  The records
 * since the epoch that it marks lie from the changed run's start (l->arc)
 * up to map_head: da blocks.  The kernel went on writing from map_head,
 * into no mark; once it went bbs - da blocks, it wrote over the run's
 * start, and what the scan read there (all of the run, after a little
 * more) is a later lap: records the marks do not cover in place of those
 * they do, as well-formed and in sequence, so nothing in them tells.
 * Hence the head read again after the scan, compared with map_head: from
 * a run, the head must have gone less than bbs - da; from a tail (the
 * whole log changed), less than a lap past it.  Else exit 3.  RX_OK when
 * the map's log position is not known (as before: the check is not made).
 */
static int lapped_since_map(struct xlog *l, const struct rechdr *head, int have_p0,
			    uint64_t start_lsn)
{
	struct xlog_out *out = l->out;
	uint64_t now = head->lsn, np, mp, da;

	if (!out->map_known)
		return RX_OK;
	if ((out->map_head & 0xffffffffu) >= l->bbs)
		return rx_fail(l->r, RX_FULL_SCAN, "XFS log: the head when the change map was read (%llx) is not in the log",
			       (unsigned long long)out->map_head);
	if (out->now_head) {
		uint64_t h;

		if (out->now_head(out->ctx, &h))
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: its head cannot be read again after the scan");
		if (h > now)
			now = h;
	}
	/*
	 * The kernel's head is where its next log buffer goes, but the one
	 * it points at may be on disk already (seen: after a freeze, a record
	 * at the head's block): the blocks written reach up to one record
	 * further.
	 */
	np = lsn_pos(l, now) + XLOG_MAX_RECORD / BB + 8;
	mp = lsn_pos(l, out->map_head);
	if (lsn_pos(l, now) < mp)
		return rx_fail(l->r, RX_FULL_SCAN, "XFS log: the head went back since the change map was read (%llx then, %llx now)",
			       (unsigned long long)out->map_head, (unsigned long long)now);
	if (have_p0 && l->arc >= 0) {
		da = ((out->map_head & 0xffffffffu) + l->bbs - (uint64_t)l->arc) % l->bbs;
		if (np - mp + da >= l->bbs)
			return rx_fail(l->r, RX_FULL_SCAN, "XFS log: the head went round to the changed log blocks since the change map was read (%llx then, %llx now): they may hold a later lap",
				       (unsigned long long)out->map_head, (unsigned long long)now);
	} else if (np - lsn_pos(l, start_lsn) >= l->bbs) {
		return rx_fail(l->r, RX_FULL_SCAN, "XFS log: the head went a lap past the tail since the change map was read (%llx then, %llx now)",
			       (unsigned long long)start_lsn, (unsigned long long)now);
	}
	return RX_OK;
}

static int log_over(struct xlog *l)
{
	return rx_fail(l->r, RX_FULL_SCAN, "XFS log: more header-shaped blocks that are not records than a log holds (%llu bytes tried in vain; damaged or crafted)",
		       (unsigned long long)l->failed_bytes);
}

/* The head (the newest readable record among the candidates), its checks,
 * the run's start, then the records up to the head. */
static int scan_from_head(struct xlog *l, struct cand *cv, size_t nc)
{
	struct resolver *r = l->r;
	struct xlog_out *out = l->out;
	struct rechdr head;
	uint64_t headb = 0, startb, start_lsn, p0b = 0, p0_lsn = 0;
	int rc, found = 0, have_p0;

	if (nc)
		qsort(cv, nc, sizeof(*cv), cmp_cand);
	for (size_t i = 0; i < nc && !found && !l->over; i++) {
		if (!cand_record(l, &cv[i], &head)) {
			found = 1;
			headb = cv[i].b;
		}
	}
	if (l->over)
		return log_over(l);
	/* Changed log blocks without a readable record: nothing new was
	 * logged there (a log wrap's zeroing), or it is torn. */
	if (!found)
		return nc ? rx_fail(r, RX_FULL_SCAN, "XFS log: no readable record among the changed log blocks") :
			    RX_OK;
	if (head.fmt != XLOG_FMT_LINUX_LE)
		return rx_fail(r, RX_FULL_SCAN, "XFS log written in another byte order (format %u)", head.fmt);
	out->head_lsn = head.lsn;
	out->tail_lsn = head.tail_lsn;
	startb = head.tail_lsn & 0xffffffffu;
	start_lsn = head.tail_lsn;
	if (startb >= l->bbs || head.tail_lsn > head.lsn)
		return rx_fail(r, RX_FULL_SCAN, "XFS log: tail %llx out of range",
			       (unsigned long long)head.tail_lsn);
	have_p0 = run_start(l, cv, nc, &head, &p0b, &p0_lsn);
	if (l->over)
		return log_over(l);
	if (have_p0) {
		startb = p0b;
		start_lsn = p0_lsn;
	} else {
		start_at_map_tail(l, &head, &startb, &start_lsn);
	}
	rc = parse_to_head(l, startb, start_lsn, headb, &head, have_p0);
	if (!rc)
		rc = head_recheck(l, headb, &head);
	/* After every read: what was read is what the map covers. */
	if (!rc)
		rc = lapped_since_map(l, &head, have_p0, start_lsn);
	if (rc)
		return rc;
	out->complete = have_p0 && !l->incomplete;
	if (test_hook("CHJ_RESOLVE_DEBUG"))
		fprintf(stderr, "xfslog: log %llu BBs, map head %llx tail %llx (known %d), arc start %lld, p0 %llu (lsn %llx), parse start %llu, tail %llx, head %llu (lsn %llx), %llu records, complete %d\n",
			(unsigned long long)l->bbs, (unsigned long long)out->map_head,
			(unsigned long long)out->map_tail, out->map_known, (long long)l->arc, (unsigned long long)p0b,
			(unsigned long long)p0_lsn, (unsigned long long)startb,
			(unsigned long long)head.tail_lsn, (unsigned long long)headb,
			(unsigned long long)head.lsn, (unsigned long long)out->records, out->complete);
	return RX_OK;
}

int xlog_scan(struct resolver *r, const struct xfs_geo *g, const struct rangeset *changed,
	      struct xlog_out *out)
{
	struct xlog l;
	struct cand *cv = NULL;
	size_t nc = 0;
	unsigned char *chunk;
	int rc;

	memset(&l, 0, sizeof(l));
	l.r = r;
	l.g = g;
	l.changed = changed;
	l.out = out;
	l.bbs = g->log_bytes / BB;
	l.fail_budget = 2 * g->log_bytes + 4 * ((uint64_t)XLOG_MAX_RECORD + 8 * BB);
	out->complete = 0;
	out->read_bytes = 0;
	l.rec = xmalloc((size_t)8 * BB + XLOG_MAX_RECORD + BB);
	l.crcbuf = xmalloc(XLOG_REC_SIZE + 8 * XLOG_EXT_HDR_SIZE + XLOG_MAX_RECORD);
	chunk = xmalloc(1u << 20);
	rc = changed_headers(&l, chunk, &cv, &nc);
	if (!rc)
		rc = scan_from_head(&l, cv, nc);
	while (l.trans)
		free_trans(&l, l.trans);
	free(cv);
	free(chunk);
	free(l.rec);
	free(l.crcbuf);
	return rc;
}
