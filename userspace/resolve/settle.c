// SPDX-License-Identifier: GPL-2.0 OR MIT
/* settle: the one rule, its table and its decision (settle.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "resolve.h"
#include "settle.h"

/*
 * Each row says why its bytes may be left out of the answer, or why not.
 * docs/resolve.md, "Nothing dropped", explains the same table for users;
 * tests/unit/resolve/test_settle.c holds the expected rule of each row,
 * written apart from this one.
 */
const struct settle_row settle_rows[AT_NR] = {
	[AT_DATA] = { "file data", SR_OWNED,
		"the file owning the blocks is listed (reason data)" },
	[AT_INODES] = { "inode tables", SR_OWNED,
		"every inode whose record is in a changed block is listed (reason inode)" },
	[AT_DIR] = { "directories", SR_OWNED,
		"the directory is listed (reason directory) and its entries named" },
	[AT_XATTR] = { "xattr blocks", SR_OWNED,
		"the inodes using the block are listed (reason xattr)" },
	[AT_MAPPING] = { "extent maps", SR_OWNED,
		"the file whose block map it is is listed (reason extent-map)" },
	[AT_TREE] = { "tree blocks", SR_OWNED,
		"btrfs: the inodes with items in a changed leaf are listed, or left out by their transid" },
	[AT_JOURNAL] = { "journal", SR_NEUTRAL,
		"the journal or log holds copies of metadata on its way home: the methods read it and "
		"attribute each logged block at its home location" },
	[AT_FREE] = { "free space", SR_NEUTRAL,
		"free now: no file holds it, and a later allocation writes the block or its owner" },
	[AT_META] = { "other metadata", SR_NEUTRAL,
		"superblocks, group descriptors, bitmaps, space and inode btrees: they say where space "
		"and inodes are, not what a file holds; an inode they give or take is written itself" },
	[AT_ORPHAN] = { "open unlinked files", SR_NEUTRAL,
		"ext4: blocks of inodes on the orphan list: no path names them, their content goes with "
		"the last close" },
	[AT_FREED] = { "freed in chunks", SR_NEUTRAL,
		"btrfs: inside a chunk but under no extent item now: freed since (copy-on-write moved "
		"it), or the second copy of a DUP block counted once" },
	[AT_GRAIN] = { "past the end, in its last region", SR_NEUTRAL,
		"the change map marks whole regions: the last region's tail past the filesystem's end "
		"is marked when its head is written" },
	[AT_UNMAPPED] = { "in no walked file (XFS, no rmapbt)", SR_CONSERVATIVE,
		"XFS without rmapbt: block map (bmbt) blocks, free space and AG metadata are in no "
		"file's FIEMAP; a block map changes only when blocks are allocated, freed or "
		"converted, which writes the inode (listed by its number) or the data itself" },
	[AT_NOFSMAP] = { "in no GETFSMAP record (XFS, rmapbt)", SR_CONSERVATIVE,
		"XFS with rmapbt: GETFSMAP reported no owner, not even free space; seen after a crash's "
		"log recovery (8 KiB, resolve-crash); what it can change is as without rmapbt (row "
		"above): accepted as before this table, counted and shown until its cause is known" },
	[AT_OUTSIDE] = { "outside the filesystem", SR_FULL_SCAN,
		"past the end of the filesystem: a resize not seen yet, or another user of the device" },
	[AT_UNOWNED] = { "allocated, no owner", SR_FULL_SCAN,
		"ext4: in use, outside static metadata, owned by no linked inode nor an open unlinked "
		"one: a file the scan could not see" },
	[AT_UNNAMED] = { "inodes that cannot be named", SR_FULL_SCAN,
		"a changed inode whose path cannot be told: its change cannot be reported" },
	[AT_UNKNOWN] = { "unattributed", SR_FULL_SCAN,
		"changed bytes the method's records do not cover" },
};

void tally_add(struct tally *t, enum attr a, uint64_t bytes)
{
	t->bytes[a] += bytes;
}

void tally_note(struct tally *t, enum attr a, uint64_t bytes, const char *fmt, ...)
{
	va_list ap;

	if (!bytes)
		return;
	if (!t->bytes[a]) {
		va_start(ap, fmt);
		vsnprintf(t->first[a], sizeof(t->first[a]), fmt, ap);
		va_end(ap);
	}
	t->bytes[a] += bytes;
}

enum verdict settle(const struct tally *t, const struct settle_row *rows, char *why, size_t len)
{
	enum verdict v = SETTLE_LISTED;
	size_t o = 0;

	if (len)
		why[0] = 0;
	for (int a = 0; a < AT_NR; a++) {
		if (!t->bytes[a] || rows[a].rule == SR_OWNED || rows[a].rule == SR_NEUTRAL)
			continue;
		if (rows[a].rule == SR_FULL_SCAN) {
			/* The first such category is the answer's reason. */
			if (t->first[a][0])
				snprintf(why, len, "%s", t->first[a]);
			else
				snprintf(why, len, "%llu changed %s %s", (unsigned long long)t->bytes[a],
					 a == AT_UNNAMED ? "inodes" : "bytes:", rows[a].name);
			return SETTLE_FULL_SCAN;
		}
		v = SETTLE_CONSERVATIVE;
		if (o < len)
			o += (size_t)snprintf(why + o, len - o, "%s%llu bytes %s", o ? "; " : "",
					      (unsigned long long)t->bytes[a], rows[a].name);
	}
	return v;
}

const struct settle_row *settle_table(void)
{
	static struct settle_row mutated[AT_NR];
	const char *n = test_hook("CHJ_RESOLVE_SETTLE_NEUTRAL");

	if (!n || !*n)
		return settle_rows;
	memcpy(mutated, settle_rows, sizeof(mutated));
	for (int a = 0; a < AT_NR; a++)
		if (!strcmp(mutated[a].name, n))
			mutated[a].rule = SR_NEUTRAL;
	return mutated;
}
