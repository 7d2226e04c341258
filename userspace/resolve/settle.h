/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * settle: the project's one rule, in one place (docs/resolve.md, "Nothing
 * dropped").  Every method reports the changed bytes it found, by
 * attribution category, into one tally; one table (settle.c) declares for
 * each category whether its bytes are owned by what is listed, file-neutral
 * (they hold no file's content), covered conservatively, or a full scan,
 * and why; and settle() alone decides the run's answer from the tally.
 */
#ifndef CHJ_RESOLVE_SETTLE_H
#define CHJ_RESOLVE_SETTLE_H

#include <stddef.h>
#include <stdint.h>

/* Attribution categories: changed bytes by what they were found to be. */
enum attr {
	AT_DATA,	/* file data */
	AT_INODES,	/* inode tables / inode chunks */
	AT_DIR,		/* directory blocks */
	AT_XATTR,	/* xattr blocks */
	AT_MAPPING,	/* extent tree / bmbt blocks */
	AT_TREE,	/* btrfs tree blocks */
	AT_JOURNAL,	/* journal or log */
	AT_FREE,	/* free space now */
	AT_META,	/* other filesystem metadata */
	AT_ORPHAN,	/* ext4: held only by open unlinked inodes */
	AT_FREED,	/* btrfs: in a chunk, no extent item covers it now */
	AT_GRAIN,	/* past the filesystem's end, inside its last region */
	AT_UNMAPPED,	/* XFS without rmapbt: in no walked file's extents */
	AT_NOFSMAP,	/* XFS with rmapbt: in no GETFSMAP record */
	AT_OUTSIDE,	/* past the filesystem's end and its last region */
	AT_UNOWNED,	/* ext4: allocated, outside static metadata, no owner */
	AT_UNNAMED,	/* changed inodes (a count) whose name cannot be told */
	AT_UNKNOWN,	/* found by no record of the method's */
	AT_NR,
};

/* What a category's bytes mean for the answer. */
enum settle_rule {
	SR_OWNED,		/* their owners are listed (the method lists them) */
	SR_NEUTRAL,		/* no file's content: nothing to list */
	SR_CONSERVATIVE,	/* not attributed; what they can change is listed
				   through another change the method sees */
	SR_FULL_SCAN,		/* not attributed and not covered: exit 3 */
};

struct settle_row {
	const char *name;	/* as --stats prints it */
	enum settle_rule rule;
	const char *why;	/* the argument for the rule */
};

/* The table: one row per category, in enum attr's order. */
extern const struct settle_row settle_rows[AT_NR];

/*
 * The tally: changed bytes by category (AT_UNNAMED: inodes).  For the
 * categories that can end a run, the first place found, said in full.
 */
struct tally {
	uint64_t bytes[AT_NR];
	char first[AT_NR][200];
};

void tally_add(struct tally *t, enum attr a, uint64_t bytes);
/* tally_add, and the first such find said (fmt) for the answer. */
void tally_note(struct tally *t, enum attr a, uint64_t bytes, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

enum verdict {
	SETTLE_LISTED,		/* every changed byte owned or neutral */
	SETTLE_CONSERVATIVE,	/* and some covered conservatively */
	SETTLE_FULL_SCAN,	/* some neither: exit 3 */
};

/*
 * The run's answer from tally t under table rows (settle_rows; the unit
 * tests pass mutated ones).  For SETTLE_FULL_SCAN, why says which
 * category and where (its first note); for SETTLE_CONSERVATIVE, what was
 * covered so.
 */
enum verdict settle(const struct tally *t, const struct settle_row *rows, char *why, size_t len);

/*
 * chj-resolve-test's CHJ_RESOLVE_SETTLE_NEUTRAL=NAME (the row's name):
 * that row declared neutral, the mutation the host tests show is caught.
 * settle_rows itself otherwise (and always in chj-resolve).
 */
const struct settle_row *settle_table(void);

#endif
