/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * chj-resolve: map the regions of a dm-chj device changed since an epoch to
 * the files of the filesystem mounted on it.  docs/resolve.md describes the
 * method per filesystem and why each one is conservative.
 *
 * Units: device positions and lengths are bytes unless a name says
 * otherwise; file ranges are bytes inside the file.
 */
#ifndef CHJ_RESOLVE_H
#define CHJ_RESOLVE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "htab.h"
#include "settle.h"

/* Exit status. */
#define RX_OK		0
#define RX_ERROR	1	/* could not compute the answer */
#define RX_USAGE	2
#define RX_FULL_SCAN	3	/* the change map cannot be used: full scan */

/*
 * Test hooks (docs/testing.md): environment variables read only by
 * chj-resolve-test, a separate build; NULL in the installed chj-resolve.
 */
#ifdef CHJ_RESOLVE_TEST_HOOKS
#include <stdlib.h>
#define test_hook(name) ((const char *)getenv(name))
#else
#define test_hook(name) ((const char *)NULL)
#endif

/* ---- helpers (util.c) ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Grow *v (of *cap elements of size sz) to hold at least need elements. */
void xgrow(void **v, size_t *cap, size_t need, size_t sz);
double now_sec(void);
/* The heap's next pad bytes reserved and advised for transparent huge
 * pages (fewer page faults; util.c says why): the bytes advised, 0 when
 * none (THP off, not glibc's malloc). */
size_t heap_hugepages(size_t pad);


/*
 * Errors: each function that can fail returns an RX_* code and leaves a
 * message in the resolver (rx_fail), printed once by main.
 */
struct resolver;
int rx_fail(struct resolver *r, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Changes past fs_bytes into the tally: inside the change map's last region
 * (its tail past a filesystem's end is only granularity) AT_GRAIN, past it
 * AT_OUTSIDE.  Set, not added: call it once.
 */
void rx_check_outside(struct resolver *r, uint64_t fs_bytes, const char *fs);

/* ---- sorted sets of ranges (rangeset.c) ---- */
struct range {
	uint64_t start, len;
};

struct rangeset {
	struct range *v;
	size_t n, cap;
	int dirty;		/* appended since the last rs_normalize */
};

void rs_init(struct rangeset *s);
void rs_free(struct rangeset *s);
void rs_clear(struct rangeset *s);
/* Append [start, start + len); len 0 is ignored.  Call rs_normalize after. */
void rs_add(struct rangeset *s, uint64_t start, uint64_t len);
/* Sort and merge overlapping and adjacent ranges. */
void rs_normalize(struct rangeset *s);
/* The queries below need a normalized set. */
/* Index of the first range ending after pos (n if none). */
size_t rs_find(const struct rangeset *s, uint64_t pos);
int rs_overlaps(const struct rangeset *s, uint64_t start, uint64_t len);
/* Every byte of [start, start + len) is in s. */
int rs_covers(const struct rangeset *s, uint64_t start, uint64_t len);
/* Bytes of [start, start + len) that are in s. */
uint64_t rs_overlap_bytes(const struct rangeset *s, uint64_t start,
			  uint64_t len);
uint64_t rs_total(const struct rangeset *s);
/*
 * For each part of [start, start + len) in s, add it to dst moved to
 * dst_start + (part - start): a device extent's changed parts become the
 * file's changed byte ranges.  Returns the bytes added.
 */
uint64_t rs_map_overlaps(struct rangeset *dst, const struct rangeset *s,
			 uint64_t start, uint64_t len, uint64_t dst_start);
/* dst = a minus b (both normalized); dst normalized. */
void rs_subtract(struct rangeset *dst, const struct rangeset *a,
		 const struct rangeset *b);
/* Clip to [0, end). */
void rs_clip(struct rangeset *s, uint64_t end);

/* ---- results: inodes and why they are listed (result.c) ---- */
enum {
	RSN_DATA	= 1 << 0,	/* file data blocks changed */
	RSN_INODE	= 1 << 1,	/* the inode: mode, owner, size, times, links */
	RSN_DIRECTORY	= 1 << 2,	/* directory entries */
	RSN_XATTR	= 1 << 3,	/* extended attribute block or fork */
	RSN_MAPPING	= 1 << 4,	/* extent map (tree) blocks */
	RSN_JOURNAL	= 1 << 5,	/* found through the journal or log */
	RSN_TREE	= 1 << 6,	/* btrfs: items in a changed tree leaf */
	RSN_NAME	= 1 << 7,	/* an entry of a changed directory that may
					   name another inode than before */
	RSN_NR		= 8,
};
const char *reason_name(unsigned bit);

/* Item flags. */
enum {
	IT_MAP_CHANGED	= 1 << 0,	/* the mapping may have changed: report
					   holes, unwritten and shared extents */
	IT_WHOLE	= 1 << 1,	/* report the whole file as changed */
	IT_NO_RANGES	= 1 << 2,	/* ranges already final */
};

/* File types (dt-like, from the walk or from the inode's mode). */
enum ftype {
	FT_UNKNOWN = 0, FT_REG, FT_DIR, FT_SYMLINK, FT_CHR, FT_BLK, FT_FIFO,
	FT_SOCK,
};
const char *ftype_name(enum ftype t);
enum ftype ftype_from_mode(unsigned mode);
enum ftype ftype_from_dtype(unsigned char d);

struct item {
	uint64_t root;		/* btrfs subvolume id; 0 elsewhere */
	uint64_t ino;
	unsigned reasons;	/* RSN_* */
	unsigned flags;		/* IT_* */
	enum ftype type;
	uint64_t size;		/* file size when known, else UINT64_MAX */
	uint64_t dbytes;	/* changed bytes attributed to its data fork */
	struct rangeset ranges;	/* changed byte ranges inside the file */
	char **paths;		/* relative to the mount point, no leading / */
	uint32_t npaths, pcap;
	struct htab pidx;	/* many paths (hard links): their index by
				   name, for dedup (empty while few) */
};

struct results {
	struct item **tab;	/* the items in the order added: n of them,
				   then NULL up to cap */
	size_t cap, n;
	struct htab idx;	/* tab's index by (root, ino) */
};

void res_init(struct results *rs);
void res_free(struct results *rs);
struct item *res_find(const struct results *rs, uint64_t root, uint64_t ino);
/* Find or create; a new item has type FT_UNKNOWN and size UINT64_MAX. */
struct item *res_get(struct results *rs, uint64_t root, uint64_t ino);
void item_add_path(struct item *it, const char *rel);
void item_clear_paths(struct item *it);
/* Take an item out of the answer (no paths, no reasons). */
void item_drop(struct item *it);
/* Iterate: for (i = 0; i < rs->cap; i++) if (rs->tab[i]) ... */

/* ---- statistics and progress (stats.c) ---- */
enum phase { PH_SYNC, PH_MAP, PH_ANALYZE, PH_WALK, PH_RANGES, PH_OUTPUT, PH_NR };

struct stats {
	uint64_t changed_bytes, changed_ranges, changed_regions;
	struct tally tally;		/* changed bytes by attribution (settle.h) */
	int settle_done;		/* settle() ran: */
	enum verdict verdict;		/* its answer from the tally */
	char settled[256];		/* and what it said */
	uint64_t journal_blocks;	/* home blocks found through the journal */
	uint64_t journal_trans;		/* journal transactions that count */
	int journal_moved;		/* the jbd2 tail moved since the map: */
	uint32_t journal_seq_map, journal_seq_now;	/* from, to */
	uint64_t inodes_listed, paths_listed, unreachable;
	uint64_t by_reason[RSN_NR];
	uint64_t itable_neighbours;	/* inodes listed only for sharing an
					   inode block with a changed one */
	uint64_t writeback_dropped;	/* XFS: rewritten at home for changes
					   made before the epoch */
	uint64_t leaf_neighbours;	/* btrfs: inodes listed only for sharing
					   a changed leaf */
	uint64_t name_entries;		/* XFS: inodes listed only for an entry
					   of a changed directory */
	uint64_t name_same;		/* XFS: such entries left out, the same
					   as at the epoch's start (store) */
	uint64_t dirs_walked, entries_walked, files_mapped;
	uint64_t unmapped;	/* files listed whole: their extents unreadable (a lease) */
	int full_scan;			/* ext4: every inode had to be scanned */
	char cache[160];		/* what the name cache did */
	char state[320];		/* what the state store did */
	double phase[PH_NR];
	const char *method;
	char note[256];
};

void stats_print(const struct resolver *r, FILE *f);
/* Progress on stderr, only when it is a terminal and the work is long. */
void progress(struct resolver *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void progress_done(struct resolver *r);

/* ---- the resolver ---- */
struct resolver {
	/* options */
	uint64_t since;
	int have_since;
	int out_mode;		/* 0 lines, 1 NUL, 2 JSON */
	int want_stats;
	const char *mount_opt;
	const char *device_arg;

	/* the device */
	char dm_name[128];
	char dev_path[4096];
	dev_t devno;
	int dev_fd;		/* O_RDONLY | O_DIRECT */
	uint64_t dev_bytes;
	uint32_t dev_lbs;	/* logical block size for O_DIRECT */
	char fstype[32];	/* from libblkid */
	char fs_uuid[48];	/* from libblkid */
	uint8_t chj_uuid[16];	/* of the chj metadata */

	/* the mount */
	char *mnt;		/* absolute, no trailing '/' except "/" */
	char *mnt_root;		/* root of the mount inside the filesystem */
	int mnt_fd;
	uint64_t mnt_id;	/* statx mount id */

	/* The method for fstype (methods.c), and what it keeps between its
	 * hooks (its own type; freed by its release hook). */
	const struct resolve_method *method;
	void *method_state;

	/* the change map */
	uint64_t current_epoch, oldest_epoch;
	int epoch_known;	/* current_epoch is the device's (the store needs it) */
	uint32_t region_bytes;
	struct rangeset changed;	/* bytes on the device */

	struct results res;
	struct stats st;

	/* progress */
	int tty;
	double t0, last_progress;
	double progress_after;	/* seconds; < 0 until read */
	int progress_shown;

	/* error message for main */
	char err[1024];
	int err_code;

	/* Inodes about to be stat'ed (names.c), read ahead the way the
	 * method knows (ext4: their inode-table blocks); NULL: none.  Only
	 * when reads happen changes, never what is read.  method_ctx is the
	 * method's own, for it. */
	void (*ino_prefetch)(struct resolver *r, const uint64_t *ino, size_t n);
	void *method_ctx;
};

/* cli.c: the command line. */
extern const char resolve_usage[], resolve_help[];
/* Fill r's options.  0, -1 after --help (printed), or RX_USAGE. */
int resolve_parse_args(struct resolver *r, int argc, char **argv);

/* target.c: device, status, change map, mount. */
int target_open(struct resolver *r);
int target_find_mount(struct resolver *r);
int target_read_changes(struct resolver *r);
/*
 * The epoch-start rule (store.c): of the device ranges in read, those
 * marked in the current epoch, from a fresh read of the marks (made after
 * the reads of read).  RX_OK, or an error: then nothing is known unmarked.
 */
int target_epoch_marks(struct resolver *r, const struct rangeset *read, struct rangeset *marked);
/* RX_FULL_SCAN if the target is in fail mode, else RX_OK (or an error). */
int target_check_mode(struct resolver *r);
/* chj-resolve-test with a map from a file (made earlier, from images):
 * CHJ_RESOLVE_LOG_AT_MAP, where the filesystem's log was when it was made
 * (each method's before_map hook reads it in its own format); NULL
 * otherwise (the method notes where its log is now). */
const char *target_log_at_map(void);
/* The XFS log's head and tail LSNs of the filesystem on devno, as the
 * kernel has them (/sys/fs/xfs/NAME/log): 0, or -1 if not known. */
int xfs_log_state(dev_t devno, uint64_t *head, uint64_t *tail);
/* chj-resolve-test's CHJ_RESOLVE_LOG_RACE, run once before a log's head is
 * read again (ext4.c's jbd2 walk, xfs.c's log scans); nothing in chj-resolve. */
void test_log_race(void);

/* rawio.c: O_DIRECT reads of the device at any byte offset and length. */
int raw_read(struct resolver *r, void *buf, size_t len, uint64_t off);

/*
 * pathat.c: a path relative to the mount (any length or depth), opened
 * beneath mnt_fd one component at a time, following no symlink in any
 * component; lstat likewise.  -1 with errno as open(2).
 *
 * A cursor keeps the directories of the last path reached open: visiting
 * paths in rel_cmp order costs one openat per directory in all, whatever
 * the depth (rel_open/rel_lstat open every component each time).
 */
struct stat;
struct dircur {
	int mnt_fd;
	int *fd;		/* fd[k]: level k's directory (O_PATH), -1 evicted */
	size_t *end;		/* end[k]: its path's length in path */
	size_t n, cap;
	char *path;		/* the deepest level's path */
	size_t pcap;
	uint64_t opens;		/* openat/fstatat calls made */
	uint64_t evictions;	/* times the open-file limit was met */
};
void dircur_init(struct dircur *c, int mnt_fd);
void dircur_free(struct dircur *c);
/* Directory dir[0..len) as an fd the cursor owns (the mount for len 0). */
int dircur_dir(struct dircur *c, const char *dir, size_t len);
/* A new fd for rel (the caller closes it); O_NOFOLLOW added. */
int dircur_open(struct dircur *c, const char *rel, int flags);
int dircur_lstat(struct dircur *c, const char *rel, struct stat *st);
int rel_open(int mnt_fd, const char *rel, int flags);
int rel_lstat(int mnt_fd, const char *rel, struct stat *st);
/* strcmp with '/' below every other byte: a directory, then what is under
 * it, then its next sibling.  rel_cmp_p for qsort of char *. */
int rel_cmp(const char *a, const char *b);
int rel_cmp_p(const void *a, const void *b);
/* dir (dl bytes, "" for the mount itself) and name (nl bytes) as one
 * path relative to the mount, NUL-terminated in *buf (grown as needed):
 * "dir/name", or "name" under the mount.  Returns name's offset in it.
 * Neither dir nor name may point into *buf (it may move). */
size_t rel_join(char **buf, size_t *cap, const char *dir, size_t dl, const char *name, size_t nl);
/*
 * prefetch.c: lstat the paths rel[0..n) (relative to the mount, best in
 * rel_cmp order) from a few threads at once, results thrown away: the
 * kernel's caches then hold what the caller's own serial checks read.
 * Returns when done; the number of threads used (0: too few paths).
 */
unsigned prefetch_lstat(int mnt_fd, char *const *rel, size_t n);
/* fd (a SQLite file) read whole ahead, without waiting, when lookups
 * random searches would read more of it than that costs: 1 if it was. */
int prefetch_file(int fd, uint64_t lookups);
/* Bytes [off, off + len) of fd's page cache read ahead, without waiting;
 * -1 when the kernel refused (then the rest is not asked for). */
int prefetch_range(int fd, uint64_t off, uint64_t len);
/* About to search fd, the SQLite file of db (a sqlite3 *: the state
 * store, the name index), for the keys (*prefix, v[i]), or (v[i]) when
 * prefix is NULL, in its table or index tree: only the leaves those
 * searches will read, read ahead (btplan.c); when that cannot be told, the
 * file whole if n searches would read more of it (prefetch_file). */
void prefetch_sqlite(void *db, int fd, const char *tree, const int64_t *prefix,
		     const uint64_t *v, size_t n);
/* An open error meaning the path leads nowhere now (gone, or replaced by
 * a symlink, a non-directory or a socket: ENXIO): a change after the sync. */
int path_gone(int err);
/* The open-file soft limit raised as far as allowed (fs.nr_open for root). */
void raise_nofile(void);

/* walk.c: the namespace under the mount. */
struct walk_entry {
	int dirfd;		/* open directory holding the entry */
	uint64_t dir_ino;	/* its inode */
	const char *name;	/* entry name */
	const char *rel;	/* path relative to the mount */
	uint64_t ino;
	enum ftype type;
};
/*
 * Walk every directory under the mount (not crossing into other mounts),
 * record every path of every inode in r->res (root 0), and call visit (if
 * not NULL) for each entry first; visit may add items.  The mount point
 * itself is visited with rel "" and name ".".
 */
int walk_tree(struct resolver *r,
	      int (*visit)(struct resolver *r, const struct walk_entry *e,
			   void *ctx),
	      void *ctx);

/*
 * names.c: every path of every listed inode (root 0), from the name index
 * (nameindex.c) updated from the changed directories, or from a walk
 * (which rebuilds the index).  With visit, always the walk (visit as for
 * walk_tree); it builds the index too when there is none that can be used
 * (XFS's first run, which walks for its state store, leaves the index the
 * next run names from).
 */
int resolve_names(struct resolver *r,
		  int (*visit)(struct resolver *r, const struct walk_entry *e, void *ctx),
		  void *ctx);

/* fiemap.c: extents of an open file. */
struct fext {
	uint64_t logical, physical, len;
	uint32_t flags;		/* FIEMAP_EXTENT_* */
};
int fiemap_get(int fd, int xattr, struct fext **v, size_t *n);
/*
 * A regular file's changed byte ranges from its extents: the parts of
 * each extent in changed (device bytes), and, when the mapping itself may
 * have changed, every hole, unwritten, shared or not-yet-allocated range
 * too (those change content without writing the file's blocks).
 */
void fiemap_ranges(struct item *it, const struct fext *v, size_t n, uint64_t size,
		   const struct rangeset *changed, int map_changed);
/* fiemap_ranges for the item's first path, opened through cur.  RX_OK
 * (also when the path is gone), or RX_FULL_SCAN when it cannot be opened. */
int fiemap_item_ranges(struct resolver *r, struct dircur *cur, struct item *it,
		       const struct rangeset *changed, int map_changed);

/* ext4.c: the block of fs holding inode ino's record (its group's inode
 * table, by arithmetic), 0 when there is none. */
struct struct_ext2_filsys;
uint64_t ext4_inode_block(struct struct_ext2_filsys *fs, uint64_t ino);

/*
 * A filesystem's method (one file each: ext4.c, xfs.c, btrfs.c), found by
 * methods.c's table; main and the shared layers call only these hooks.
 */
struct resolve_method {
	const char *name;
	/* The filesystem types (libblkid's, mountinfo's) it reads. */
	const char *const *fstypes;
	unsigned flags;		/* RM_* */
	/* Before the change map is read (may be NULL): what must be noted
	 * first (btrfs: the last committed generation). */
	int (*before_map)(struct resolver *r);
	/* Fill r->res (inodes, reasons, ranges), the stats and the tally. */
	int (*resolve)(struct resolver *r);
	/* Free r->method_state (may be NULL). */
	void (*release)(struct resolver *r);
};

enum {
	RM_ANON_DEV = 1 << 0,	/* the mount's st_dev is not the device's:
				   the method checks its devices itself */
};

extern const struct resolve_method ext4_method, xfs_method, btrfs_method;
/* methods.c: the method reading fstype, or NULL. */
const struct resolve_method *method_for(const char *fstype);
/* A release hook: free(r->method_state) (a state of one block). */
void method_free_state(struct resolver *r);

/* output.c */
/* Default output: a path starting with '/' is literal; one starting with
 * '\' is escaped (\\ and \n), as sha256sum does. */
void out_escape_line(FILE *f, const char *path);
int output_results(struct resolver *r, FILE *f);

#endif /* CHJ_RESOLVE_H */
