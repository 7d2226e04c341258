/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * libchj: read, check and write chj metadata (include/chj_format.h), answer
 * "which sectors changed since epoch E", and drive the dm-chj target through
 * libdevmapper.  Used by the chj command, chj-resolve and the tests.
 *
 * Conventions:
 *  - Every function that can fail returns an enum chj_rc (0 = CHJ_OK) and
 *    fills a struct chj_error, whose msg reads "<what>: <why>" and is ready
 *    to print after "chj: ".
 *  - Sizes and positions on the origin are in 512-byte sectors.
 *  - Nothing read from disk is trusted: every size and offset is checked
 *    before it is used (chj_sb_check and the journal/bitmap checks).
 */
#ifndef LIBCHJ_H
#define LIBCHJ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "chj_format.h"

/*
 * The release of chj: the tools (chj --version, chj-resolve --version), the
 * module (MODULE_VERSION) and the DKMS package (dkms.conf) all carry this
 * one number (a unit test compares them).  The on-disk format has its own,
 * CHJ_VERSION in chj_format.h.
 */
#define CHJ_RELEASE	"1.0.0"

enum chj_rc {
	CHJ_OK = 0,
	CHJ_ERR_IO,		/* open, read or write failed */
	CHJ_ERR_CORRUPT,	/* metadata is invalid or damaged */
	CHJ_ERR_NOT_RETAINED,	/* epoch older than the oldest retained one */
	CHJ_ERR_FUTURE,		/* epoch newer than the current one */
	CHJ_ERR_UNSTABLE,	/* metadata kept changing while it was read */
	CHJ_ERR_NOMEM,
	CHJ_ERR_INVAL,		/* bad argument */
	CHJ_ERR_DM,		/* a device-mapper operation failed */
	CHJ_ERR_NOT_FOUND,	/* no such device */
	CHJ_ERR_EXISTS,		/* device exists with a different table */
	CHJ_ERR_BUSY,		/* device in use, or carries a signature */
	CHJ_ERR_RANGE,		/* a number too large (parsers) */
	CHJ_ERR_UNTRUSTED,	/* chj metadata, but its history or bitmap is damaged */
};

/*
 * 1 for the errors that mean "take a full backup": the epoch asked for is
 * no longer retained, is newer than the current one (the metadata was
 * formatted anew since), or the map is damaged (CHJ_ERR_UNTRUSTED).  Both
 * tools exit 3 for exactly these.
 */
int chj_rc_full_backup(int rc);

struct chj_error {
	int rc;
	char msg[512];
};

/* Set e (when non-NULL) and return rc. */
int chj_err(struct chj_error *e, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- CRC-32C (Castagnoli) ---- */
uint32_t chj_crc32c(const void *buf, size_t len);
/* Checksum of a metadata block: CRC-32C of bytes [4, len). */
uint32_t chj_block_csum(const void *block, size_t len);

/* ---- sizes ---- */
/*
 * Parse a size: decimal digits, then optionally K, M, G, T or P (binary
 * multiples of 1024, any case), optionally followed by "iB" or "B".  A bare
 * number is bytes; "B" alone is bytes.  CHJ_ERR_INVAL for empty, negative,
 * fractional and trailing garbage, CHJ_ERR_RANGE for more than 2^64 - 1.
 */
int chj_parse_size(const char *s, uint64_t *bytes);
/*
 * Parse a decimal unsigned 64-bit number, nothing else allowed (no sign, no
 * space): CHJ_ERR_INVAL, or CHJ_ERR_RANGE past 2^64 - 1.  The one number
 * parser of chj and chj-resolve.
 */
int chj_parse_u64(const char *s, uint64_t *v);
/* "4 KiB", "1.5 GiB", "512 B": human size into buf. */
const char *chj_human_size(uint64_t bytes, char *buf, size_t len);

/* Largest kernel memory for region bitmaps chj create picks a region size for. */
#define CHJ_DEFAULT_MAX_BITMAP_BYTES	(64ull << 20)
#define CHJ_DEFAULT_REGION_SECTORS	CHJ_MIN_REGION_SECTORS
/*
 * Default region size for an origin: 4 KiB, doubled until the kernel's two
 * region bitmaps (alloc_bits() in dm-chj-metadata.c: the exact map and its
 * durable bits, nr_regions / 8 bytes each, 64 MiB per TiB at 4 KiB) fit in
 * 64 MiB: raised for origins over 1 TiB.  *raised tells whether it had to
 * grow.  (Rounding to whole bitmap blocks and the dirty bits add under
 * 0.1 %.)
 */
uint32_t chj_default_region_sectors(uint64_t origin_sectors, int *raised);

/* ---- decoded superblock ---- */
struct chj_sb {
	uint64_t seq;
	uint32_t flags;
	uint8_t uuid[16];
	uint32_t region_sectors;
	uint64_t nr_regions;
	uint64_t origin_sectors;
	uint64_t metadata_blocks;
	uint64_t bitmap_start, bitmap_blocks;
	uint64_t journal_start, journal_blocks;
	uint64_t current_epoch, oldest_epoch;
	uint64_t journal_head, journal_tail;
	uint64_t epoch_start_time, format_time;
	unsigned copy;		/* block (0 or 1) it was read from */
	/*
	 * Format 2's intent map (format 1: version 1, no chunk marked): a
	 * marked chunk's regions count as changed in the current epoch.
	 * chj_sb_encode() writes format 2 whatever version says.
	 */
	uint32_t version;
	uint32_t chunk_shift;
	uint8_t intent[CHJ_INTENT_BYTES];
};

/* Chunks marked in sb's intent map. */
uint64_t chj_sb_marked_chunks(const struct chj_sb *sb);
/* The chunk shift chj format and dm-chj use by default for a geometry. */
uint32_t chj_default_chunk_shift(uint32_t region_sectors, uint64_t nr_regions);
/* dm-chj's chunk_sectors when the table gives none: 4 MiB. */
#define CHJ_DEFAULT_CHUNK_SECTORS 8192u
/*
 * The chunk shift (log2 of regions per chunk) dm-chj uses for a table's
 * chunk_sectors (0: the default) over nr_regions: at least one region, and
 * bigger when the chunks would not fit the intent map (chj_chunk_shift_for).
 */
uint32_t chj_chunk_shift(uint32_t region_sectors, uint32_t chunk_sectors,
			 uint64_t nr_regions);

/*
 * raw is a whole superblock block (CHJ_BLOCK_SIZE bytes): format 2 keeps
 * the intent map after the superblock in the same block.
 */
void chj_sb_decode(const struct chj_superblock *raw, struct chj_sb *sb);
void chj_sb_encode(const struct chj_sb *sb, struct chj_superblock *raw);
/* "01234567-89ab-..." */
void chj_uuid_str(const uint8_t uuid[16], char out[37]);

/* ---- metadata access ---- */
struct chj_meta;

/*
 * Open a metadata device or image file (offline).  Reads use O_DIRECT where
 * the file system allows it.  writable opens O_RDWR, and O_EXCL for block
 * devices so that metadata in use by a live target cannot be written.
 */
int chj_meta_open(struct chj_meta **mp, const char *path, int writable,
		  struct chj_error *e);
/* Open an image held in memory (tests, fuzzing).  buf must outlive m. */
int chj_meta_open_mem(struct chj_meta **mp, void *buf, size_t len,
		      int writable, struct chj_error *e);
/* Open the metadata device of the live dm-chj device NAME (read-only). */
int chj_meta_open_live(struct chj_meta **mp, const char *dm_name,
		       struct chj_error *e);
void chj_meta_close(struct chj_meta *m);
uint64_t chj_meta_dev_blocks(const struct chj_meta *m);

/* Per-copy state of the two superblock blocks (for dump and check). */
enum chj_sb_state {
	CHJ_SB_VALID,
	CHJ_SB_ZERO,		/* never written */
	CHJ_SB_BAD_MAGIC,
	CHJ_SB_BAD_CSUM,
	CHJ_SB_BAD_FIELDS,	/* chj_sb_check refused it */
	CHJ_SB_MISPLACED,	/* seq % 2 != block index */
};
struct chj_sb_copies {
	enum chj_sb_state state[CHJ_SB_COPIES];
	const char *why[CHJ_SB_COPIES];	/* reason for state != VALID */
	struct chj_sb sb[CHJ_SB_COPIES];	/* decoded when readable */
	int best;			/* index of the copy in use, or -1 */
};
/*
 * Classify a superblock block (CHJ_BLOCK_SIZE bytes) read from block idx
 * of a metadata device of dev_blocks blocks; why says what is wrong.
 */
enum chj_sb_state chj_sb_classify(const void *block, unsigned idx,
				  uint64_t dev_blocks, const char **why);
/* Read both copies and pick the valid one with the highest seq. */
int chj_sb_read_copies(struct chj_meta *m, struct chj_sb_copies *c,
		       struct chj_error *e);
/* The superblock in use; CHJ_ERR_CORRUPT when neither copy is valid. */
int chj_sb_read(struct chj_meta *m, struct chj_sb *sb, struct chj_error *e);

/* ---- changed ranges ---- */
struct chj_range {
	uint64_t start;		/* sectors */
	uint64_t len;		/* sectors */
};

struct chj_changes_info {
	struct chj_sb sb;		/* the snapshot the answer comes from */
	uint64_t since;
	uint64_t changed_regions;
	uint64_t damaged_bitmap_blocks;	/* counted as all changed */
	unsigned tries;			/* snapshot attempts it took */
	/*
	 * Format 2: chunks marked in the current epoch's intent map (whole
	 * chunks counted; after an unclean stop, or writes in the last
	 * seconds), and whether an epoch of the answer was recovered coarse
	 * from an unclean stop (its record holds whole chunks).
	 */
	uint64_t marked_chunks;
	uint64_t chunk_regions;
	int coarse;
};

struct chj_changes;

/*
 * Regions changed since epoch `since` (oldest <= since <= current): the
 * journal records of epochs >= since plus the current bitmap.  Reads a
 * consistent snapshot (see changes.c).  since < oldest gives
 * CHJ_ERR_NOT_RETAINED ("full backup needed"), since > current
 * CHJ_ERR_FUTURE, a damaged journal record CHJ_ERR_UNTRUSTED, no valid
 * superblock CHJ_ERR_CORRUPT.  Nothing is returned unless the whole answer
 * is known.  Damaged bitmap blocks count as all changed and are counted in
 * the info: call chj_changes_trusted before using the answer.
 */
int chj_changes_since(struct chj_meta *m, uint64_t since,
		      struct chj_changes **out, struct chj_error *e);
void chj_changes_free(struct chj_changes *c);
/*
 * CHJ_OK, or CHJ_ERR_UNTRUSTED when damaged bitmap blocks were read (their
 * regions are reported changed, but damage there means the map cannot be
 * trusted: chj check --repair, then a full backup).
 */
int chj_changes_trusted(const struct chj_changes *c, const char *what,
			struct chj_error *e);
const struct chj_changes_info *chj_changes_info(const struct chj_changes *c);
/*
 * Iterate the changed ranges in sectors, sorted, merged and clipped at the
 * origin's end.  Start with *cursor = 0; returns 1 with *r filled, 0 at the
 * end.
 */
int chj_changes_next(const struct chj_changes *c, uint64_t *cursor,
		     struct chj_range *r);
/* All ranges in one array (caller frees *v). */
int chj_changes_ranges(const struct chj_changes *c, struct chj_range **v,
		       size_t *n, struct chj_error *e);
/* 1 if any sector of [start, start + len) lies in a changed region. */
int chj_changes_test(const struct chj_changes *c, uint64_t start,
		     uint64_t len);

/* ---- formatting and writing ---- */
struct chj_format_opts {
	uint64_t origin_sectors;
	uint32_t region_sectors;
	uint64_t now;			/* format_time; 0 = time(NULL) */
	const uint8_t *uuid;		/* NULL = random */
};
/*
 * Format m: superblock seq 0 in block 0 and seq 1 in block 1 (identical
 * otherwise, so either copy alone is a valid format), epoch 1, empty
 * journal, bitmap blocks stamped epoch 0 (empty).  The journal takes the
 * rest of the device, rounded down to whole blocks.
 */
int chj_format(struct chj_meta *m, const struct chj_format_opts *o,
	       struct chj_error *e);
/*
 * Commit sb as the next superblock: seq + 1 into block (seq + 1) % 2, the
 * copy not in use, so a torn write leaves the current one intact.  Updates
 * sb->seq and sb->copy.
 */
int chj_sb_commit(struct chj_meta *m, struct chj_sb *sb, struct chj_error *e);
/* Metadata blocks needed for an origin, keeping journal_blocks of history. */
uint64_t chj_metadata_blocks_for(uint64_t origin_sectors,
				 uint32_t region_sectors,
				 uint64_t journal_blocks);

/* ---- dump ---- */
struct chj_epoch_stat {
	uint64_t epoch;
	uint64_t blocks, extents, regions;
};
struct chj_dump {
	struct chj_sb_copies copies;
	struct chj_sb sb;
	struct chj_epoch_stat *epochs;	/* closed epochs with a record */
	size_t nr_epochs;
	uint64_t current_marked;	/* regions marked in the current epoch */
	uint64_t damaged_bitmap_blocks;
	int journal_ok;			/* 0: walk stopped at damage */
};
int chj_dump_collect(struct chj_meta *m, struct chj_dump *d,
		     struct chj_error *e);
void chj_dump_free(struct chj_dump *d);

/* ---- check and repair ---- */
enum chj_check_level { CHJ_NOTE, CHJ_PROBLEM, CHJ_FIXED };
typedef void (*chj_check_report_fn)(void *ctx, enum chj_check_level lvl,
				    const char *msg);
struct chj_check_result {
	unsigned problems;	/* errors found */
	unsigned fixed;		/* of those, repaired */
	unsigned notes;		/* harmless findings */
	int no_superblock;	/* neither copy valid: not (or no longer) chj metadata */
};
/*
 * Verify everything.  With repair (m writable), make damaged metadata safe:
 * rewrite damaged bitmap blocks all-ones, drop unreadable journal history by
 * raising oldest_epoch, set CHJ_SB_F_ALL_CHANGED where a bitmap block
 * cannot be rewritten.  It never clears a mark.  Returns CHJ_OK when the
 * check ran (see r for findings); other codes for operational failures.
 */
int chj_check(struct chj_meta *m, int repair, chj_check_report_fn fn,
	      void *ctx, struct chj_check_result *r, struct chj_error *e);

/* ---- device-mapper ---- */
#define CHJ_TARGET_NAME	"chj"

#define CHJ_DM_CONTROL	"/dev/mapper/control"

/*
 * A chj table line: "<metadata> <origin> <region_sectors> [<#features>
 * <feature>...]".  chunk_sectors 0 and mark_ahead 0 are the features'
 * absence; feature words this library does not know are kept verbatim in
 * other_features (space-separated) so that a table read back compares and
 * prints whole.  mark_ahead is inert in format 2 (dm-chj accepts it for old
 * tables and echoes it back; a chunk mark covers what it did).
 */
struct chj_dm_table {
	uint64_t start, len;		/* sectors */
	dev_t metadata, origin;
	uint32_t region_sectors;
	uint32_t chunk_sectors;		/* feature "chunk_sectors N"; 0: none */
	uint32_t mark_ahead;		/* regions, feature "mark_ahead N" */
	char other_features[96];
};
struct chj_dm_status {
	uint32_t region_sectors;
	uint64_t current_epoch, oldest_epoch;
	uint64_t marked, nr_regions;
	uint64_t journal_used, journal_blocks;
	int failed;			/* mode word was "fail" */
	char mode[16];
};

/* Set up libdevmapper: no udev sync when udev is not running. */
void chj_dm_init(void);
/* Parse the target-specific parts of a table and status line. */
int chj_parse_table_params(const char *params, struct chj_dm_table *t,
			   struct chj_error *e);
/* Format t's target parameters (the inverse); -1 if len is too short. */
int chj_dm_table_params(const struct chj_dm_table *t, char *buf, size_t len);
int chj_parse_status_params(const char *params, struct chj_dm_status *s,
			    struct chj_error *e);
/* Table of chj device NAME (CHJ_ERR_NOT_FOUND, CHJ_ERR_INVAL if not chj). */
int chj_dm_get_table(const char *name, struct chj_dm_table *t,
		     struct chj_error *e);
int chj_dm_status(const char *name, struct chj_dm_status *s,
		  struct chj_error *e);
/*
 * Send a target message; *response (malloc'd, may be NULL) gets the reply.
 */
int chj_dm_message(const char *name, const char *msg, char **response,
		   struct chj_error *e);
/* Send "checkpoint" and parse the new epoch number. */
int chj_dm_checkpoint(const char *name, uint64_t *new_epoch,
		      struct chj_error *e);
/*
 * Create NAME with table t and resume it, making /dev/mapper/NAME.  If NAME
 * exists with an equal table (features included), succeed with *existed = 1;
 * with another table fail with CHJ_ERR_EXISTS.  region_sectors 0 in t
 * matches any.
 */
int chj_dm_create(const char *name, const struct chj_dm_table *t,
		  int *existed, struct chj_error *e);
int chj_dm_remove(const char *name, struct chj_error *e);
/* Names of all chj devices, sorted; free with chj_free_names. */
int chj_dm_list(char ***names, size_t *n, struct chj_error *e);
void chj_free_names(char **names, size_t n);
/* Path of a block device node for dev (e.g. /dev/vdb) into buf. */
int chj_devnode(dev_t dev, char *buf, size_t len, struct chj_error *e);

/* ---- probing (libblkid) ---- */
/*
 * Look for a file system or other signature on path.  Returns CHJ_OK with
 * *found = 0, or *found = 1 and what[] naming it ("ext4", "LVM2_member").
 * A damaged chj superblock counts as a signature.
 */
int chj_probe_signature(const char *path, int *found, char *what,
			size_t len, struct chj_error *e);
/* Erase every signature libblkid knows of on path (before formatting). */
int chj_wipe_signatures(const char *path, struct chj_error *e);
/* Size in bytes of a block device or regular file. */
int chj_dev_size(const char *path, uint64_t *bytes, dev_t *rdev,
		 struct chj_error *e);

/* ---- mounts (libmount) ---- */
/*
 * The mount point of the first mount of block device dev (chj_mount_is_of),
 * as the kernel names it (escapes undone), in mnt: 1, or 0 when dev is not
 * mounted, -1 when the table cannot be read.  mountinfo: a file in
 * /proc/PID/mountinfo format, NULL for /proc/self/mountinfo.
 */
int chj_mount_point(const char *mountinfo, dev_t dev, char *mnt, size_t len);
/*
 * Is a mount, by its maj:min and its source (NULL: none), of block device
 * dev?  The one rule of chj status and chj-resolve.
 */
int chj_mount_is_of(dev_t mnt_dev, const char *source, dev_t dev);

/* ---- JSON ---- */
/*
 * Write s as a JSON string: control characters escaped, valid UTF-8 as is,
 * each byte that is not UTF-8 as \udcXX (Python's surrogateescape), so the
 * output is JSON that a strict decoder accepts and a file name round-trips.
 * Every JSON output of chj and chj-resolve writes its strings with this.
 */
void chj_json_str(FILE *f, const char *s);

#endif /* LIBCHJ_H */
