// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the B-tree read-ahead plan (resolve/btplan.c).
 * Input: one byte of flags (bit 0: two key columns, as the state store's
 * (root, ino); bits 1-3: how many of the fixed keys), four bytes of root
 * page (big-endian), then the file: a SQLite header gives the page size,
 * else pages of 512 bytes.
 *
 * Oracles beyond the sanitizers: the plan reads a bounded number of pages
 * (its interior limit and one page a level), asks for none outside the
 * file, and never advises more leaves than the file has pages.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "btplan.h"
#include "bytes.h"

struct fz {
	const uint8_t *d;
	size_t len;
	uint32_t psize, npages;
	unsigned reads;
};

static int rd(void *ctx, uint32_t pgno, void *buf)
{
	struct fz *f = ctx;

	if (++f->reads > BT_MAX_INTERIOR + 64)
		abort();	/* the plan must be bounded */
	if (!pgno || pgno > f->npages)
		abort();	/* a page outside the file asked for */
	memcpy(buf, f->d + (size_t)(pgno - 1) * f->psize, f->psize);
	return 0;
}

static void adv(void *ctx, uint32_t pgno, uint32_t n)
{
	struct fz *f = ctx;

	if (!pgno || !n || pgno > f->npages || n > f->npages - pgno + 1)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct bt_key keys[] = {
		{ { -1, 7 } }, { { 0, 0 } }, { { 0, 5 } }, { { 0, 4242 } }, { { 1, 1 } },
		{ { 100, 0 } }, { { 4294967296LL, 2 } }, { { 140737488355328LL, 0 } },
	};
	struct fz f = { 0 };
	struct bt_src s = { &f, rd, adv, 512, 512, 0 };
	uint32_t root;
	long rc;

	if (size < 5)
		return 0;
	root = be32(data + 1);
	f.d = data + 5;
	f.len = size - 5;
	if (bt_header(f.d, f.len, &s.psize, &s.usable)) {
		s.psize = 512;
		s.usable = 512;
	}
	f.psize = s.psize;
	f.npages = (uint32_t)(f.len / s.psize);
	s.npages = f.npages;
	rc = bt_plan(&s, root, keys, 1 + (data[0] >> 1 & 7), (data[0] & 1) + 1);
	if (rc > (long)f.npages)
		abort();
	return 0;
}
