/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A qcow2 v3 wrapper that lets QEMU serve chj's changes as a dirty bitmap:
 * no data clusters of its own, the raw data file (a snapshot of the origin)
 * mapped 1:1 (data_file_raw), and one persistent, disabled dirty bitmap
 * whose set bits are the changed ranges rounded outward to its granularity.
 * qemu-nbd -B NAME exports that bitmap as the NBD metadata context
 * qemu:dirty-bitmap:NAME.  Layout and limits: docs/export.md.
 */
#ifndef CHJ_QCOW2_H
#define CHJ_QCOW2_H

#include "libchj.h"

#define CHJ_QCOW2_CLUSTER_BITS		21	/* 2 MiB, QEMU's largest */
#define CHJ_QCOW2_MIN_GRAN_BITS		9	/* QEMU's bitmap limits */
#define CHJ_QCOW2_MAX_GRAN_BITS		31
#define CHJ_QCOW2_MAX_NAME		1023

/* Next changed range (sectors, sorted): 1 with *r filled, 0 at the end. */
typedef int (*chj_range_iter)(void *ctx, struct chj_range *r);

struct chj_qcow2_opts {
	uint64_t size;			/* virtual size, bytes, multiple of 512 */
	const char *data_file;		/* absolute path of the raw data file */
	const char *bitmap;		/* bitmap name */
	unsigned gran_bits;		/* granularity 2^gran_bits bytes */
};

struct chj_qcow2_stats {
	uint64_t dirty_bytes;		/* bytes covered by set bits */
	uint64_t data_clusters;		/* bitmap clusters written */
	uint64_t file_bytes;		/* size of the qcow2 file */
};

/*
 * Write the image into fd (an empty file), the bitmap built from the ranges
 * next() yields.  Ranges beyond size are an error.  st may be NULL.
 */
int chj_qcow2_write(int fd, const struct chj_qcow2_opts *o, chj_range_iter next,
		    void *ctx, struct chj_qcow2_stats *st, struct chj_error *e);

#endif /* CHJ_QCOW2_H */
