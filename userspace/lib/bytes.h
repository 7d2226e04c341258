/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Fixed-endian loads from on-disk structures read into byte buffers, and
 * stores: any alignment, any host byte order.  ext4, btrfs, the name cache
 * and dm-log-writes logs are little-endian; XFS, jbd2 and qcow2 are
 * big-endian; XFS log items carry both.  The only byte-order helpers for
 * byte buffers in chj (chj-resolve and its fuzzers, libchj's qcow2 writer,
 * lw-replay, the unit tests); chj's own aligned structures use
 * chj_le32()/chj_le64() of chj_format.h.
 */
#ifndef CHJ_BYTES_H
#define CHJ_BYTES_H

#include <stdint.h>

static inline uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static inline uint16_t be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static inline void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void put_le64(unsigned char *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline void put_be32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * (3 - i)));
}

static inline void put_be64(unsigned char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

#endif
