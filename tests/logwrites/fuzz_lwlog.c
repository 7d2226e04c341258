// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for lwlog (lwlog.h): any bytes as a dm-log-writes log.
 * Every entry lwlog returns must lie inside the log; the walk must end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lwlog.h"

struct mem {
	const uint8_t *p;
	size_t len;
};

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct mem *m = ctx;

	/* lwlog checks bounds first: a read past the end is its bug. */
	if (off > m->len || len > m->len - off)
		abort();
	memcpy(buf, m->p + off, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem m = { data, size };
	struct lwlog l;
	struct lwlog_entry e;
	char err[256];
	int r;

	if (lwlog_open(&l, mem_read, &m, size, err, sizeof(err)))
		return 0;
	while ((r = lwlog_next(&l, &e, err, sizeof(err))) == 1) {
		uint64_t bytes = (e.flags & LW_DISCARD) ? 0 : e.nr * 512;

		if (e.data_off > size || bytes > size - e.data_off)
			abort();
		if (strlen(e.label) >= sizeof(e.label))
			abort();
	}
	lwlog_close(&l);
	return 0;
}
