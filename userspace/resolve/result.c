// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The result table: inodes to list, why, their changed ranges and paths. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "resolve.h"

static const char *const reason_names[RSN_NR] = {
	"data", "inode", "directory", "xattr", "extent-map", "journal",
	"tree-leaf", "name",
};

const char *reason_name(unsigned bit)
{
	return bit < RSN_NR ? reason_names[bit] : "?";
}

const char *ftype_name(enum ftype t)
{
	static const char *const n[] = {
		"unknown", "file", "directory", "symlink", "char", "block",
		"fifo", "socket",
	};

	return (unsigned)t < sizeof(n) / sizeof(n[0]) ? n[t] : "unknown";
}

enum ftype ftype_from_mode(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return FT_REG;
	case S_IFDIR: return FT_DIR;
	case S_IFLNK: return FT_SYMLINK;
	case S_IFCHR: return FT_CHR;
	case S_IFBLK: return FT_BLK;
	case S_IFIFO: return FT_FIFO;
	case S_IFSOCK: return FT_SOCK;
	}
	return FT_UNKNOWN;
}

enum ftype ftype_from_dtype(unsigned char d)
{
	switch (d) {
	case DT_REG: return FT_REG;
	case DT_DIR: return FT_DIR;
	case DT_LNK: return FT_SYMLINK;
	case DT_CHR: return FT_CHR;
	case DT_BLK: return FT_BLK;
	case DT_FIFO: return FT_FIFO;
	case DT_SOCK: return FT_SOCK;
	}
	return FT_UNKNOWN;
}

void res_init(struct results *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void res_free(struct results *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		struct item *it = rs->tab[i];

		rs_free(&it->ranges);
		for (uint32_t p = 0; p < it->npaths; p++)
			free(it->paths[p]);
		free(it->paths);
		ht_free(&it->pidx);
		free(it);
	}
	free(rs->tab);
	ht_free(&rs->idx);
	res_init(rs);
}

struct item *res_find(const struct results *rs, uint64_t root, uint64_t ino)
{
	uint64_t h = ht_hash_pair(ino, root);
	size_t c;

	for (size_t i = ht_first(&rs->idx, h, &c); i != HT_NONE; i = ht_next(&rs->idx, h, &c))
		if (rs->tab[i]->ino == ino && rs->tab[i]->root == root)
			return rs->tab[i];
	return NULL;
}

struct item *res_get(struct results *rs, uint64_t root, uint64_t ino)
{
	struct item *it = res_find(rs, root, ino);
	size_t cap = rs->cap;

	if (it)
		return it;
	xgrow((void **)&rs->tab, &cap, rs->n + 1, sizeof(*rs->tab));
	/* NULL past n: the callers' loops over cap skip those. */
	memset(rs->tab + rs->cap, 0, (cap - rs->cap) * sizeof(*rs->tab));
	rs->cap = cap;
	it = xcalloc(1, sizeof(*it));
	it->root = root;
	it->ino = ino;
	it->size = UINT64_MAX;
	rs_init(&it->ranges);
	ht_add(&rs->idx, ht_hash_pair(ino, root), rs->n);
	rs->tab[rs->n++] = it;
	return it;
}

/*
 * Paths are deduplicated: a linear check while few, an index by name once
 * an inode has many (a million hard links must not cost 10^12 compares).
 */
void item_add_path(struct item *it, const char *rel)
{
	size_t cap = it->pcap;

	if (it->pidx.cap) {
		uint64_t h = ht_hash_str(rel);
		size_t c;

		for (size_t p = ht_first(&it->pidx, h, &c); p != HT_NONE; p = ht_next(&it->pidx, h, &c))
			if (!strcmp(it->paths[p], rel))
				return;
	} else {
		for (uint32_t p = 0; p < it->npaths; p++)
			if (!strcmp(it->paths[p], rel))
				return;
	}
	xgrow((void **)&it->paths, &cap, it->npaths + 1, sizeof(*it->paths));
	it->pcap = (uint32_t)cap;
	it->paths[it->npaths++] = xstrdup(rel);
	if (it->pidx.cap) {
		ht_add(&it->pidx, ht_hash_str(rel), it->npaths - 1);
	} else if (it->npaths >= 16) {
		for (uint32_t p = 0; p < it->npaths; p++)
			ht_add(&it->pidx, ht_hash_str(it->paths[p]), p);
	}
}

void item_clear_paths(struct item *it)
{
	for (uint32_t p = 0; p < it->npaths; p++)
		free(it->paths[p]);
	it->npaths = 0;
	ht_free(&it->pidx);
}

void item_drop(struct item *it)
{
	item_clear_paths(it);
	it->reasons = 0;
	rs_clear(&it->ranges);
}
