// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Size and number parsing for the command line, and human-readable sizes. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "libchj.h"

int chj_parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!s || !isdigit((unsigned char)*s))
		return CHJ_ERR_INVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = *s - '0';

		if (x > (UINT64_MAX - d) / 10)
			return CHJ_ERR_INVAL;
		x = x * 10 + d;
	}
	if (*s)
		return CHJ_ERR_INVAL;
	*v = x;
	return CHJ_OK;
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
	char num[32];
	size_t n = 0;
	uint64_t v;
	int shift = 0;

	if (!s)
		return CHJ_ERR_INVAL;
	while (isdigit((unsigned char)s[n]))
		n++;
	if (!n || n >= sizeof(num))
		return CHJ_ERR_INVAL;
	memcpy(num, s, n);
	num[n] = 0;
	if (chj_parse_u64(num, &v))
		return CHJ_ERR_INVAL;
	s += n;
	if (*s && unit_shift(*s) > 0)
		shift = unit_shift(*s++);
	/* After a unit letter: "", "B" or "iB"; with no letter only "" or "B". */
	if (shift && !strcasecmp(s, "iB"))
		s += 2;
	else if (!strcasecmp(s, "B"))
		s += 1;
	if (*s)
		return CHJ_ERR_INVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return CHJ_ERR_INVAL;
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
	uint64_t max_regions = CHJ_DEFAULT_MAX_BITMAP_BYTES * 8;

	while (rs < CHJ_MAX_REGION_SECTORS &&
	       chj_regions_for(origin_sectors, rs) > max_regions)
		rs <<= 1;
	if (raised)
		*raised = rs != CHJ_DEFAULT_REGION_SECTORS;
	return rs;
}
