// SPDX-License-Identifier: GPL-2.0 OR MIT
/* lwlog: reading dm-log-writes logs; the format and the rules in lwlog.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "lwlog.h"

int lwlog_read_fd(void *ctx, void *buf, size_t len, uint64_t off)
{
	int fd = *(int *)ctx;
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}

static int rd(struct lwlog *l, void *buf, size_t len, uint64_t off, char *err,
	      size_t errlen)
{
	if (off > l->size || len > l->size - off) {
		snprintf(err, errlen, "the log ends at byte %" PRIu64 ", %zu bytes at %" PRIu64
			 " wanted (truncated log?)", l->size, len, off);
		return -1;
	}
	if (l->read(l->ctx, buf, len, off)) {
		snprintf(err, errlen, "read error at byte %" PRIu64 ": %s", off, strerror(errno));
		return -1;
	}
	return 0;
}

int lwlog_open(struct lwlog *l, lwlog_read_fn read, void *ctx, uint64_t size,
	       char *err, size_t errlen)
{
	uint8_t sb[32];
	uint64_t magic, version;

	memset(l, 0, sizeof(*l));
	l->read = read;
	l->ctx = ctx;
	l->size = size;
	if (rd(l, sb, sizeof(sb), 0, err, errlen))
		return -1;
	magic = le64(sb);
	version = le64(sb + 8);
	l->nr_entries = le64(sb + 16);
	l->ss = le32(sb + 24);
	if (magic != LW_MAGIC) {
		snprintf(err, errlen, "not a dm-log-writes log (magic %#" PRIx64 ")", magic);
		return -1;
	}
	if (version != LW_VERSION) {
		snprintf(err, errlen, "unsupported log version %" PRIu64, version);
		return -1;
	}
	if (l->ss < 512 || l->ss > 65536 || (l->ss & (l->ss - 1))) {
		snprintf(err, errlen, "bad sector size %u", l->ss);
		return -1;
	}
	/* Each entry takes a header block after the super: a bound on the count. */
	if (l->nr_entries > size / l->ss) {
		snprintf(err, errlen, "%" PRIu64 " entries cannot fit in %" PRIu64 " bytes",
			 l->nr_entries, size);
		return -1;
	}
	l->hdr = malloc(l->ss);
	if (!l->hdr) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	l->pos = l->ss;
	return 0;
}

int lwlog_next(struct lwlog *l, struct lwlog_entry *e, char *err, size_t errlen)
{
	uint64_t ratio = l->ss / 512, nr, dlen, bytes;

	if (l->next >= l->nr_entries)
		return 0;
	if (rd(l, l->hdr, l->ss, l->pos, err, errlen))
		return -1;
	memset(e, 0, sizeof(*e));
	e->idx = l->next;
	e->flags = le64(l->hdr + 16);
	nr = le64(l->hdr + 8);
	dlen = le64(l->hdr + 24);
	/*
	 * The data (none for a discard) follows the header and must lie in
	 * the log; the range must fit in 64 bits of 512-byte sectors.
	 */
	if (((e->flags & LW_DISCARD) ? 0 : nr) > (l->size - l->pos - l->ss) / l->ss ||
	    nr > UINT64_MAX / ratio || le64(l->hdr) > UINT64_MAX / ratio - nr) {
		snprintf(err, errlen, "entry %" PRIu64 " (%" PRIu64 " blocks at %" PRIu64
			 ") does not fit the log", e->idx, nr, le64(l->hdr));
		return -1;
	}
	e->sector = le64(l->hdr) * ratio;
	if (e->flags & LW_MARK) {
		size_t n = dlen < l->ss - 32 ? (size_t)dlen : l->ss - 32;

		if (n >= sizeof(e->label))
			n = sizeof(e->label) - 1;
		memcpy(e->label, l->hdr + 32, n);
		e->label[n] = 0;
		nr = 0;
	}
	/* Discards carry no data blocks. */
	bytes = (e->flags & LW_DISCARD) ? 0 : nr * l->ss;
	e->nr = nr * ratio;
	e->data_off = l->pos + l->ss;
	l->pos = e->data_off + bytes;
	l->next++;
	return 1;
}

void lwlog_close(struct lwlog *l)
{
	free(l->hdr);
	l->hdr = NULL;
}
