// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Reads of the tracked device that bypass the page cache.  XFS and btrfs
 * keep metadata in their own caches and jbd2 writes journal blocks from
 * private buffers, so the block device's page cache can hold stale copies:
 * everything chj-resolve reads from the device itself (rather than through
 * the mounted filesystem or libext2fs) goes through here, with O_DIRECT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resolve.h"

#define RAW_CHUNK	(1u << 20)

int raw_read(struct resolver *r, void *buf, size_t len, uint64_t off)
{
	uint64_t a = r->dev_lbs ? r->dev_lbs : 512;
	uint64_t start = off / a * a, end, pos;
	size_t cap;
	unsigned char *b = NULL;
	size_t done = 0;

	if (off > r->dev_bytes || len > r->dev_bytes - off)
		return rx_fail(r, RX_ERROR, "%s: read of %zu bytes at %llu is past the end of the device",
			       r->dev_path, len, (unsigned long long)off);
	end = (off + len + a - 1) / a * a;
	/* A bounce buffer no bigger than the read: most reads are a few
	 * blocks, and a 1 MiB one each time cost an mmap and a munmap. */
	cap = end - start > RAW_CHUNK ? RAW_CHUNK : end - start;
	if (posix_memalign((void **)&b, 4096, cap))
		return rx_fail(r, RX_ERROR, "out of memory");
	for (pos = start; pos < end;) {
		size_t want = end - pos > cap ? cap : end - pos;
		ssize_t got = pread(r->dev_fd, b, want, (off_t)pos);
		uint64_t lo, hi;

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int err = got < 0 ? errno : EIO;

			free(b);
			return rx_fail(r, RX_ERROR, "%s: read at %llu: %s", r->dev_path,
				       (unsigned long long)pos, strerror(err));
		}
		/* Copy the part of [pos, pos + got) inside [off, off + len). */
		lo = pos > off ? pos : off;
		hi = pos + (uint64_t)got < off + len ? pos + (uint64_t)got : off + len;
		if (hi > lo) {
			memcpy((unsigned char *)buf + (lo - off), b + (lo - pos), hi - lo);
			done += hi - lo;
		}
		pos += (uint64_t)got;
	}
	free(b);
	return done == len ? 0 : rx_fail(r, RX_ERROR, "%s: short read", r->dev_path);
}
