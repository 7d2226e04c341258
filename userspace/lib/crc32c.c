// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the standard one:
 * initial value ~0, final xor ~0 -- the same as the kernel's crc32c() wrapped
 * by dm-chj.  Slice-by-8 tables, built once on first use; metadata reads are
 * bulk (a whole journal), so byte-at-a-time would show up in profiles.
 */
#include <pthread.h>

#include "libchj.h"

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^
				      table[0][table[t - 1][i] & 0xff];
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		/* Byte order independent: assemble the 8 bytes explicitly. */
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

uint32_t chj_crc32c(const void *buf, size_t len)
{
	pthread_once(&table_once, build_tables);
	return ~crc_update(~0u, buf, len);
}

uint32_t chj_block_csum(const void *block, size_t len)
{
	return chj_crc32c((const uint8_t *)block + 4, len - 4);
}
