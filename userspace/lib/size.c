// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Size and number parsing for the command line, and human-readable sizes. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "libchj.h"

/*
 * Decimal digits at *s (at least one): value into *v, *s past them.  0, or
 * CHJ_ERR_INVAL without a digit, CHJ_ERR_RANGE past 2^64 - 1.
 */
static int digits(const char **s, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int range = 0;

	if (!p || !isdigit((unsigned char)*p))
		return CHJ_ERR_INVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = *p - '0';

		if (x > (UINT64_MAX - d) / 10)
			range = 1;
		else
			x = x * 10 + d;
	}
	*s = p;
	*v = x;
	return range ? CHJ_ERR_RANGE : CHJ_OK;
}

int chj_parse_u64(const char *s, uint64_t *v)
{
	uint64_t x;
	int rc = digits(&s, &x);

	if (rc == CHJ_ERR_INVAL || *s)
		return CHJ_ERR_INVAL;
	if (!rc)
		*v = x;
	return rc;
}

/* Shift for a unit letter, or -1. */
static int unit_shift(char c)
{
	static const char units[] = "KMGTP";
	const char *p = strchr(units, toupper((unsigned char)c));

	return (c && p) ? 10 * (int)(p - units + 1) : -1;
}

int chj_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t v = 0;
	int shift = 0, range = digits(&s, &v);

	if (range == CHJ_ERR_INVAL)
		return CHJ_ERR_INVAL;
	if (*s && unit_shift(*s) > 0)
		shift = unit_shift(*s++);
	/* After a unit letter: "", "B" or "iB"; with no letter only "" or "B". */
	if (shift && !strcasecmp(s, "iB"))
		s += 2;
	else if (!strcasecmp(s, "B"))
		s += 1;
	if (*s)
		return CHJ_ERR_INVAL;
	if (range || (shift && v > (UINT64_MAX >> shift)))
		return CHJ_ERR_RANGE;
	*bytes = v << shift;
	return CHJ_OK;
}

const char *chj_human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned u = 0;

	while (u < 6 && bytes >= (1024ull << (10 * u)))
		u++;
	if (!u)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else if (bytes % (1ull << (10 * u)) == 0)
		snprintf(buf, len, "%llu %s",
			 (unsigned long long)(bytes >> (10 * u)), units[u]);
	else
		snprintf(buf, len, "%.1f %s",
			 (double)bytes / (double)(1ull << (10 * u)), units[u]);
	return buf;
}

uint32_t chj_default_region_sectors(uint64_t origin_sectors, int *raised)
{
	uint64_t rs = CHJ_DEFAULT_REGION_SECTORS;
	/* Two bitmaps of a bit per region: bits and durable. */
	uint64_t max_regions = CHJ_DEFAULT_MAX_BITMAP_BYTES * 8 / 2;

	while (rs < CHJ_MAX_REGION_SECTORS &&
	       chj_regions_for(origin_sectors, rs) > max_regions)
		rs <<= 1;
	if (raised)
		*raised = rs != CHJ_DEFAULT_REGION_SECTORS;
	return rs;
}
