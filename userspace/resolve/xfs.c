// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * XFS.
 *
 *  - The log (xfslog.c): the transactions written in changed log blocks
 *    name inodes and buffer ranges that may not be written home yet.
 *  - With the reverse-mapping btree (rmapbt=1): FS_IOC_GETFSMAP over each
 *    changed range (and each logged buffer range) names the owner of every
 *    byte: an inode's data fork (data, or directory blocks), its attribute
 *    fork (xattrs) or its block map (bmbt); inode chunks, whose inodes
 *    follow by arithmetic; the log; free space; AG metadata.  Reflinked
 *    extents have one record per owner.  Cost follows the changed set.
 *  - Without it: the namespace walk maps each file and directory with
 *    FIEMAP (data and attribute forks), and each walked inode's location
 *    follows from its number.  Changed bmbt blocks are in no file's
 *    extents: settle.c's row AT_UNMAPPED says why that is conservative.
 *  - Names: besides every path of every listed inode, the entries of the
 *    changed directories that may name another inode than at the epoch
 *    (entry_names): RENAME_EXCHANGE swaps two entries without writing
 *    either inode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bytes.h"
#include "libchj.h"
#include "resolve.h"
#include "store.h"
#include "xfs.h"

#define XFS_SB_MAGIC		0x58465342u
#define XFS_SB_VERSION_NUMBITS	0x000f
#define XFS_RO_RMAPBT		0x2u
#define XFS_RO_REFLINK		0x4u

#ifndef FMR_OWNER
#define FMR_OWNER(type, code)	(((__u64)(type) << 32) | ((__u64)(code) & 0xFFFFFFFFULL))
#endif
#define XFS_FMR_OWN_FS		FMR_OWNER('X', 1)
#define XFS_FMR_OWN_LOG		FMR_OWNER('X', 2)
#define XFS_FMR_OWN_AG		FMR_OWNER('X', 3)
#define XFS_FMR_OWN_INOBT	FMR_OWNER('X', 4)
#define XFS_FMR_OWN_INODES	FMR_OWNER('X', 5)
#define XFS_FMR_OWN_REFC	FMR_OWNER('X', 6)
#define XFS_FMR_OWN_COW		FMR_OWNER('X', 7)
#define XFS_FMR_OWN_DEFECTIVE	FMR_OWNER('X', 8)

static unsigned ilog2u(uint64_t v)
{
	unsigned l = 0;

	while (v >>= 1)
		l++;
	return l;
}

const char *xfs_parse_sb(const unsigned char *sb, struct xfs_geo *g)
{
	unsigned version = be16(sb + 100) & XFS_SB_VERSION_NUMBITS;
	uint64_t logstart = be64(sb + 48), inopblock;

	memset(g, 0, sizeof(*g));
	if (be32(sb) != XFS_SB_MAGIC)
		return "no XFS superblock";
	g->bs = be32(sb + 4);
	g->dblocks = be64(sb + 8);
	memcpy(g->uuid, sb + 32, 16);
	g->agblocks = be32(sb + 84);
	g->agcount = be32(sb + 88);
	g->isize = be16(sb + 104);
	inopblock = be16(sb + 106);
	g->agblklog = sb[124];
	g->inopblog = sb[123];
	if (g->bs < 512 || g->bs > 65536 || (g->bs & (g->bs - 1)) || sb[120] != ilog2u(g->bs))
		return "block size out of range";
	if (g->isize < 256 || g->isize > 2048 || (g->isize & (g->isize - 1)) ||
	    inopblock != g->bs / g->isize || g->inopblog != ilog2u(inopblock))
		return "inode size out of range";
	if (!g->agblocks || !g->agcount || g->agblklog > 31 ||
	    (1ull << g->agblklog) < g->agblocks || (1ull << g->agblklog) >= 2 * g->agblocks + 2 ||
	    g->dblocks > g->agblocks * g->agcount || !g->dblocks)
		return "allocation group geometry out of range";
	if (be64(sb + 16))
		return "it has a realtime device: data lives on another device";
	if (sb[126])
		return "mkfs did not finish";
	if (!logstart)
		return "its log is on another device: its changes are not tracked here";
	{
		uint64_t agno = logstart >> g->agblklog;
		uint64_t agbno = logstart & ((1ull << g->agblklog) - 1);
		uint64_t lb = be32(sb + 96);

		/* Sizes in bytes must not wrap: a crafted 2^48 blocks of
		 * 64 KiB would read as a tiny filesystem. */
		if (g->dblocks > UINT64_MAX / g->bs ||
		    g->agblocks * g->agcount > UINT64_MAX / g->bs ||
		    (g->agcount - 1) * g->agblocks >= g->dblocks)
			return "size out of range";
		if (agno >= g->agcount || agbno >= g->agblocks || !lb ||
		    lb > g->agblocks - agbno || agno * g->agblocks + agbno + lb > g->dblocks)
			return "log position out of range";
		g->log_start = (agno * g->agblocks + agbno) * g->bs;
		g->log_bytes = lb * g->bs;
	}
	g->fs_bytes = g->dblocks * g->bs;
	g->crc = version == 5;
	if (version == 5) {
		uint32_t ro = be32(sb + 212);

		g->rmapbt = !!(ro & XFS_RO_RMAPBT);
		g->reflink = !!(ro & XFS_RO_REFLINK);
	} else if (version != 4) {
		return "unknown superblock version";
	}
	return NULL;
}

uint64_t xfs_ino_to_byte(const struct xfs_geo *g, uint64_t ino)
{
	unsigned shift = g->agblklog + g->inopblog;
	uint64_t agno = ino >> shift, agino = ino & ((1ull << shift) - 1);
	uint64_t agbno = agino >> g->inopblog, slot = agino & ((1ull << g->inopblog) - 1);

	if (agno >= g->agcount || agbno >= g->agblocks)
		return UINT64_MAX;
	return (agno * g->agblocks + agbno) * g->bs + slot * g->isize;
}

uint64_t xfs_byte_to_ino(const struct xfs_geo *g, uint64_t off)
{
	uint64_t agbytes = g->agblocks * g->bs;
	uint64_t agno = off / agbytes, rem = off % agbytes;
	uint64_t agbno = rem / g->bs, slot = (rem % g->bs) / g->isize;

	return agno << (g->agblklog + g->inopblog) | agbno << g->inopblog | slot;
}

/* One "CYCLE:BLOCK" file of /sys/fs/xfs/NAME/log as an LSN; 0 or -1. */
static int sysfs_lsn(const char *name, const char *file, uint64_t *lsn)
{
	char p[512], buf[64];
	unsigned long long c, b;
	FILE *f;
	int ok;

	if (snprintf(p, sizeof(p), "/sys/fs/xfs/%s/log/%s", name, file) >= (int)sizeof(p))
		return -1;
	f = fopen(p, "re");
	if (!f)
		return -1;
	ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%llu:%llu", &c, &b) == 2 &&
	     c <= UINT32_MAX && b <= UINT32_MAX;
	fclose(f);
	if (!ok)
		return -1;
	*lsn = (uint64_t)c << 32 | b;
	return 0;
}

int xfs_log_state(dev_t devno, uint64_t *head, uint64_t *tail)
{
	char p[128], link[4096];
	const char *name;
	ssize_t n;

	/* The kernel's name of the device (loop0, dm-2): XFS's sysfs name. */
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", major(devno), minor(devno));
	n = readlink(p, link, sizeof(link) - 1);
	if (n <= 0)
		return -1;
	link[n] = 0;
	name = strrchr(link, '/');
	name = name ? name + 1 : link;
	if (!*name || sysfs_lsn(name, "log_head_lsn", head) || sysfs_lsn(name, "log_tail_lsn", tail))
		return -1;
	return 0;
}

/*
 * What XFS notes before the change map is read (r->method_state): where
 * the log was (head and tail LSNs, the kernel's).  The log blocks the map
 * can cover end there.  Log records the kernel writes later are in no
 * mark, and once the head goes round to the records the map does cover,
 * what the scan reads there is a later lap (xfslog.c).  known 0: not
 * mounted, or no /sys/fs/xfs.
 */
struct xfs_pre {
	uint64_t head, tail;
	int known;
};

struct xctx {
	struct resolver *r;
	struct xfs_geo g;
	struct rangeset chg;		/* changed in the fs, plus logged buffers */
	struct rangeset logbufs;	/* buffer ranges named by the log */
	struct rangeset fsmapped;	/* GETFSMAP records' ranges (rmapbt) */
	struct u64set seen;		/* non-rmap walk: inodes mapped */
	int log_complete;		/* every change since the epoch is in
					   what the log reported */
	uint64_t *entry_inos;		/* written into directory entries by
					   the log's transactions: sorted */
	size_t nentry_inos;
	struct store st;		/* the state store (store.c): entries */
	struct u64set st_dirs;		/* directories staged this run */
	struct u64set st_logged;	/* inodes logged in the current epoch */
};

static void log_inode(void *ctx, uint64_t ino, unsigned reasons)
{
	struct xctx *x = ctx;

	res_get(&x->r->res, 0, ino)->reasons |= reasons;
}

/* CHJ_RESOLVE_LOG_RACE: the log moved between its scan and the head's re-read. */
static void log_race(void *ctx, uint64_t head)
{
	(void)ctx;
	(void)head;
	test_log_race();
}

/* The log's head now (xlog_out.now_head): the kernel's, from sysfs. */
static int log_now(void *ctx, uint64_t *lsn)
{
	struct xctx *x = ctx;
	uint64_t tail;

	return xfs_log_state(x->r->devno, lsn, &tail);
}

static void log_range(void *ctx, uint64_t start, uint64_t len)
{
	struct xctx *x = ctx;

	if (start < x->g.fs_bytes)
		rs_add(&x->logbufs, start, len < x->g.fs_bytes - start ? len : x->g.fs_bytes - start);
}

/* Inodes whose slots overlap [a, b), known to be inside an inode chunk. */
static void chunk_inodes(struct xctx *x, uint64_t a, uint64_t b)
{
	uint64_t s = a - a % x->g.isize;

	for (; s < b; s += x->g.isize) {
		struct item *it;

		if (!rs_overlaps(&x->chg, s, x->g.isize))
			continue;
		it = res_get(&x->r->res, 0, xfs_byte_to_ino(&x->g, s));
		it->reasons |= RSN_INODE;
		if (rs_overlaps(&x->logbufs, s, x->g.isize))
			it->reasons |= RSN_JOURNAL;
	}
}

static void fsmap_rec(struct xctx *x, const struct fsmap *m, uint64_t qa, uint64_t qb)
{
	struct resolver *r = x->r;
	uint64_t a = m->fmr_physical > qa ? m->fmr_physical : qa;
	uint64_t b = m->fmr_physical + m->fmr_length < qb ? m->fmr_physical + m->fmr_length : qb;
	uint64_t dev_bytes;
	int at;

	if (b <= a || !rs_overlaps(&x->chg, a, b - a))
		return;
	rs_add(&x->fsmapped, a, b - a);
	dev_bytes = rs_overlap_bytes(&r->changed, a, b - a);
	if (m->fmr_flags & FMR_OF_SPECIAL_OWNER) {
		switch (m->fmr_owner) {
		case XFS_FMR_OWN_INODES:
			chunk_inodes(x, a, b);
			at = AT_INODES;
			break;
		case XFS_FMR_OWN_LOG:
			at = AT_JOURNAL;
			break;
		case FMR_OWN_FREE:
			at = AT_FREE;
			break;
		default:
			at = AT_META;
		}
		tally_add(&r->st.tally, at, dev_bytes);
		return;
	}
	{
		struct item *it = res_get(&r->res, 0, m->fmr_owner);

		if (m->fmr_flags & FMR_OF_ATTR_FORK) {
			it->reasons |= RSN_XATTR;
			at = AT_XATTR;
		} else if (m->fmr_flags & FMR_OF_EXTENT_MAP) {
			it->reasons |= RSN_MAPPING;
			at = AT_MAPPING;
		} else {
			it->reasons |= RSN_DATA;
			it->dbytes += dev_bytes;
			at = AT_DATA;
		}
		if (rs_overlaps(&x->logbufs, a, b - a))
			it->reasons |= RSN_JOURNAL;
		tally_add(&r->st.tally, at, dev_bytes);
	}
}

/*
 * With rmapbt every byte of the filesystem should have a GETFSMAP record
 * (free space too): a changed byte inside it that none covered is counted
 * (settle.c's AT_NOFSMAP row).
 */
static void fsmap_leftover(struct xctx *x)
{
	struct resolver *r = x->r;
	uint64_t fs = x->g.fs_bytes, bytes = 0, first = UINT64_MAX;

	rs_normalize(&x->fsmapped);
	for (size_t i = 0; i < r->changed.n && r->changed.v[i].start < fs; i++) {
		struct range c = r->changed.v[i];
		uint64_t len = c.len < fs - c.start ? c.len : fs - c.start;
		uint64_t left = len - rs_overlap_bytes(&x->fsmapped, c.start, len);

		if (left && first == UINT64_MAX)
			first = c.start;
		bytes += left;
	}
	tally_note(&r->st.tally, AT_NOFSMAP, bytes,
		   "%llu changed bytes of the XFS filesystem are in no GETFSMAP record (first in the range at byte %llu)",
		   (unsigned long long)bytes, (unsigned long long)first);
}

/*
 * Without rmapbt, what the walk found in no file's extents, no inode slot
 * and not the log (settle.c's AT_UNMAPPED says why it is conservative).
 * By the sums: the walk keeps no ranges.
 */
static void walk_leftover(struct xctx *x)
{
	struct tally *t = &x->r->st.tally;
	uint64_t known = 0;

	for (int a = 0; a < AT_NR; a++)
		if (a != AT_UNMAPPED)
			known += t->bytes[a];
	t->bytes[AT_UNMAPPED] = known < x->r->st.changed_bytes ? x->r->st.changed_bytes - known : 0;
}

#define FSMAP_BATCH 512

/* GETFSMAP over every range of x->chg.  1 if the kernel cannot do it. */
static int fsmap_pass(struct xctx *x)
{
	struct resolver *r = x->r;
	size_t sz = sizeof(struct fsmap_head) + FSMAP_BATCH * sizeof(struct fsmap);
	struct fsmap_head *h = xmalloc(sz);
	int rc = RX_OK;

	for (size_t i = 0; i < x->chg.n && !rc; i++) {
		uint64_t qa = x->chg.v[i].start, qb = qa + x->chg.v[i].len;

		memset(h, 0, sz);
		h->fmh_keys[0].fmr_device = (uint32_t)r->devno;
		h->fmh_keys[0].fmr_physical = qa;
		h->fmh_keys[1].fmr_device = (uint32_t)r->devno;
		h->fmh_keys[1].fmr_physical = qb - 1;
		h->fmh_keys[1].fmr_owner = UINT64_MAX;
		h->fmh_keys[1].fmr_offset = UINT64_MAX;
		h->fmh_keys[1].fmr_flags = UINT32_MAX;
		for (;;) {
			h->fmh_count = FSMAP_BATCH;
			h->fmh_entries = 0;
			if (ioctl(r->mnt_fd, FS_IOC_GETFSMAP, h)) {
				if (errno == ENOTTY || errno == EOPNOTSUPP)
					rc = 1;
				else
					rc = rx_fail(r, RX_ERROR, "GETFSMAP on %s: %s", r->mnt,
						     strerror(errno));
				break;
			}
			for (uint32_t k = 0; k < h->fmh_entries; k++)
				fsmap_rec(x, &h->fmh_recs[k], qa, qb);
			if (!h->fmh_entries || h->fmh_entries > FSMAP_BATCH ||
			    (h->fmh_recs[h->fmh_entries - 1].fmr_flags & FMR_OF_LAST))
				break;
			/* Continue after the last record. */
			h->fmh_keys[0] = h->fmh_recs[h->fmh_entries - 1];
		}
	}
	free(h);
	return rc;
}

/*
 * ---- the state store: directory entries (docs/resolve.md) ----
 *
 * Per directory D (the store's root column: D's inode number, never 0),
 * a header row (key 0: D's generation, so a reused inode number is
 * another directory) and one row per entry (key: a keyed hash of the
 * name; record: the name and the inode number it names).  An entry of a
 * listed directory is listed for its name (RSN_NAME) unless its header
 * and its (name, inode) are what they were at the start of the epoch
 * asked about.
 */

static uint64_t ent_key(struct xctx *x, uint64_t dir, const char *name, size_t len)
{
	uint8_t h[ST_HASH];

	store_hash(&x->st, dir, 0, name, len, h);
	return le64(h) | 1;	/* never the header's 0 */
}

static void ent_hash(struct xctx *x, uint64_t dir, uint64_t key, uint64_t ino, const char *name,
		     size_t len, uint8_t out[ST_HASH])
{
	unsigned char *b = xmalloc(len + 8);

	put_le64(b, ino);
	memcpy(b + 8, name, len);
	store_hash(&x->st, dir, key, b, len + 8, out);
	free(b);
}

/* The header of directory dir open as fd; -1 if its generation is unknown. */
static int hdr_hash(struct xctx *x, int fd, uint64_t dir, uint8_t out[ST_HASH])
{
	static const char tag[] = "xfs directory";
	unsigned char b[sizeof(tag) + 4];
	long v = 0;

	if (ioctl(fd, FS_IOC_GETVERSION, &v))
		return -1;
	memcpy(b, tag, sizeof(tag));
	put_le32(b + sizeof(tag), (uint32_t)v);
	store_hash(&x->st, dir, 0, b, sizeof(b), out);
	return 0;
}

static int stage_entries(const struct xctx *x)
{
	return x->st.db && x->st.update != ST_UPD_NONE;
}

/* Stage directory dir's header (once per run), dir open as fd. */
static void stage_dir(struct xctx *x, int fd, uint64_t dir)
{
	uint8_t h[ST_HASH];

	if (!u64set_add(&x->st_dirs, dir))
		return;
	if (!hdr_hash(x, fd, dir, h))
		store_stage(&x->st, dir, 0, 0, 0, ST_KNOWN, h);
	else
		store_stage(&x->st, dir, 0, 0, 0, ST_FREE, NULL);
}

static void stage_entry(struct xctx *x, uint64_t dir, const char *name, uint64_t ino)
{
	size_t len = strlen(name);
	uint64_t key = ent_key(x, dir, name, len);
	uint8_t h[ST_HASH];

	ent_hash(x, dir, key, ino, name, len, h);
	store_stage(&x->st, dir, key, 0, 0, ST_KNOWN, h);
}

/* The walk of a full update: every directory's entries, as read. */
static void stage_walked(struct xctx *x, const struct walk_entry *e)
{
	if (!e->rel[0] || x->st.update != ST_UPD_FULL || !x->st.db)
		return;
	stage_dir(x, e->dirfd, e->dir_ino);
	stage_entry(x, e->dir_ino, e->name, e->ino);
}

static int stage_visit(struct resolver *r, const struct walk_entry *e, void *ctx)
{
	(void)r;
	stage_walked(ctx, e);
	return 0;
}

/* Close the open rows of root whose key is not in keep (NULL: all). */
static int stage_gone(struct xctx *x, uint64_t root, const struct u64set *keep)
{
	uint64_t *k;
	size_t n;

	if (store_open_keys(&x->st, root, &k, &n))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!keep || (k[i] && !u64set_has(keep, k[i])))
			store_stage(&x->st, root, k[i], 0, 0, ST_FREE, NULL);
	free(k);
	return 0;
}

static void log_inode_now(void *ctx, uint64_t ino, unsigned reasons)
{
	struct xctx *x = ctx;

	(void)reasons;
	u64set_add(&x->st_logged, ino);
}

static void log_range_now(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	(void)start;
	(void)len;
}

/*
 * The epoch-start rule for entries read with getdents, after they were
 * read: syncfs() (every change a program could see before it is then in
 * the log, on the device, and so marked), then the current epoch's marks
 * over the log, and the transactions in those log blocks (xlog_scan, the
 * same rule as for the epoch asked about).  Every change of a directory's
 * entries logs the directory's inode (its mtime and ctime; RENAME_EXCHANGE
 * too): a directory whose inode no transaction since the checkpoint
 * logged had, when it was read, its entries of the epoch's start.  The
 * others are stored as unknown.  A log that may have wrapped since the
 * checkpoint, or that cannot be read: the store is not updated.
 * 0, or -1 with why.
 */
static int current_epoch_logged(struct xctx *x, char *why, size_t wlen)
{
	struct resolver *r = x->r;
	struct rangeset logr, marked;
	uint64_t map_head = 0, map_tail = 0;
	int rc = 0, map_known;

	if (syncfs(r->mnt_fd)) {
		snprintf(why, wlen, "syncfs: %s", strerror(errno));
		return -1;
	}
	rs_init(&logr);
	rs_init(&marked);
	rs_add(&logr, x->g.log_start, x->g.log_bytes);
	/* Where the log is before the marks are read (as for the map). */
	map_known = !xfs_log_state(r->devno, &map_head, &map_tail);
	if (target_epoch_marks(r, &logr, &marked)) {
		snprintf(why, wlen, "the current epoch's marks cannot be read (%s)", r->err);
		rc = -1;
	} else if (marked.n) {
		struct xlog_out lo = { .ctx = x, .inode = log_inode_now, .range = log_range_now,
				       .before_head_reread = log_race, .map_known = map_known,
				       .map_head = map_head, .map_tail = map_tail,
				       .now_head = log_now };

		if (xlog_scan(r, &x->g, &marked, &lo)) {
			snprintf(why, wlen, "the log since the checkpoint cannot be read (%s)", r->err);
			rc = -1;
		} else if (!lo.complete) {
			snprintf(why, wlen, "the log may have wrapped since the checkpoint");
			rc = -1;
		}
		u64set_free(&lo.entry_seen);
		free(lo.entry_inos);
	}
	rs_free(&logr);
	rs_free(&marked);
	return rc;
}

/* Bring the store to the current epoch (after entry_names). */
static void xstore_update(struct xctx *x)
{
	struct resolver *r = x->r;
	struct store *st = &x->st;
	char why[1200];

	if (!stage_entries(x))
		return;
	memcpy(st->saved_err, r->err, sizeof(r->err));
	st->saved_code = r->err_code;
	if (current_epoch_logged(x, why, sizeof(why))) {
		fprintf(stderr, "chj-resolve: warning: state store not updated: %s\n", why);
		snprintf(st->why + strlen(st->why), sizeof(st->why) - strlen(st->why),
			 "; not updated");
		/* Not the run's failure: the answer does not depend on it. */
		memcpy(r->err, st->saved_err, sizeof(r->err));
		r->err_code = st->saved_code;
		return;
	}
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].kind == ST_KNOWN && u64set_has(&x->st_logged, st->v[i].root)) {
			st->v[i].kind = ST_UNKNOWN;
			st->marked++;
		}
	store_commit(st);
}

/* ---- without rmapbt: FIEMAP during the walk ---- */

static int seen_before(struct xctx *x, uint64_t ino)
{
	return !u64set_add(&x->seen, ino);
}

static void map_fork(struct xctx *x, int fd, const struct walk_entry *e, int xattr)
{
	struct resolver *r = x->r;
	struct fext *v = NULL;
	size_t n = 0;

	if (fiemap_get(fd, xattr, &v, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		struct item *it;
		uint64_t dev_bytes;

		if (v[i].flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC)) {
			/* Written after the sync: not ours, but say so. */
			it = res_get(&r->res, 0, e->ino);
			it->reasons |= xattr ? RSN_XATTR : RSN_DATA;
			continue;
		}
		if (!rs_overlaps(&x->chg, v[i].physical, v[i].len))
			continue;
		dev_bytes = rs_overlap_bytes(&r->changed, v[i].physical, v[i].len);
		it = res_get(&r->res, 0, e->ino);
		if (xattr) {
			it->reasons |= RSN_XATTR;
			tally_add(&r->st.tally, AT_XATTR, dev_bytes);
		} else {
			it->reasons |= RSN_DATA;
			it->dbytes += dev_bytes;
			tally_add(&r->st.tally, AT_DATA, dev_bytes);
		}
		if (rs_overlaps(&x->logbufs, v[i].physical, v[i].len))
			it->reasons |= RSN_JOURNAL;
	}
	free(v);
}

static int walk_visit(struct resolver *r, const struct walk_entry *e, void *ctx)
{
	struct xctx *x = ctx;
	uint64_t off = xfs_ino_to_byte(&x->g, e->ino);
	int fd;

	(void)r;
	stage_walked(x, e);
	if (off != UINT64_MAX && rs_overlaps(&x->chg, off, x->g.isize)) {
		struct item *it = res_get(&x->r->res, 0, e->ino);

		it->reasons |= RSN_INODE;
		if (rs_overlaps(&x->logbufs, off, x->g.isize))
			it->reasons |= RSN_JOURNAL;
	}
	if (e->type != FT_REG && e->type != FT_DIR)
		return 0;
	if (seen_before(x, e->ino))
		return 0;
	fd = openat(e->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC |
		    O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(e->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (path_gone(errno))
			return 0;	/* gone since its directory was read */
		if (errno == EWOULDBLOCK && e->type == FT_REG) {
			/*
			 * A lease another process holds (any user may take
			 * one on their own file): its extents cannot be read
			 * now, so every block of it counts as changed: the
			 * file is listed whole (and its --json range).
			 */
			struct item *it = res_get(&x->r->res, 0, e->ino);

			it->reasons |= RSN_DATA | RSN_MAPPING;
			it->type = FT_REG;
			x->r->st.unmapped++;
			return 0;
		}
		/* Its extents unknown: the changes in them would be dropped. */
		return rx_fail(x->r, RX_FULL_SCAN, "%s/%s: %s", x->r->mnt, e->rel, strerror(errno));
	}
	x->r->st.files_mapped++;
	map_fork(x, fd, e, 0);
	map_fork(x, fd, e, 1);
	close(fd);
	return 0;
}

/*
 * With the whole log since the epoch read, metadata written home since the
 * epoch but named by no transaction since then is the writeback of an
 * older change: XFS logs every change of an inode, a directory block or a
 * block map before writing it home.  File data and remote attribute
 * values are not logged: those always count.
 */
static int drop_writeback(const struct item *it)
{
	unsigned rs = it->reasons;

	if (rs & RSN_JOURNAL)
		return 0;
	if ((rs & RSN_XATTR) || ((rs & RSN_DATA) && it->type != FT_DIR))
		return 0;
	return 1;
}

/*
 * Drop the items that are only home write-backs of changes older than the
 * epoch (valid once the whole post-epoch log was read).  Counted when they
 * would have been listed: unnamed yet (before naming), or with a path.
 */
static void drop_writebacks(struct resolver *r, int before_naming)
{
	for (size_t i = 0; i < r->res.cap; i++) {
		struct item *it = r->res.tab[i];

		if (!it || !it->reasons || !drop_writeback(it))
			continue;
		if (before_naming || it->npaths)
			r->st.writeback_dropped++;
		item_drop(it);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;

	return (p > q) - (p < q);
}

static int entry_ino_logged(const struct xctx *x, uint64_t ino)
{
	size_t lo = 0, hi = x->nentry_inos;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (x->entry_inos[m] < ino)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < x->nentry_inos && x->entry_inos[lo] == ino;
}

static void name_entry(struct resolver *r, uint64_t ino, enum ftype type, const char *rel)
{
	struct item *it = res_get(&r->res, 0, ino);

	if (!it->reasons) {
		it->reasons = RSN_NAME;
		it->type = type;
		r->st.name_entries++;
	}
	item_add_path(it, rel);
}

/* Items by their first path, in rel_cmp order (for a dircur). */
static int item_path_cmp(const void *pa, const void *pb)
{
	const struct item *a = *(const struct item *const *)pa, *b = *(const struct item *const *)pb;

	return rel_cmp(a->paths[0], b->paths[0]);
}

/*
 * An entry can come to name another inode without that inode changing:
 * XFS's RENAME_EXCHANGE (xfs_cross_rename) of two files rewrites both
 * entries and neither inode (an ordinary rename sets the ctime of the
 * inode it moves).  So the entries of every listed directory are listed
 * too (the path only: the inode itself did not change), unless the entry's
 * inode number was written into no directory entry since the epoch: with
 * the whole log since the epoch read, that is every number in the logged
 * parts of directory blocks and short-form directories.  Without it, every
 * entry of a listed directory is listed.
 */
/* What entry_names carries from one directory to the next. */
struct entries {
	struct xctx *x;
	struct stat mst;		/* the mount's root: its st_dev */
	struct dircur cur;
	struct u64set keys;		/* the current directory's entry keys */
	struct held { uint64_t ino; enum ftype type; char *rel; } *held;
	size_t nh, hcap;		/* entries the store says are the same */
	char *rel;
	size_t rcap;
};

/* The listed directories' paths and inodes, in path order (so that one
 * cursor opens each directory once); the types of listed inodes not known
 * yet, told by lstat. */
static int listed_dirs(struct entries *en, char ***dirs, uint64_t **dino, size_t *nd)
{
	struct resolver *r = en->x->r;
	struct item **its = NULL;
	size_t ni = 0, icap = 0, dcap = 0;
	int rc = RX_OK;

	for (size_t i = 0; i < r->res.cap; i++) {
		struct item *it = r->res.tab[i];

		if (!it || !it->reasons || !it->npaths || it->root)
			continue;
		xgrow((void **)&its, &icap, ni + 1, sizeof(*its));
		its[ni++] = it;
	}
	if (ni > 1)
		qsort(its, ni, sizeof(*its), item_path_cmp);
	for (size_t i = 0; i < ni; i++) {
		struct item *it = its[i];
		struct stat st;

		if (it->type == FT_UNKNOWN) {
			if (!dircur_lstat(&en->cur, it->paths[0], &st))
				it->type = ftype_from_mode(st.st_mode);
			else if (!path_gone(errno)) {
				/* A directory's entries would go unlisted. */
				rc = rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, it->paths[0],
					     strerror(errno));
				break;
			}
		}
		if (it->type != FT_DIR)
			continue;
		xgrow((void **)dirs, &dcap, *nd + 1, sizeof(**dirs));
		*dino = xrealloc(*dino, dcap * sizeof(**dino));
		(*dino)[*nd] = it->ino;
		(*dirs)[(*nd)++] = xstrdup(it->paths[0]);
	}
	free(its);
	return rc;
}

/* One entry de of directory dir (path dl bytes): listed for its name,
 * held (the same as at the epoch's start, by the store), or neither (its
 * inode number written into no entry since the epoch). */
static void dir_entry(struct entries *en, const char *dir, size_t dl, uint64_t ino,
		      const struct dirent *de, int hdr_same, int incr)
{
	struct xctx *x = en->x;
	size_t nl = strlen(de->d_name);
	uint8_t h[ST_HASH];
	int same = 0;

	if ((hdr_same || incr) && !x->st.failed) {
		uint64_t key = ent_key(x, ino, de->d_name, nl);

		ent_hash(x, ino, key, de->d_ino, de->d_name, nl, h);
		if (incr) {
			store_stage(&x->st, ino, key, 0, 0, ST_KNOWN, h);
			u64set_add(&en->keys, key);
		}
		same = hdr_same && store_same(&x->st, ino, key, h);
	}
	if (x->log_complete && !entry_ino_logged(x, de->d_ino))
		return;
	xgrow((void **)&en->rel, &en->rcap, dl + nl + 2, 1);
	if (dl) {
		memcpy(en->rel, dir, dl);
		en->rel[dl] = '/';
		memcpy(en->rel + dl + 1, de->d_name, nl + 1);
	} else {
		memcpy(en->rel, de->d_name, nl + 1);
	}
	if (same) {
		/* Kept until the end: a lookup failing later means nothing
		 * the store said counts. */
		xgrow((void **)&en->held, &en->hcap, en->nh + 1, sizeof(*en->held));
		en->held[en->nh].ino = de->d_ino;
		en->held[en->nh].type = ftype_from_dtype(de->d_type);
		en->held[en->nh].rel = xstrdup(en->rel);
		en->nh++;
		return;
	}
	name_entry(x->r, de->d_ino, ftype_from_dtype(de->d_type), en->rel);
}

/* The entries of listed directory dir (inode ino). */
static int dir_entries(struct entries *en, const char *dir, uint64_t ino)
{
	struct xctx *x = en->x;
	struct resolver *r = x->r;
	int fd = dircur_open(&en->cur, dir, O_RDONLY | O_DIRECTORY);
	size_t dl = strlen(dir);
	uint8_t h[ST_HASH];
	struct dirent *de;
	struct stat st;
	int hdr_same, incr, rc = RX_OK;
	DIR *dp;

	if (fd < 0) {
		if (path_gone(errno))
			return RX_OK;	/* gone since: a change after the sync */
		return rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, dir, strerror(errno));
	}
	/* The directory itself, not another filesystem mounted there (its
	 * entries are listed under the mount point) or one that replaced it
	 * since. */
	if (fstat(fd, &st) || st.st_dev != en->mst.st_dev || st.st_ino != ino) {
		close(fd);
		return RX_OK;
	}
	/* Compared with the store: the directory as it was. */
	hdr_same = x->st.can_compare && !hdr_hash(x, fd, ino, h) && store_same(&x->st, ino, 0, h);
	/* Re-read for the store (an incremental update). */
	incr = stage_entries(x) && x->st.update == ST_UPD_INCR;
	if (incr) {
		stage_dir(x, fd, ino);
		u64set_clear(&en->keys);
	}
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		if (incr)
			stage_gone(x, ino, NULL);
		return RX_OK;
	}
	while ((errno = 0, de = readdir(dp)))
		if (de->d_name[0] != '.' ||
		    (de->d_name[1] && (de->d_name[1] != '.' || de->d_name[2])))
			dir_entry(en, dir, dl, ino, de, hdr_same, incr);
	if (errno)	/* entries not read: not listed */
		rc = rx_fail(r, RX_FULL_SCAN, "%s/%s: %s", r->mnt, dir, strerror(errno));
	closedir(dp);
	/* Entries gone since: their rows end. */
	if (incr && stage_gone(x, ino, &en->keys))
		x->st.failed = 1;
	return rc;
}

/*
 * An incremental update re-reads every directory changed since the
 * newest snapshot (all of them are listed); one that changed but was not
 * read (no path under the mount, gone, replaced) loses its rows.
 */
static void unread_dirs_gone(struct xctx *x)
{
	struct resolver *r = x->r;

	if (!stage_entries(x) || x->st.update != ST_UPD_INCR)
		return;
	for (size_t i = 0; i < r->res.cap; i++) {
		struct item *it = r->res.tab[i];

		if (!it || !(it->reasons & ~RSN_NAME) || it->root || u64set_has(&x->st_dirs, it->ino))
			continue;
		if (stage_gone(x, it->ino, NULL))
			x->st.failed = 1;
	}
}

static int entry_names(struct xctx *x)
{
	struct resolver *r = x->r;
	struct entries en = { .x = x };
	char **dirs = NULL;
	uint64_t *dino = NULL;
	size_t nd = 0;
	int rc;

	if (fstat(r->mnt_fd, &en.mst))
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	dircur_init(&en.cur, r->mnt_fd);
	rc = listed_dirs(&en, &dirs, &dino, &nd);
	for (size_t i = 0; i < nd && !rc; i++)
		rc = dir_entries(&en, dirs[i], dino[i]);
	for (size_t i = 0; i < en.nh; i++) {
		if (x->st.failed)
			name_entry(r, en.held[i].ino, en.held[i].type, en.held[i].rel);
		else
			r->st.name_same++;
		free(en.held[i].rel);
	}
	free(en.held);
	u64set_free(&en.keys);
	unread_dirs_gone(x);
	dircur_free(&en.cur);
	for (size_t i = 0; i < nd; i++)
		free(dirs[i]);
	free(dirs);
	free(dino);
	free(en.rel);
	return rc;
}

/* XFS_IOC_FSGEOMETRY_V1 (xfs_fs.h; not every system ships the header). */
struct xfs_geom_v1 {
	uint32_t blocksize, rtextsize, agblocks, agcount, logblocks, sectsize, inodesize, imaxpct;
	uint64_t datablocks, rtblocks, rtextents, logstart;
	unsigned char uuid[16];
	uint32_t sunit, swidth;
	int32_t version;
	uint32_t flags, logsectsize, rtsectsize, dirblocksize;
};
#define XFS_GEOM_V1 _IOR('X', 100, struct xfs_geom_v1)

/*
 * The size of the mounted filesystem from the kernel: after xfs_growfs the
 * on-disk primary superblock lags (the change sits in the log), and the new
 * allocation groups would be "outside the filesystem".  Only growth is
 * taken, and only with the same AG size, so the arithmetic stays that of
 * the superblock checked.
 */
static int mounted_geometry(struct xctx *x)
{
	struct resolver *r = x->r;
	struct xfs_geo *g = &x->g;
	struct xfs_geom_v1 m;

	memset(&m, 0, sizeof(m));
	if (ioctl(r->mnt_fd, XFS_GEOM_V1, &m))
		return rx_fail(r, RX_ERROR, "%s: XFS_IOC_FSGEOMETRY: %s", r->mnt, strerror(errno));
	if (m.blocksize != g->bs || m.agblocks != g->agblocks || m.datablocks < g->dblocks ||
	    m.agcount < g->agcount || m.datablocks > (uint64_t)m.agblocks * m.agcount ||
	    (uint64_t)(m.agcount - 1) * m.agblocks >= m.datablocks ||
	    (uint64_t)m.agblocks * m.agcount > UINT64_MAX / g->bs)
		return rx_fail(r, RX_FULL_SCAN, "%s: the mounted XFS geometry does not match its superblock",
			       r->dev_path);
	g->dblocks = m.datablocks;
	g->agcount = m.agcount;
	g->fs_bytes = g->dblocks * g->bs;
	return RX_OK;
}

/* The superblock, checked against the mounted geometry; the state store. */
static int xfs_geometry(struct xctx *x)
{
	struct resolver *r = x->r;
	struct xfs_geo *g = &x->g;
	unsigned char sb[512];
	char ident[256], u[37];
	const char *why;
	int rc;

	rc = raw_read(r, sb, sizeof(sb), 0);
	if (rc)
		return rc;
	why = xfs_parse_sb(sb, g);
	if (why)
		return rx_fail(r, RX_FULL_SCAN, "%s: XFS %s", r->dev_path, why);
	rc = mounted_geometry(x);
	if (rc)
		return rc;
	chj_uuid_str(r->chj_uuid, u);
	snprintf(ident, sizeof(ident), "xfs fs=%s chj=%s bs=%llu isz=%llu agblocks=%llu",
		 r->fs_uuid, u, (unsigned long long)g->bs, (unsigned long long)g->isize,
		 (unsigned long long)g->agblocks);
	store_open(r, &x->st, ident);
	if (g->fs_bytes > r->dev_bytes)
		return rx_fail(r, RX_FULL_SCAN, "%s: the XFS filesystem is larger than the device",
			       r->dev_path);
	return RX_OK;
}

/* The changed set inside the filesystem (x->chg); what is past it, tallied. */
static void xfs_changed(struct xctx *x)
{
	struct resolver *r = x->r;
	uint64_t fs = x->g.fs_bytes;

	for (size_t i = 0; i < r->changed.n; i++) {
		struct range c = r->changed.v[i];

		if (c.start < fs)
			rs_add(&x->chg, c.start, c.len < fs - c.start ? c.len : fs - c.start);
	}
	rs_normalize(&x->chg);
	rx_check_outside(r, fs, "XFS");
}

/* The log's transactions since the epoch: inodes, the buffer ranges they
 * name (added to x->chg), the inode numbers written into entries. */
static int xfs_read_log(struct xctx *x)
{
	struct resolver *r = x->r;
	struct xfs_geo *g = &x->g;
	const struct xfs_pre *pre = r->method_state;
	struct xlog_out lo = { .ctx = x, .inode = log_inode, .range = log_range,
			       .before_head_reread = log_race, .map_known = pre && pre->known,
			       .map_head = pre ? pre->head : 0, .map_tail = pre ? pre->tail : 0,
			       .now_head = log_now };
	int rc;

	/* No log block written since the epoch: no metadata changed. */
	x->log_complete = 1;
	if (!rs_overlaps(&x->chg, g->log_start, g->log_bytes))
		return RX_OK;
	rc = xlog_scan(r, g, &x->chg, &lo);
	u64set_free(&lo.entry_seen);
	x->entry_inos = lo.entry_inos;
	x->nentry_inos = lo.nentry_inos;
	if (rc)
		return rc;
	if (x->nentry_inos)
		qsort(x->entry_inos, x->nentry_inos, sizeof(*x->entry_inos), cmp_u64);
	x->log_complete = lo.complete;
	rs_normalize(&x->logbufs);
	r->st.journal_trans = lo.transactions;
	r->st.journal_blocks = rs_total(&x->logbufs) / g->bs;
	for (size_t i = 0; i < x->logbufs.n; i++)
		rs_add(&x->chg, x->logbufs.v[i].start, x->logbufs.v[i].len);
	rs_normalize(&x->chg);
	return RX_OK;
}

/* The owners of the changed bytes through GETFSMAP (rmapbt); *use_walk
 * when the walk must find them instead (no rmapbt, or no GETFSMAP). */
static int xfs_attribute(struct xctx *x, int *use_walk)
{
	struct resolver *r = x->r;
	int rc;

	*use_walk = !x->g.rmapbt;
	if (!*use_walk) {
		r->st.method = "XFS: GETFSMAP (rmapbt), inode-chunk arithmetic, log";
		rc = fsmap_pass(x);
		if (rc == 1) {
			*use_walk = 1;
			rc = RX_OK;
		}
		if (rc)
			return rc;
	}
	if (*use_walk) {
		r->st.method = "XFS: FIEMAP walk, inode arithmetic, log";
		r->st.tally.bytes[AT_JOURNAL] =
			rs_overlap_bytes(&r->changed, x->g.log_start, x->g.log_bytes);
	} else {
		fsmap_leftover(x);
	}
	return RX_OK;
}

/* Every path of the listed inodes (the walk attributes as it goes), the
 * entries of changed directories, the state store brought up to date. */
static int xfs_name(struct xctx *x, int use_walk)
{
	struct resolver *r = x->r;
	double t;
	int rc;

	/*
	 * With GETFSMAP every reason is known before naming: drop the
	 * write-backs of older changes now, so they cost no lookup.  The type
	 * is not known yet (0, never FT_DIR), so this drops only what the
	 * pass after naming would drop too.  The walk adds reasons as it goes:
	 * there only the pass after it may drop.
	 */
	if (!use_walk && x->log_complete)
		drop_writebacks(r, 1);
	t = now_sec();
	/* A full update of the state store reads every directory: a walk. */
	rc = use_walk ? walk_tree(r, walk_visit, x) :
	     resolve_names(r, stage_entries(x) && x->st.update == ST_UPD_FULL ? stage_visit : NULL, x);
	r->st.phase[PH_WALK] = now_sec() - t;
	if (rc)
		return rc;
	if (use_walk)
		walk_leftover(x);

	if (x->log_complete)
		drop_writebacks(r, 0);
	t = now_sec();
	rc = entry_names(x);
	r->st.phase[PH_WALK] += now_sec() - t;
	if (rc)
		return rc;
	xstore_update(x);
	store_describe(&x->st, r->st.state, sizeof(r->st.state));
	return RX_OK;
}

/* Directories' data as directory blocks, the counts, and (--json) the
 * files' ranges, in path order: one cursor. */
static int xfs_items(struct xctx *x)
{
	struct resolver *r = x->r;
	struct item **its = NULL;
	size_t ni = 0, icap = 0;
	struct dircur cur;
	int rc = RX_OK;

	for (size_t i = 0; i < r->res.cap; i++) {
		struct item *it = r->res.tab[i];

		if (!it || !it->reasons)
			continue;
		if (it->type == FT_DIR && (it->reasons & RSN_DATA)) {
			it->reasons = (it->reasons & ~RSN_DATA) | RSN_DIRECTORY;
			r->st.tally.bytes[AT_DATA] -= it->dbytes;
			r->st.tally.bytes[AT_DIR] += it->dbytes;
		}
		if ((it->reasons & ~RSN_JOURNAL) == RSN_INODE)
			r->st.itable_neighbours++;
		if (r->out_mode == 2 && it->type == FT_REG && it->npaths) {
			xgrow((void **)&its, &icap, ni + 1, sizeof(*its));
			its[ni++] = it;
		}
	}
	if (ni > 1)
		qsort(its, ni, sizeof(*its), item_path_cmp);
	dircur_init(&cur, r->mnt_fd);
	for (size_t i = 0; i < ni && !rc; i++)
		rc = fiemap_item_ranges(r, &cur, its[i], &x->chg,
					!!(its[i]->reasons & (RSN_INODE | RSN_MAPPING | RSN_JOURNAL)));
	dircur_free(&cur);
	free(its);
	return rc;
}

static int xfs_resolve_fs(struct xctx *x)
{
	struct resolver *r = x->r;
	double t;
	int rc, use_walk;

	rc = xfs_geometry(x);
	if (rc)
		return rc;
	xfs_changed(x);
	rc = xfs_read_log(x);
	if (!rc)
		rc = xfs_attribute(x, &use_walk);
	if (rc)
		return rc;
	r->st.phase[PH_ANALYZE] = now_sec() - r->t0 - r->st.phase[PH_SYNC] - r->st.phase[PH_MAP];
	rc = xfs_name(x, use_walk);
	if (rc)
		return rc;
	t = now_sec();
	rc = xfs_items(x);
	r->st.phase[PH_RANGES] = now_sec() - t;
	return rc;
}

static int xfs_resolve(struct resolver *r)
{
	struct xctx x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.r = r;
	rs_init(&x.chg);
	rs_init(&x.logbufs);
	rs_init(&x.fsmapped);
	rc = xfs_resolve_fs(&x);
	rs_free(&x.chg);
	rs_free(&x.logbufs);
	rs_free(&x.fsmapped);
	u64set_free(&x.seen);
	free(x.entry_inos);
	store_close(&x.st);
	u64set_free(&x.st_dirs);
	u64set_free(&x.st_logged);
	return rc;
}

static const char *const xfs_fstypes[] = { "xfs", NULL };

/*
 * Before the change map is read: where the log is (xfs_before_map).  chj-
 * resolve-test with a map from a file: the file is a map made earlier
 * (images of the device), so CHJ_RESOLVE_LOG_AT_MAP says where the log
 * was then ("HEAD TAIL", each CYCLE:BLOCK as in /sys/fs/xfs/NAME/log);
 * without it, where the log is now.
 */
static int xfs_before_map(struct resolver *r)
{
	const char *at = target_log_at_map();
	struct xfs_pre *p = xcalloc(1, sizeof(*p));
	unsigned long long hc, hb, tc, tb;

	r->method_state = p;
	if (!at) {
		p->known = !xfs_log_state(r->devno, &p->head, &p->tail);
		return RX_OK;
	}
	if (sscanf(at, "%llu:%llu %llu:%llu", &hc, &hb, &tc, &tb) != 4 || hc > UINT32_MAX ||
	    hb > UINT32_MAX || tc > UINT32_MAX || tb > UINT32_MAX)
		return rx_fail(r, RX_ERROR, "CHJ_RESOLVE_LOG_AT_MAP: not \"CYCLE:BLOCK CYCLE:BLOCK\": %s", at);
	p->head = (uint64_t)hc << 32 | hb;
	p->tail = (uint64_t)tc << 32 | tb;
	p->known = 1;
	return RX_OK;
}

const struct resolve_method xfs_method = {
	.name = "xfs",
	.fstypes = xfs_fstypes,
	.before_map = xfs_before_map,
	.resolve = xfs_resolve,
	.release = method_free_state,
};
