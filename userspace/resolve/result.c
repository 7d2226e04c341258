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

static size_t hash(uint64_t root, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ (root + 0x7f4a7c159e3779b9ull) * 0xbf58476d1ce4e5b9ull;

	return (size_t)(h ^ (h >> 31));
}

void res_init(struct results *rs)
{
	memset(rs, 0, sizeof(*rs));
}

void res_free(struct results *rs)
{
	for (size_t i = 0; i < rs->cap; i++) {
		struct item *it = rs->tab[i];

		if (!it)
			continue;
		rs_free(&it->ranges);
		for (uint32_t p = 0; p < it->npaths; p++)
			free(it->paths[p]);
		free(it->paths);
		free(it->ptab);
		free(it);
	}
	free(rs->tab);
	res_init(rs);
}

struct item *res_find(const struct results *rs, uint64_t root, uint64_t ino)
{
	size_t i;

	if (!rs->cap)
		return NULL;
	for (i = hash(root, ino) & (rs->cap - 1); rs->tab[i]; i = (i + 1) & (rs->cap - 1))
		if (rs->tab[i]->ino == ino && rs->tab[i]->root == root)
			return rs->tab[i];
	return NULL;
}

static void rehash(struct results *rs)
{
	size_t ncap = rs->cap ? rs->cap * 2 : 1024, i;
	struct item **nt = xcalloc(ncap, sizeof(*nt));

	for (i = 0; i < rs->cap; i++) {
		struct item *it = rs->tab[i];
		size_t j;

		if (!it)
			continue;
		for (j = hash(it->root, it->ino) & (ncap - 1); nt[j]; j = (j + 1) & (ncap - 1))
			;
		nt[j] = it;
	}
	free(rs->tab);
	rs->tab = nt;
	rs->cap = ncap;
}

struct item *res_get(struct results *rs, uint64_t root, uint64_t ino)
{
	struct item *it = res_find(rs, root, ino);
	size_t i;

	if (it)
		return it;
	if ((rs->n + 1) * 2 > rs->cap)
		rehash(rs);
	it = xcalloc(1, sizeof(*it));
	it->root = root;
	it->ino = ino;
	it->size = UINT64_MAX;
	rs_init(&it->ranges);
	for (i = hash(root, ino) & (rs->cap - 1); rs->tab[i]; i = (i + 1) & (rs->cap - 1))
		;
	rs->tab[i] = it;
	rs->n++;
	return it;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return hash64(h);
}

static void ptab_insert(struct item *it, uint32_t idx)
{
	size_t s = str_hash(it->paths[idx]) & (it->ptcap - 1);

	while (it->ptab[s])
		s = (s + 1) & (it->ptcap - 1);
	it->ptab[s] = idx + 1;
}

/*
 * Paths are deduplicated: a linear check while few, a hash index once an
 * inode has many (a million hard links must not cost 10^12 compares).
 */
void item_add_path(struct item *it, const char *rel)
{
	size_t cap = it->pcap;

	if (it->ptab) {
		for (size_t s = str_hash(rel) & (it->ptcap - 1); it->ptab[s];
		     s = (s + 1) & (it->ptcap - 1))
			if (!strcmp(it->paths[it->ptab[s] - 1], rel))
				return;
	} else {
		for (uint32_t p = 0; p < it->npaths; p++)
			if (!strcmp(it->paths[p], rel))
				return;
	}
	xgrow((void **)&it->paths, &cap, it->npaths + 1, sizeof(*it->paths));
	it->pcap = (uint32_t)cap;
	it->paths[it->npaths++] = xstrdup(rel);
	if (it->npaths >= 16 && (size_t)it->npaths * 2 > it->ptcap) {
		uint32_t ncap = it->ptcap ? it->ptcap * 2 : 64;

		free(it->ptab);
		it->ptab = xcalloc(ncap, sizeof(*it->ptab));
		it->ptcap = ncap;
		for (uint32_t p = 0; p < it->npaths; p++)
			ptab_insert(it, p);
	} else if (it->ptab) {
		ptab_insert(it, it->npaths - 1);
	}
}

void item_clear_paths(struct item *it)
{
	for (uint32_t p = 0; p < it->npaths; p++)
		free(it->paths[p]);
	it->npaths = 0;
	free(it->ptab);
	it->ptab = NULL;
	it->ptcap = 0;
}

void item_drop(struct item *it)
{
	item_clear_paths(it);
	it->reasons = 0;
	rs_clear(&it->ranges);
}
