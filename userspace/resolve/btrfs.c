// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * btrfs (one device; single or DUP profiles).
 *
 *  1. Device offsets to logical addresses through the chunk tree
 *     (BTRFS_IOC_TREE_SEARCH on tree 3).  Superblock copies are metadata;
 *     unallocated space is free.
 *  2. The extent tree over the changed logical ranges names the data
 *     extents and tree blocks there.  Each data extent's owners come from
 *     BTRFS_IOC_LOGICAL_INO_V2 (every reference: reflinks and snapshots
 *     included).
 *  3. Tree blocks: btrfs never writes one in place, so every leaf changed
 *     since the epoch is a current tree block written whole since then,
 *     and its generation is at least the smallest generation G of the tree
 *     blocks that lie entirely in changed regions.  Searching each
 *     subvolume tree with min_transid = G returns every item of every leaf
 *     written since the epoch (and maybe more): every inode with an item
 *     there is listed (inode, xattr, directory entries, extent items).
 *     That is leaf granularity; an inode there is dropped again when its
 *     inode item's transid is below L, the largest generation of a tree
 *     block that is not entirely in changed regions (so written before the
 *     epoch) and committed before the map was read: L is at most the
 *     transaction running at the checkpoint, and every change of an inode
 *     (data, size, mode, owner, times, links, xattrs, directory entries,
 *     extent items) rewrites its inode item with the current transid.
 *  4. Paths: each inode's references (INODE_REF / INODE_EXTREF items) give
 *     its parent directories and names, BTRFS_IOC_INO_LOOKUP the
 *     directories' paths, and the root tree's ROOT_BACKREF items where each
 *     subvolume sits: every link, in every subvolume visible under the
 *     mount.
 *
 * syncfs() commits the transaction: everything is written home then, and
 * the log tree (fsync) is not needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "libchj.h"
#include "resolve.h"
#include "store.h"

#define MAX_DATA_EXTENT		(128ull << 20)	/* BTRFS_MAX_EXTENT_SIZE */
#define SEARCH_BUF		(64u * 1024)
#define LINO_MAX		(16u << 20)
#define ITEM_HDR		sizeof(struct btrfs_ioctl_search_header)

struct stripe_map {
	uint64_t phys, logical, len, type;
};

struct dirpath {
	uint64_t root, ino;
	char *path;		/* relative to the top of the filesystem */
};

struct bctx {
	struct resolver *r;
	uint64_t devid, nodesize;
	uint64_t commit_gen;		/* the last commit before the change
					   map was read (btrfs_before_map) */
	struct stripe_map *sm;
	size_t nsm, smcap;
	struct rangeset lchg;		/* changed logical bytes */
	struct rangeset lchg_data;	/* of those, in data block groups */
	uint64_t *dext;			/* changed data extents (bytenr) */
	size_t ndext, dcap;
	uint64_t gen_min;		/* smallest generation of a whole
					   changed tree block; 0 = none */
	uint64_t gen_before;		/* L: largest generation of a tree
					   block written before the epoch */
	uint64_t filtered;		/* leaf neighbours dropped by L */
	uint64_t epoch_gen;		/* G: the last commit before the
					   checkpoint of epoch r->since, from
					   the state store; 0 = unknown */
	uint64_t filtered_gen;		/* of those, dropped by G alone */
	struct store st;		/* the state store: G per epoch */
	uint64_t mount_subvol;
	char *prefix;			/* mount root, relative to the top */
	struct dirpath *dp;
	size_t ndp, dpcap;
	struct htab dpidx;		/* dp's index by (root, dir) */
};

/* ---- TREE_SEARCH_V2 ---- */

typedef int (*item_fn)(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		       const unsigned char *data, void *ctx);

struct skey {
	uint64_t objectid, offset;
	uint32_t type;
};

/*
 * The n items of a search result in buf (buf_size bytes): a header each,
 * then its data.  The last header seen in *last.
 */
static int walk_items(struct bctx *b, const unsigned char *buf, size_t buf_size, uint32_t n,
		      item_fn fn, void *ctx, struct btrfs_ioctl_search_header *last)
{
	size_t off = 0;
	int rc = RX_OK;

	for (uint32_t i = 0; i < n && !rc; i++) {
		struct btrfs_ioctl_search_header h;

		if (ITEM_HDR > buf_size - off)
			return rx_fail(b->r, RX_ERROR, "btrfs tree search: item header overruns");
		memcpy(&h, buf + off, ITEM_HDR);
		off += ITEM_HDR;
		if (h.len > buf_size - off)
			return rx_fail(b->r, RX_ERROR, "btrfs tree search: item overruns");
		rc = fn(b, &h, buf + off, ctx);
		off += h.len;
		*last = h;
	}
	return rc;
}

/*
 * Every item of tree between min and max, newer than min_transid, to fn.
 * *gone (when not NULL) is set instead of failing when the kernel answers
 * ENOENT for the tree: a subvolume deleted but not yet cleaned up, whose
 * ROOT_ITEM (refs 0) the root tree still holds (btrfs_get_fs_root refuses
 * such a root; the cleaner drops the item later).
 */
static int tree_search_or_gone(struct bctx *b, uint64_t tree, struct skey min, struct skey max,
			       uint64_t min_transid, item_fn fn, void *ctx, bool *gone)
{
	struct resolver *r = b->r;
	/* Callbacks may search too: each search has its own buffer. */
	struct btrfs_ioctl_search_args_v2 *a = xmalloc(SEARCH_BUF);
	int rc = RX_OK;

	for (;;) {
		struct btrfs_ioctl_search_header last = { 0 };
		uint32_t n;

		memset(a, 0, sizeof(*a));
		a->key.tree_id = tree;
		a->key.min_objectid = min.objectid;
		a->key.min_type = min.type;
		a->key.min_offset = min.offset;
		a->key.max_objectid = max.objectid;
		a->key.max_type = max.type;
		a->key.max_offset = max.offset;
		a->key.min_transid = min_transid;
		a->key.max_transid = UINT64_MAX;
		a->key.nr_items = 4096;
		a->buf_size = SEARCH_BUF - sizeof(*a);
		if (ioctl(r->mnt_fd, BTRFS_IOC_TREE_SEARCH_V2, a)) {
			if (gone && errno == ENOENT) {
				*gone = true;
				break;
			}
			rc = rx_fail(r, RX_ERROR, "btrfs tree search (tree %llu): %s",
				     (unsigned long long)tree, strerror(errno));
			break;
		}
		n = a->key.nr_items;
		if (!n)
			break;
		/*
		 * buf's declared type changed between UAPI versions (__u64[]
		 * up to linux-libc-dev 6.1.176, __u8[] later): read it only
		 * through this byte pointer, so either header builds.
		 */
		rc = walk_items(b, (const unsigned char *)a->buf, a->buf_size, n, fn, ctx, &last);
		if (rc)
			break;
		/* Continue after the last key, in (objectid, type, offset) order. */
		min.objectid = last.objectid;
		min.type = last.type;
		min.offset = last.offset;
		if (min.offset < UINT64_MAX) {
			min.offset++;
		} else if (min.type < 255) {
			min.type++;
			min.offset = 0;
		} else if (min.objectid < UINT64_MAX) {
			min.objectid++;
			min.type = 0;
			min.offset = 0;
		} else {
			break;
		}
		if (min.objectid > max.objectid ||
		    (min.objectid == max.objectid && (min.type > max.type ||
		     (min.type == max.type && min.offset > max.offset))))
			break;
	}
	free(a);
	return rc;
}

static int tree_search(struct bctx *b, uint64_t tree, struct skey min, struct skey max,
		       uint64_t min_transid, item_fn fn, void *ctx)
{
	return tree_search_or_gone(b, tree, min, max, min_transid, fn, ctx, NULL);
}

/*
 * The items of one inode in subvolume tree root.  Inodes are found in
 * trees of subvolumes that may be deleted and not yet cleaned up: through
 * the extent tree's backrefs (a data extent shared with a deleted
 * snapshot, moved by a balance) or deleted during this run.  Such an inode
 * has no name left; *gone says so and the caller names nothing (the
 * directory that held the subvolume changed in its parent's tree and is
 * listed from there).
 */
static int inode_search(struct bctx *b, uint64_t root, struct skey min, struct skey max,
			item_fn fn, void *ctx, bool *gone)
{
	*gone = false;
	return tree_search_or_gone(b, root, min, max, 0, fn, ctx, gone);
}

/* ---- device and mount ---- */

static int check_device(struct bctx *b)
{
	struct resolver *r = b->r;
	struct btrfs_ioctl_fs_info_args fi;
	struct btrfs_ioctl_dev_info_args *di = xcalloc(1, sizeof(*di));
	int rc = RX_OK;

	memset(&fi, 0, sizeof(fi));
	if (ioctl(r->mnt_fd, BTRFS_IOC_FS_INFO, &fi)) {
		free(di);
		return rx_fail(r, RX_ERROR, "%s: BTRFS_IOC_FS_INFO: %s", r->mnt, strerror(errno));
	}
	if (fi.num_devices != 1) {
		free(di);
		return rx_fail(r, RX_FULL_SCAN, "the btrfs filesystem on %s spans %llu devices",
			       r->mnt, (unsigned long long)fi.num_devices);
	}
	b->nodesize = fi.nodesize;
	if (b->nodesize < 4096 || b->nodesize > 65536)
		rc = rx_fail(r, RX_ERROR, "btrfs node size %llu", (unsigned long long)b->nodesize);
	for (uint64_t id = 1; !rc && id <= fi.max_id && !b->devid; id++) {
		struct stat st;

		memset(di, 0, sizeof(*di));
		di->devid = id;
		if (ioctl(r->mnt_fd, BTRFS_IOC_DEV_INFO, di))
			continue;
		di->path[sizeof(di->path) - 1] = 0;
		if (!stat((char *)di->path, &st) && S_ISBLK(st.st_mode) && st.st_rdev == r->devno)
			b->devid = id;
		else
			rc = rx_fail(r, RX_FULL_SCAN, "the btrfs filesystem mounted on %s is on %s, not %s",
				     r->mnt, (char *)di->path, r->dev_path);
	}
	if (!rc && !b->devid)
		rc = rx_fail(r, RX_FULL_SCAN, "the btrfs filesystem mounted on %s is not on %s",
			     r->mnt, r->dev_path);
	free(di);
	return rc;
}

/* The path of directory objectid in tree (relative to that tree's root,
 * with a trailing '/' unless empty). */
static int ino_lookup(struct bctx *b, uint64_t tree, uint64_t objectid, char **out)
{
	struct btrfs_ioctl_ino_lookup_args a;

	memset(&a, 0, sizeof(a));
	a.treeid = tree;
	a.objectid = objectid;
	if (ioctl(b->r->mnt_fd, BTRFS_IOC_INO_LOOKUP, &a))
		return -1;
	a.name[sizeof(a.name) - 1] = 0;
	*out = xstrdup(a.name);
	return 0;
}

struct backref {
	uint64_t parent, dirid;
	char name[256];
	int found;
};

static int backref_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
			const unsigned char *d, void *ctx)
{
	struct backref *br = ctx;
	unsigned nl;

	(void)b;
	if (h->type != BTRFS_ROOT_BACKREF_KEY || h->len < 18 || br->found)
		return 0;
	nl = le16(d + 16);
	if (nl > 255 || 18u + nl > h->len)
		return 0;
	br->parent = h->offset;
	br->dirid = le64(d);
	memcpy(br->name, d + 18, nl);
	br->name[nl] = 0;
	br->found = 1;
	return 0;
}

/*
 * Path of subvolume tree's root relative to the top of the filesystem
 * (subvolume 5), with a trailing '/' unless empty; NULL if not reachable.
 */
static char *subvol_top(struct bctx *b, uint64_t tree, int depth)
{
	struct backref br = { 0 };
	struct skey lo = { tree, 0, BTRFS_ROOT_BACKREF_KEY };
	struct skey hi = { tree, UINT64_MAX, BTRFS_ROOT_BACKREF_KEY };
	char *pp, *dir, *out;

	if (tree == BTRFS_FS_TREE_OBJECTID)
		return xstrdup("");
	if (depth > 64 || tree_search(b, BTRFS_ROOT_TREE_OBJECTID, lo, hi, 0, backref_item, &br) ||
	    !br.found)
		return NULL;
	pp = subvol_top(b, br.parent, depth + 1);
	if (!pp)
		return NULL;
	if (ino_lookup(b, br.parent, br.dirid, &dir)) {
		free(pp);
		return NULL;
	}
	out = xmalloc(strlen(pp) + strlen(dir) + strlen(br.name) + 2);
	sprintf(out, "%s%s%s/", pp, dir, br.name);
	free(pp);
	free(dir);
	return out;
}

static int find_mount(struct bctx *b)
{
	struct resolver *r = b->r;
	struct btrfs_ioctl_ino_lookup_args a;
	struct stat st;
	char *top, *in = NULL;

	memset(&a, 0, sizeof(a));
	a.objectid = BTRFS_FIRST_FREE_OBJECTID;
	if (ioctl(r->mnt_fd, BTRFS_IOC_INO_LOOKUP, &a))
		return rx_fail(r, RX_ERROR, "%s: BTRFS_IOC_INO_LOOKUP: %s", r->mnt, strerror(errno));
	b->mount_subvol = a.treeid;
	if (fstat(r->mnt_fd, &st))
		return rx_fail(r, RX_ERROR, "%s: %s", r->mnt, strerror(errno));
	top = subvol_top(b, b->mount_subvol, 0);
	if (!top)
		top = xstrdup("?unreachable?/");
	/* A bind mount of a directory inside the subvolume. */
	if (st.st_ino != BTRFS_FIRST_FREE_OBJECTID && !ino_lookup(b, b->mount_subvol, st.st_ino, &in)) {
		b->prefix = xmalloc(strlen(top) + strlen(in) + 1);
		sprintf(b->prefix, "%s%s", top, in);
		free(in);
		free(top);
	} else {
		b->prefix = top;
	}
	return RX_OK;
}

/* ---- chunks: device offsets to logical addresses ---- */

static int chunk_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		      const unsigned char *d, void *ctx)
{
	uint64_t len, type;
	unsigned ns;

	(void)ctx;
	if (h->type != BTRFS_CHUNK_ITEM_KEY)
		return 0;
	if (h->len < 48)
		return rx_fail(b->r, RX_ERROR, "btrfs: short chunk item");
	len = le64(d);
	type = le64(d + 24);
	ns = le16(d + 44);
	if ((uint64_t)48 + 32 * ns > h->len || !ns)
		return rx_fail(b->r, RX_ERROR, "btrfs: chunk item with %u stripes in %u bytes", ns, h->len);
	if (type & BTRFS_BLOCK_GROUP_PROFILE_MASK & ~BTRFS_BLOCK_GROUP_DUP)
		return rx_fail(b->r, RX_FULL_SCAN,
			       "btrfs block group profile 0x%llx (only single and DUP are supported)",
			       (unsigned long long)(type & BTRFS_BLOCK_GROUP_PROFILE_MASK));
	for (unsigned i = 0; i < ns; i++) {
		const unsigned char *s = d + 48 + 32 * i;

		if (le64(s) != b->devid)
			return rx_fail(b->r, RX_FULL_SCAN, "btrfs chunk on another device");
		xgrow((void **)&b->sm, &b->smcap, b->nsm + 1, sizeof(*b->sm));
		b->sm[b->nsm].phys = le64(s + 8);
		b->sm[b->nsm].logical = h->offset;
		b->sm[b->nsm].len = len;
		b->sm[b->nsm].type = type;
		b->nsm++;
	}
	return 0;
}

static int map_changes(struct bctx *b)
{
	struct resolver *r = b->r;
	struct skey lo = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, 0, BTRFS_CHUNK_ITEM_KEY };
	struct skey hi = { BTRFS_FIRST_CHUNK_TREE_OBJECTID, UINT64_MAX, BTRFS_CHUNK_ITEM_KEY };
	static const uint64_t sbs[] = { 64ull << 10, 64ull << 20, 256ull << 30 };
	struct rangeset mapped;
	int rc;

	rc = tree_search(b, BTRFS_CHUNK_TREE_OBJECTID, lo, hi, 0, chunk_item, NULL);
	if (rc)
		return rc;
	rs_init(&mapped);
	for (size_t i = 0; i < b->nsm; i++) {
		const struct stripe_map *m = &b->sm[i];

		rs_add(&mapped, m->phys, m->len);
		for (size_t k = rs_find(&r->changed, m->phys);
		     k < r->changed.n && r->changed.v[k].start < m->phys + m->len; k++) {
			uint64_t a = r->changed.v[k].start > m->phys ? r->changed.v[k].start : m->phys;
			uint64_t e = r->changed.v[k].start + r->changed.v[k].len;

			if (e > m->phys + m->len)
				e = m->phys + m->len;
			rs_add(&b->lchg, m->logical + (a - m->phys), e - a);
			if (m->type & BTRFS_BLOCK_GROUP_DATA)
				rs_add(&b->lchg_data, m->logical + (a - m->phys), e - a);
			if (m->type & BTRFS_BLOCK_GROUP_SYSTEM)
				tally_add(&r->st.tally, AT_META, e - a);
		}
	}
	rs_normalize(&b->lchg);
	rs_normalize(&b->lchg_data);
	rs_normalize(&mapped);
	for (size_t i = 0; i < sizeof(sbs) / sizeof(sbs[0]); i++)
		tally_add(&r->st.tally, AT_META, rs_overlap_bytes(&r->changed, sbs[i], 4096));
	/* Changed space in no chunk: unallocated. */
	for (size_t k = 0; k < r->changed.n; k++)
		tally_add(&r->st.tally, AT_FREE, r->changed.v[k].len -
			  rs_overlap_bytes(&mapped, r->changed.v[k].start, r->changed.v[k].len));
	rs_free(&mapped);
	return RX_OK;
}

/* ---- the extent tree over the changed logical ranges ---- */

/*
 * An extent or (skinny) metadata item: its length, generation and flags.
 * False for any other item, or one too short to hold them.
 */
static bool extent_fields(const struct bctx *b, const struct btrfs_ioctl_search_header *h,
			  const unsigned char *d, uint64_t *len, uint64_t *gen, uint64_t *flags)
{
	if (h->type == BTRFS_EXTENT_ITEM_KEY)
		*len = h->offset;
	else if (h->type == BTRFS_METADATA_ITEM_KEY)
		*len = b->nodesize;
	else
		return false;
	if (h->len < 24 || !*len)
		return false;
	*gen = le64(d + 8);
	*flags = le64(d + 16);
	return true;
}

static int extent_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		       const unsigned char *d, void *ctx)
{
	struct resolver *r = b->r;
	uint64_t start = h->objectid, len, flags, gen;

	(void)ctx;
	if (!extent_fields(b, h, d, &len, &gen, &flags))
		return 0;
	if (!rs_overlaps(&b->lchg, start, len)) {
		/* Near the changes, unchanged: written before the epoch. */
		if ((flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) && gen <= b->commit_gen &&
		    gen > b->gen_before)
			b->gen_before = gen;
		return 0;
	}
	if (flags & BTRFS_EXTENT_FLAG_DATA) {
		/* Searches move forward: a repeat is the last one seen. */
		if (b->ndext && b->dext[b->ndext - 1] == start)
			return 0;
		xgrow((void **)&b->dext, &b->dcap, b->ndext + 1, sizeof(*b->dext));
		b->dext[b->ndext++] = start;
		tally_add(&r->st.tally, AT_DATA, rs_overlap_bytes(&b->lchg, start, len));
	} else if (flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) {
		tally_add(&r->st.tally, AT_TREE, rs_overlap_bytes(&b->lchg, start, len));
		if (rs_covers(&b->lchg, start, len)) {
			/* Written whole since the epoch: its generation bounds G. */
			if (gen && (!b->gen_min || gen < b->gen_min))
				b->gen_min = gen;
		} else if (gen <= b->commit_gen && gen > b->gen_before) {
			/* Committed before the map was read, yet not all
			 * changed: written before the epoch. */
			b->gen_before = gen;
		}
	}
	return 0;
}

static int scan_extents(struct bctx *b)
{
	uint64_t done = 0;

	for (size_t i = 0; i < b->lchg.n; i++) {
		uint64_t a = b->lchg.v[i].start, e = a + b->lchg.v[i].len;
		uint64_t from = a > MAX_DATA_EXTENT ? a - MAX_DATA_EXTENT : 0;
		struct skey lo, hi = { e - 1, UINT64_MAX, BTRFS_METADATA_ITEM_KEY };
		int rc;

		/* An extent starting before a range can reach into it. */
		if (from < done)
			from = done;
		lo.objectid = from;
		lo.type = BTRFS_EXTENT_ITEM_KEY;
		lo.offset = 0;
		rc = tree_search(b, BTRFS_EXTENT_TREE_OBJECTID, lo, hi, 0, extent_item, NULL);
		if (rc)
			return rc;
		done = e;
	}
	return RX_OK;
}

/*
 * Raise L: tree blocks allocated recently have their extent items in
 * extent-tree leaves written recently, which a search with min_transid = L
 * returns alone.  Any of them committed before the map was read, not all
 * changed, was written before the epoch.
 */
static int gen_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		    const unsigned char *d, void *ctx)
{
	uint64_t len, gen, flags;

	(void)ctx;
	if (!extent_fields(b, h, d, &len, &gen, &flags))
		return 0;
	if ((flags & BTRFS_EXTENT_FLAG_TREE_BLOCK) && gen <= b->commit_gen &&
	    gen > b->gen_before && !rs_covers(&b->lchg, h->objectid, len))
		b->gen_before = gen;
	return 0;
}

static int raise_gen_before(struct bctx *b)
{
	struct skey lo = { 0, 0, BTRFS_EXTENT_ITEM_KEY };
	struct skey hi = { UINT64_MAX, UINT64_MAX, BTRFS_METADATA_ITEM_KEY };

	for (int pass = 0; pass < 8 && b->gen_min; pass++) {
		uint64_t before = b->gen_before;
		int rc = tree_search(b, BTRFS_EXTENT_TREE_OBJECTID, lo, hi,
				b->gen_before ? b->gen_before : 1, gen_item, NULL);

		if (rc)
			return rc;
		if (b->gen_before == before)
			break;
	}
	return RX_OK;
}

/* ---- owners of changed data extents ---- */

static int data_owners(struct bctx *b)
{
	struct resolver *r = b->r;
	uint64_t size = 64 * 1024;
	struct btrfs_data_container *c = xmalloc(size);

	for (size_t i = 0; i < b->ndext; i++) {
		struct btrfs_ioctl_logical_ino_args a;

		memset(&a, 0, sizeof(a));
		a.logical = b->dext[i];
		a.size = size;
		a.flags = BTRFS_LOGICAL_INO_ARGS_IGNORE_OFFSET;
		a.inodes = (uintptr_t)c;
		if (ioctl(r->mnt_fd, BTRFS_IOC_LOGICAL_INO_V2, &a)) {
			if (errno == ENOENT)
				continue;	/* freed since the extent search */
			free(c);
			return rx_fail(r, RX_ERROR, "btrfs LOGICAL_INO at %llu: %s",
				       (unsigned long long)b->dext[i], strerror(errno));
		}
		if (c->elem_missed) {
			/* Too many references for the buffer: grow, retry. */
			if (size >= LINO_MAX) {
				free(c);
				return rx_fail(r, RX_FULL_SCAN,
					       "btrfs extent at %llu has too many references to list",
					       (unsigned long long)b->dext[i]);
			}
			size = size * 4 + c->bytes_missing;
			if (size > LINO_MAX)
				size = LINO_MAX;
			c = xrealloc(c, size);
			i--;
			continue;
		}
		if ((uint64_t)c->elem_cnt * 8 > size - sizeof(*c)) {
			free(c);
			return rx_fail(r, RX_ERROR, "btrfs LOGICAL_INO: result overruns its buffer");
		}
		for (uint32_t k = 0; k + 2 < c->elem_cnt; k += 3) {
			uint64_t ino = c->val[k], root = c->val[k + 2];
			struct item *it = res_get(&r->res, root, ino);

			it->reasons |= RSN_DATA;
		}
	}
	free(c);
	return RX_OK;
}

/* ---- items of leaves written since the epoch ---- */

struct leaf_ctx {
	uint64_t root;
	uint64_t items;
};

static int leaf_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		     const unsigned char *d, void *ctx)
{
	struct leaf_ctx *lc = ctx;
	unsigned rsn;
	struct item *it;

	lc->items++;
	if (h->objectid < BTRFS_FIRST_FREE_OBJECTID || h->objectid > BTRFS_LAST_FREE_OBJECTID)
		return 0;
	switch (h->type) {
	case BTRFS_INODE_ITEM_KEY:
	case BTRFS_INODE_REF_KEY:
	case BTRFS_INODE_EXTREF_KEY:
		rsn = RSN_INODE;
		break;
	case BTRFS_XATTR_ITEM_KEY:
		rsn = RSN_XATTR;
		break;
	case BTRFS_DIR_ITEM_KEY:
	case BTRFS_DIR_INDEX_KEY:
		rsn = RSN_DIRECTORY;
		break;
	case BTRFS_EXTENT_DATA_KEY:
		rsn = RSN_MAPPING;
		break;
	default:
		return 0;
	}
	it = res_get(&b->r->res, lc->root, h->objectid);
	it->reasons |= rsn | RSN_TREE;
	/* The file range this extent item maps may have changed. */
	if (h->type == BTRFS_EXTENT_DATA_KEY && h->len >= 21) {
		uint64_t n = d[20] == BTRFS_FILE_EXTENT_INLINE || h->len < 53 ? le64(d + 8) : le64(d + 45);

		rs_add(&it->ranges, h->offset, n ? n : 1);
		it->flags |= IT_MAP_CHANGED;
	}
	if (h->type == BTRFS_INODE_ITEM_KEY)
		it->flags |= IT_MAP_CHANGED;
	return 0;
}

struct roots {
	uint64_t *v;
	bool *created;		/* made at or after gen_min (or unknown) */
	size_t n, cap, ccap;
};

/*
 * The subvolume's creation transid (otransid), or 0 when the item is too
 * short or of the old format (generation_v2 not equal to generation: the
 * fields after it are not maintained), then taken as newly created.
 */
static uint64_t root_otransid(const struct btrfs_ioctl_search_header *h, const unsigned char *d)
{
	size_t og = offsetof(struct btrfs_root_item, generation);
	size_t og2 = offsetof(struct btrfs_root_item, generation_v2);
	size_t oo = offsetof(struct btrfs_root_item, otransid);

	if (h->len < oo + 8 || le64(d + og) != le64(d + og2))
		return 0;
	return le64(d + oo);
}

static int root_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		     const unsigned char *d, void *ctx)
{
	struct roots *rs = ctx;
	uint64_t otransid;

	if (h->type != BTRFS_ROOT_ITEM_KEY)
		return 0;
	if (h->objectid != BTRFS_FS_TREE_OBJECTID &&
	    (h->objectid < BTRFS_FIRST_FREE_OBJECTID || h->objectid > BTRFS_LAST_FREE_OBJECTID))
		return 0;
	if (rs->n && rs->v[rs->n - 1] == h->objectid)
		return 0;
	xgrow((void **)&rs->v, &rs->cap, rs->n + 1, sizeof(*rs->v));
	xgrow((void **)&rs->created, &rs->ccap, rs->n + 1, sizeof(*rs->created));
	otransid = root_otransid(h, d);
	rs->created[rs->n] = h->objectid != BTRFS_FS_TREE_OBJECTID &&
			     (!otransid || otransid >= b->gen_min);
	rs->v[rs->n++] = h->objectid;
	return 0;
}

/*
 * A subvolume created since the epoch: its top directory is listed, which
 * tells a backup to read it whole.  A snapshot shares every leaf with its
 * source, so no changed leaf of its own names anything in it; only its
 * root node and the root tree's items are new.
 */
static void new_subvolume(struct bctx *b, uint64_t root)
{
	struct item *it = res_get(&b->r->res, root, BTRFS_FIRST_FREE_OBJECTID);

	it->reasons |= RSN_INODE | RSN_DIRECTORY | RSN_TREE;
}

static int changed_leaves(struct bctx *b)
{
	struct roots rs = { 0 };
	struct skey lo = { BTRFS_FS_TREE_OBJECTID, 0, BTRFS_ROOT_ITEM_KEY };
	struct skey hi = { BTRFS_LAST_FREE_OBJECTID, UINT64_MAX, BTRFS_ROOT_ITEM_KEY };
	struct skey all_lo = { 0, 0, 0 }, all_hi = { UINT64_MAX, UINT64_MAX, 255 };
	int rc;

	if (!b->gen_min)
		return RX_OK;	/* no tree block written since the epoch */
	rc = tree_search(b, BTRFS_ROOT_TREE_OBJECTID, lo, hi, 0, root_item, &rs);
	for (size_t i = 0; !rc && i < rs.n; i++) {
		struct leaf_ctx lc = { rs.v[i], 0 };
		bool gone = false;

		/*
		 * A subvolume deleted since the epoch (or during this run) has
		 * no files left to name; the directory that held it changed
		 * in its parent's tree and is listed from there.
		 */
		rc = tree_search_or_gone(b, rs.v[i], all_lo, all_hi, b->gen_min, leaf_item, &lc,
					 &gone);
		if (!rc && !gone && rs.created[i])
			new_subvolume(b, rs.v[i]);
		progress(b->r, "btrfs: searching subvolume %llu", (unsigned long long)rs.v[i]);
	}
	free(rs.v);
	free(rs.created);
	return rc;
}

/* ---- names ---- */

struct uref {
	uint64_t parent;
	char *name;
};

static int uref_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		     const unsigned char *d, void *ctx)
{
	struct uref *u = ctx;
	unsigned nl;

	(void)b;
	if (h->type != BTRFS_INODE_REF_KEY || u->name || h->len < 10)
		return 0;
	nl = le16(d + 8);
	if (!nl || nl > 255 || 10u + nl > h->len || memchr(d + 10, '/', nl) || memchr(d + 10, 0, nl))
		return 0;
	u->parent = h->offset;
	u->name = xmalloc(nl + 1);
	memcpy(u->name, d + 10, nl);
	u->name[nl] = 0;
	return 0;
}

static const char *dir_path_depth(struct bctx *b, uint64_t root, uint64_t dir, unsigned depth);

/* The cached entry of directory dir of subvolume root (h: its hash). */
static struct dirpath *dp_find(struct bctx *b, uint64_t root, uint64_t dir, uint64_t h)
{
	size_t c;

	for (size_t i = ht_first(&b->dpidx, h, &c); i != HT_NONE; i = ht_next(&b->dpidx, h, &c))
		if (b->dp[i].root == root && b->dp[i].ino == dir)
			return &b->dp[i];
	return NULL;
}

/*
 * The path of dir: its parent's path and the name in the directory's
 * INODE_REF item (a directory has one).  "a/b/" like INO_LOOKUP,
 * top-relative; NULL when a link of the chain is missing (deleted
 * meanwhile) or it is deeper than 65536 levels.
 *
 * known_only: only when the parent's path is already cached (the usual
 * case: directories come in inode order, parents first): one search, where
 * BTRFS_IOC_INO_LOOKUP walks every level up to the top in the kernel (a
 * chain of n directories cost n^2/2 steps, 29 s for 5000 levels under
 * TCG).  Otherwise the parent is named first, recursively (cached, so a
 * deep chain costs one search per level): the way past INO_LOOKUP's
 * 4080-byte limit.
 */
static char *refs_path(struct bctx *b, uint64_t root, uint64_t dir, unsigned depth, bool known_only)
{
	struct skey lo = { dir, 0, BTRFS_INODE_REF_KEY };
	struct skey hi = { dir, UINT64_MAX, BTRFS_INODE_REF_KEY };
	struct uref u = { 0, NULL };
	const struct dirpath *p;
	const char *pp;
	char *out = NULL;
	bool gone;

	if (depth > 65536 || inode_search(b, root, lo, hi, uref_item, &u, &gone) || gone ||
	    !u.name || u.parent == dir)
		goto out;
	if (known_only) {
		p = dp_find(b, root, u.parent, ht_hash_pair(u.parent, root));
		pp = p ? p->path : NULL;
	} else {
		pp = dir_path_depth(b, root, u.parent, depth + 1);
	}
	if (pp) {
		out = xmalloc(strlen(pp) + strlen(u.name) + 2);
		sprintf(out, "%s%s/", pp, u.name);
	}
out:
	free(u.name);
	return out;
}

/*
 * Path of directory dir of subvolume root, relative to the top; NULL when
 * it has none (the subvolume is not reachable, the directory is gone).
 * Cached, failures too: a million links in one directory cost one lookup.
 */
static const char *dir_path(struct bctx *b, uint64_t root, uint64_t dir)
{
	return dir_path_depth(b, root, dir, 0);
}

static const char *dir_path_depth(struct bctx *b, uint64_t root, uint64_t dir, unsigned depth)
{
	char *full = NULL;
	char *in = NULL, *top;
	struct dirpath *d;
	uint64_t h = ht_hash_pair(dir, root);

	d = dp_find(b, root, dir, h);
	if (d)
		return d->path;
	top = subvol_top(b, root, 0);
	if (top && dir == BTRFS_FIRST_FREE_OBJECTID)
		in = xstrdup("");
	else if (top && !(full = refs_path(b, root, dir, depth, true)) && ino_lookup(b, root, dir, &in))
		full = refs_path(b, root, dir, depth, false);
	if (top && in) {
		full = xmalloc(strlen(top) + strlen(in) + 1);
		sprintf(full, "%s%s", top, in);
	}
	xgrow((void **)&b->dp, &b->dpcap, b->ndp + 1, sizeof(*b->dp));
	d = &b->dp[b->ndp++];
	d->root = root;
	d->ino = dir;
	d->path = full;
	if (!full && top) {
		/* A directory of a reachable subvolume that cannot be named:
		 * what it holds would be left out (the rule). */
		tally_note(&b->r->st.tally, AT_UNNAMED, 1,
			   "btrfs: directory %llu of subvolume %llu cannot be named",
			   (unsigned long long)dir, (unsigned long long)root);
	}
	free(top);
	free(in);
	ht_add(&b->dpidx, h, b->ndp - 1);
	return d->path;
}

/* Add the path top-relative p (a file, or "x/" for a subvolume root). */
static void add_top_path(struct bctx *b, struct item *it, const char *p)
{
	size_t pl = strlen(b->prefix), l = strlen(p);
	char *rel;

	/* Visible only under the mount's root. */
	if (strncmp(p, b->prefix, pl) && !(l + 1 == pl && !strncmp(p, b->prefix, l)))
		return;
	rel = xstrdup(l >= pl ? p + pl : "");
	l = strlen(rel);
	if (l && rel[l - 1] == '/')
		rel[l - 1] = 0;
	item_add_path(it, rel);
	free(rel);
}

struct ref_ctx {
	struct item *it;
	int bad;
};

static void ref_path(struct bctx *b, struct ref_ctx *rc, uint64_t parent, const unsigned char *name,
		     unsigned nl)
{
	const char *d;
	char *p;

	/*
	 * A name that cannot be a path component (empty, ".", "..", holding
	 * '/' or NUL: a crafted filesystem) would name another path than the
	 * inode's, or none: the inode cannot be listed by it (the rule).
	 */
	if (!nl || nl > 255 || memchr(name, '/', nl) || memchr(name, 0, nl) ||
	    (name[0] == '.' && (nl == 1 || (nl == 2 && name[1] == '.')))) {
		tally_note(&b->r->st.tally, AT_UNNAMED, 1,
			   "btrfs: inode %llu of subvolume %llu has a name that is not a path component",
			   (unsigned long long)rc->it->ino, (unsigned long long)rc->it->root);
		return;
	}
	d = dir_path(b, rc->it->root, parent);
	if (!d)
		return;
	p = xmalloc(strlen(d) + nl + 1);
	memcpy(p, d, strlen(d));
	memcpy(p + strlen(d), name, nl);
	p[strlen(d) + nl] = 0;
	add_top_path(b, rc->it, p);
	free(p);
}

static int ref_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		    const unsigned char *d, void *ctx)
{
	struct ref_ctx *rc = ctx;
	uint32_t off = 0;

	if (h->objectid != rc->it->ino)
		return 0;
	if (h->type == BTRFS_INODE_REF_KEY) {
		/* { index u64, name_len u16, name } ...; key offset = parent */
		while (off + 10 <= h->len) {
			unsigned nl = le16(d + off + 8);

			if (off + 10 + nl > h->len) {
				rc->bad = 1;
				break;
			}
			ref_path(b, rc, h->offset, d + off + 10, nl);
			off += 10 + nl;
		}
	} else if (h->type == BTRFS_INODE_EXTREF_KEY) {
		/* { parent u64, index u64, name_len u16, name } ... */
		while (off + 18 <= h->len) {
			unsigned nl = le16(d + off + 16);

			if (off + 18 + nl > h->len) {
				rc->bad = 1;
				break;
			}
			ref_path(b, rc, le64(d + off), d + off + 18, nl);
			off += 18 + nl;
		}
	}
	return 0;
}

struct inode_info {
	int found;
	uint32_t mode;
	uint64_t size, transid;
};

static int inode_item(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		      const unsigned char *d, void *ctx)
{
	struct inode_info *ii = ctx;

	(void)b;
	if (h->type != BTRFS_INODE_ITEM_KEY || h->len < 160)
		return 0;
	ii->found = 1;
	ii->transid = le64(d + 8);
	ii->size = le64(d + 16);
	ii->mode = le32(d + 52);
	return 0;
}

static int name_item(struct bctx *b, struct item *it)
{
	struct inode_info ii = { 0 };
	struct skey lo = { it->ino, 0, BTRFS_INODE_ITEM_KEY };
	struct skey hi = { it->ino, 0, BTRFS_INODE_ITEM_KEY };
	struct skey rlo = { it->ino, 0, BTRFS_INODE_REF_KEY };
	struct skey rhi = { it->ino, UINT64_MAX, BTRFS_INODE_EXTREF_KEY };
	struct ref_ctx rc = { it, 0 };
	bool gone;
	int e;

	e = inode_search(b, it->root, lo, hi, inode_item, &ii, &gone);
	if (e)
		return e;
	if (gone || !ii.found)
		return RX_OK;	/* deleted: its directory is listed */
	/* Only in a changed leaf, and its inode item older than the epoch. */
	if (!(it->reasons & RSN_DATA) && it->ino != BTRFS_FIRST_FREE_OBJECTID &&
	    (ii.transid < b->gen_before || ii.transid <= b->epoch_gen)) {
		if (ii.transid >= b->gen_before)
			b->filtered_gen++;
		item_drop(it);
		b->filtered++;
		return RX_OK;
	}
	it->type = ftype_from_mode(ii.mode);
	it->size = ii.size;
	if (it->ino == BTRFS_FIRST_FREE_OBJECTID) {
		/* A subvolume's root directory. */
		char *top = subvol_top(b, it->root, 0);

		if (top)
			add_top_path(b, it, top);
		free(top);
		return RX_OK;
	}
	e = inode_search(b, it->root, rlo, rhi, ref_item, &rc, &gone);
	if (!e && rc.bad)
		e = rx_fail(b->r, RX_ERROR, "btrfs: malformed inode reference of %llu in tree %llu",
			    (unsigned long long)it->ino, (unsigned long long)it->root);
	return e;
}

/* ---- ranges inside regular files ---- */

struct fx_ctx {
	struct bctx *b;
	struct item *it;
	struct rangeset mapped;
	int map_changed;
};

static int file_extent(struct bctx *b, const struct btrfs_ioctl_search_header *h,
		       const unsigned char *d, void *ctx)
{
	struct fx_ctx *fx = ctx;
	uint64_t fo = h->offset, n, bytenr, dlen, eoff;
	unsigned type, comp;

	if (h->type != BTRFS_EXTENT_DATA_KEY || h->objectid != fx->it->ino || h->len < 21)
		return 0;
	comp = d[16];
	type = d[20];
	if (type == BTRFS_FILE_EXTENT_INLINE) {
		/* Inline data lives in its leaf: it changed if the leaf did. */
		n = le64(d + 8);
		rs_add(&fx->mapped, fo, n);
		if (fx->map_changed)
			rs_add(&fx->it->ranges, fo, n);
		return 0;
	}
	if (h->len < 53)
		return rx_fail(b->r, RX_ERROR, "btrfs: short file extent item");
	bytenr = le64(d + 21);
	dlen = le64(d + 29);
	eoff = le64(d + 37);
	n = le64(d + 45);
	if (!bytenr)
		return 0;	/* an explicit hole */
	rs_add(&fx->mapped, fo, n);
	if (type == BTRFS_FILE_EXTENT_PREALLOC && fx->map_changed)
		rs_add(&fx->it->ranges, fo, n);
	else if (comp)
		/* Compressed: any change in the extent changes all it holds. */
		rs_add(&fx->it->ranges, fo, rs_overlaps(&b->lchg, bytenr, dlen) ? n : 0);
	else
		rs_map_overlaps(&fx->it->ranges, &b->lchg, bytenr + eoff, n, fo);
	return 0;
}

static int file_ranges(struct bctx *b, struct item *it)
{
	struct fx_ctx fx = { b, it, { 0 }, !!(it->flags & IT_MAP_CHANGED) };
	struct skey lo = { it->ino, 0, BTRFS_EXTENT_DATA_KEY };
	struct skey hi = { it->ino, UINT64_MAX, BTRFS_EXTENT_DATA_KEY };
	bool gone;
	int rc;

	rs_init(&fx.mapped);
	rc = inode_search(b, it->root, lo, hi, file_extent, &fx, &gone);
	if (!rc && gone) {
		/* Named, then its subvolume deleted: whatever is read there is new. */
		rs_add(&it->ranges, 0, it->size);
	} else if (!rc && fx.map_changed) {
		/* Holes (punched, or truncated and extended) read as zeros. */
		struct rangeset all, holes;

		rs_init(&all);
		rs_init(&holes);
		rs_add(&all, 0, it->size);
		rs_normalize(&fx.mapped);
		rs_subtract(&holes, &all, &fx.mapped);
		for (size_t i = 0; i < holes.n; i++)
			rs_add(&it->ranges, holes.v[i].start, holes.v[i].len);
		rs_free(&all);
		rs_free(&holes);
	}
	rs_normalize(&it->ranges);
	rs_clip(&it->ranges, it->size);
	rs_free(&fx.mapped);
	return rc;
}

/*
 * The state store keeps one value per epoch: G, the generation of the
 * superblock as the run right after a checkpoint read it (before its
 * change map), kept only when the current epoch's marks, read after
 * that, leave the superblock unmarked: then no commit reached the device
 * since the checkpoint, and G is the last transaction committed before
 * it.  An inode whose inode item's transid is at most G was last changed
 * in a transaction committed before the checkpoint: in a later run since
 * that epoch it is no longer listed for sharing a changed leaf (a small
 * filesystem rewrites nearly every leaf, and L, above, then stays below
 * the transactions just before the checkpoint).  Kept as gen and a keyed
 * hash of it, bound to the (0, 0) row: a row of another meaning or
 * damaged is not used.
 */
#define SB_OFF		(64 * 1024)
#define SB_LEN		4096

static void gen_value(struct bctx *b, uint64_t gen, uint8_t out[ST_HASH])
{
	uint8_t g[8], h[ST_HASH];

	put_le64(g, gen);
	store_hash(&b->st, 0, 0, g, sizeof(g), h);
	memcpy(out, g, 8);
	memcpy(out + 8, h, 8);
}

static void epoch_gen_open(struct bctx *b)
{
	struct resolver *r = b->r;
	char ident[256], u[37];
	uint8_t v[ST_HASH], want[ST_HASH];

	chj_uuid_str(r->chj_uuid, u);
	snprintf(ident, sizeof(ident), "btrfs fs=%s chj=%s gen", r->fs_uuid, u);
	store_open(r, &b->st, ident);
	if (!store_get(&b->st, 0, 0, v))
		return;
	gen_value(b, le64(v), want);
	/* Never past what was committed before this run's map. */
	if (!memcmp(v, want, ST_HASH) && le64(v) <= b->commit_gen)
		b->epoch_gen = le64(v);
}

static void epoch_gen_commit(struct bctx *b)
{
	uint8_t v[ST_HASH];

	if (!b->st.db || b->st.update == ST_UPD_NONE)
		return;
	gen_value(b, b->commit_gen, v);
	store_stage(&b->st, 0, 0, SB_OFF, SB_LEN, ST_KNOWN, v);
	store_commit(&b->st);
}

static int btrfs_resolve_fs(struct bctx *b)
{
	struct resolver *r = b->r;
	double t;
	int rc;

	r->st.method = "btrfs: chunk tree, extent tree, LOGICAL_INO, leaves since the epoch";
	rc = check_device(b);
	if (!rc)
		rc = find_mount(b);
	if (!rc)
		epoch_gen_open(b);
	if (!rc)
		rc = map_changes(b);
	if (!rc)
		rc = scan_extents(b);
	if (!rc)
		rc = raise_gen_before(b);
	if (!rc)
		rc = data_owners(b);
	if (!rc)
		rc = changed_leaves(b);
	if (rc)
		return rc;
	{
		uint64_t known = 0;

		for (int a = 0; a < AT_NR; a++)
			if (a != AT_UNNAMED)
				known += r->st.tally.bytes[a];
		/* Changed space in chunks that holds no extent now: freed. */
		if (known < r->st.changed_bytes)
			tally_add(&r->st.tally, AT_FREED, r->st.changed_bytes - known);
	}
	r->st.phase[PH_ANALYZE] = now_sec() - r->t0 - r->st.phase[PH_SYNC] - r->st.phase[PH_MAP];

	t = now_sec();
	for (size_t i = 0; i < r->res.cap && !rc; i++) {
		struct item *it = r->res.tab[i];

		if (!it)
			continue;
		/* Ranges from leaf items are a starting set for JSON only. */
		if (r->out_mode != 2)
			rs_clear(&it->ranges);
		rc = name_item(b, it);
	}
	r->st.leaf_neighbours = b->filtered;
	if (b->gen_before || b->epoch_gen)
		snprintf(r->st.note, sizeof(r->st.note),
			 "btrfs: leaves since generation %llu searched; inodes with transid below %llu (written before the epoch) or at most %llu (the state store: committed before the checkpoint; %llu of them) dropped",
			 (unsigned long long)b->gen_min, (unsigned long long)b->gen_before,
			 (unsigned long long)b->epoch_gen, (unsigned long long)b->filtered_gen);
	r->st.phase[PH_WALK] = now_sec() - t;
	if (rc)
		return rc;
	t = now_sec();
	for (size_t i = 0; i < r->res.cap && !rc; i++) {
		struct item *it = r->res.tab[i];

		if (it && r->out_mode == 2 && it->type == FT_REG && it->npaths)
			rc = file_ranges(b, it);
	}
	r->st.phase[PH_RANGES] = now_sec() - t;
	if (!rc) {
		epoch_gen_commit(b);
		store_describe(&b->st, r->st.state, sizeof(r->st.state));
	}
	return rc;
}

/* What btrfs notes before the change map is read (r->method_state). */
struct btrfs_pre {
	uint64_t gen;		/* the last committed generation */
};

static int btrfs_before_map(struct resolver *r)
{
	unsigned char sb[4096];
	struct btrfs_pre *p;
	int rc = raw_read(r, sb, sizeof(sb), 64 * 1024);

	if (rc)
		return rc;
	if (memcmp(sb + 64, "_BHRfS_M", 8))
		return rx_fail(r, RX_FULL_SCAN, "%s: no btrfs superblock", r->dev_path);
	p = xcalloc(1, sizeof(*p));
	p->gen = le64(sb + 72);
	r->method_state = p;
	return RX_OK;
}

/* What a bctx holds (the resolve and the fuzz entry). */
static void bctx_free(struct bctx *b)
{
	rs_free(&b->lchg);
	rs_free(&b->lchg_data);
	free(b->sm);
	free(b->dext);
	for (size_t i = 0; i < b->ndp; i++)
		free(b->dp[i].path);
	free(b->dp);
	ht_free(&b->dpidx);
	free(b->prefix);
	store_close(&b->st);
}

static int btrfs_resolve(struct resolver *r)
{
	struct bctx b;
	int rc;

	memset(&b, 0, sizeof(b));
	b.r = r;
	if (!r->method_state)
		return rx_fail(r, RX_ERROR, "btrfs: the generation before the change map was not read");
	b.commit_gen = ((const struct btrfs_pre *)r->method_state)->gen;
	rs_init(&b.lchg);
	rs_init(&b.lchg_data);
	rc = btrfs_resolve_fs(&b);
	bctx_free(&b);
	return rc;
}

/* ---- the fuzz harness's entry (fuzz/fuzz_btrfs.c) ---- */

static int fz_path_ok(const char *p)
{
	/* "", or components that are names: not empty, ".", "..". */
	while (*p) {
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (!l || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += l + (e ? 1 : 0);
		if (e && !*p)
			return 0;	/* a trailing '/' */
	}
	return 1;
}

/*
 * Every item parser over one search-result buffer (data: a header and the
 * item's bytes, repeated, as BTRFS_IOC_TREE_SEARCH_V2 returns them).  No
 * filesystem: mnt_fd is -1, so a parser's own searches fail; the directory
 * path cache is seeded (directories 256 and 300 of subvolume 5) so that
 * inode references are turned into paths.  Oracles beyond the sanitizers:
 * every path built from a reference is made of names (no empty, ".", ".."
 * component: a name holding '/' or NUL must not become another path), and
 * no inode is collected without an item naming it, and no range wraps.
 * -1 if one fails.
 */
int btrfs_fuzz_items(const unsigned char *data, size_t size)
{
	static struct resolver r;
	struct bctx b;
	struct btrfs_ioctl_search_header last;
	struct backref br = { 0 };
	struct uref u = { 0, NULL };
	struct roots rs = { 0 };
	struct leaf_ctx lc = { BTRFS_FS_TREE_OBJECTID, 0 };
	struct ref_ctx rc;
	struct inode_info ii = { 0 };
	struct fx_ctx fx;
	struct item *it;
	uint32_t n = UINT32_MAX;
	int bad = 0;

	memset(&r, 0, sizeof(r));
	r.dev_fd = r.mnt_fd = -1;
		rs_init(&r.changed);
	res_init(&r.res);
	memset(&b, 0, sizeof(b));
	b.r = &r;
	b.commit_gen = 100;
	b.devid = 1;
	b.nodesize = 16384;
	b.prefix = xstrdup("");
	rs_init(&b.lchg);
	rs_init(&b.lchg_data);
	rs_add(&b.lchg, 1ull << 20, 64ull << 20);
	rs_normalize(&b.lchg);
	{
		static const struct { uint64_t ino; const char *path; } seed[] = {
			{ 256, "" }, { 300, "d300/" },
		};

		for (size_t i = 0; i < sizeof(seed) / sizeof(seed[0]); i++) {
			xgrow((void **)&b.dp, &b.dpcap, b.ndp + 1, sizeof(*b.dp));
			b.dp[b.ndp].root = BTRFS_FS_TREE_OBJECTID;
			b.dp[b.ndp].ino = seed[i].ino;
			b.dp[b.ndp].path = xstrdup(seed[i].path);
			ht_add(&b.dpidx, ht_hash_pair(seed[i].ino, BTRFS_FS_TREE_OBJECTID), b.ndp);
			b.ndp++;
		}
	}

	walk_items(&b, data, size, n, backref_item, &br, &last);
	if (br.found && strlen(br.name) > 255)
		bad = 1;
	walk_items(&b, data, size, n, chunk_item, NULL, &last);
	walk_items(&b, data, size, n, extent_item, NULL, &last);
	walk_items(&b, data, size, n, gen_item, NULL, &last);
	walk_items(&b, data, size, n, root_item, &rs, &last);
	walk_items(&b, data, size, n, uref_item, &u, &last);
	if (u.name && (!*u.name || strlen(u.name) > 255 || strchr(u.name, '/')))
		bad = 2;
	walk_items(&b, data, size, n, leaf_item, &lc, &last);
	if (r.res.n > lc.items)
		bad = 3;
	/* The references and extents of inode 257. */
	it = res_get(&r.res, BTRFS_FS_TREE_OBJECTID, 257);
	it->size = 1ull << 30;
	rc.it = it;
	rc.bad = 0;
	walk_items(&b, data, size, n, ref_item, &rc, &last);
	for (uint32_t p = 0; p < it->npaths; p++)
		if (!fz_path_ok(it->paths[p]))
			bad = 4;
	walk_items(&b, data, size, n, inode_item, &ii, &last);
	memset(&fx, 0, sizeof(fx));
	fx.b = &b;
	fx.it = it;
	fx.map_changed = 1;
	rs_init(&fx.mapped);
	walk_items(&b, data, size, n, file_extent, &fx, &last);
	rs_normalize(&it->ranges);
	rs_normalize(&fx.mapped);
	for (size_t i = 0; i < it->ranges.n; i++)
		if (it->ranges.v[i].start + it->ranges.v[i].len < it->ranges.v[i].start)
			bad = 5;	/* a range that wraps */
	rs_free(&fx.mapped);

	free(u.name);
	free(rs.v);
	free(rs.created);
	bctx_free(&b);
	res_free(&r.res);
	rs_free(&r.changed);
	return bad;
}

static const char *const btrfs_fstypes[] = { "btrfs", NULL };

const struct resolve_method btrfs_method = {
	.name = "btrfs",
	.fstypes = btrfs_fstypes,
	.flags = RM_ANON_DEV,
	.before_map = btrfs_before_map,
	.resolve = btrfs_resolve,
	.release = method_free_state,
};
