// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Sorted, merged sets of [start, start + len) ranges. */
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

void rs_init(struct rangeset *s)
{
	memset(s, 0, sizeof(*s));
}

void rs_free(struct rangeset *s)
{
	free(s->v);
	rs_init(s);
}

void rs_clear(struct rangeset *s)
{
	s->n = 0;
	s->dirty = 0;
}

void rs_add(struct rangeset *s, uint64_t start, uint64_t len)
{
	if (!len)
		return;
	if (start + len < start)	/* clamp at the top of the space */
		len = UINT64_MAX - start;
	/* Cheap merge with the last range keeps appends in order normalized. */
	if (s->n && !s->dirty) {
		struct range *l = &s->v[s->n - 1];

		if (start >= l->start && start <= l->start + l->len) {
			if (start + len > l->start + l->len)
				l->len = start + len - l->start;
			return;
		}
		if (start < l->start)
			s->dirty = 1;
	}
	xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v));
	s->v[s->n].start = start;
	s->v[s->n].len = len;
	s->n++;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->len > y->len) - (x->len < y->len);
}

void rs_normalize(struct rangeset *s)
{
	size_t i, o = 0;

	if (!s->dirty)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_range);
	for (i = 0; i < s->n; i++) {
		struct range c = s->v[i];

		if (o && c.start <= s->v[o - 1].start + s->v[o - 1].len) {
			struct range *l = &s->v[o - 1];

			if (c.start + c.len > l->start + l->len)
				l->len = c.start + c.len - l->start;
		} else {
			s->v[o++] = c;
		}
	}
	s->n = o;
	s->dirty = 0;
}

size_t rs_find(const struct rangeset *s, uint64_t pos)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].start + s->v[mid].len <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int rs_overlaps(const struct rangeset *s, uint64_t start, uint64_t len)
{
	size_t i;

	if (!len)
		return 0;
	i = rs_find(s, start);
	return i < s->n && s->v[i].start < start + len;
}

int rs_covers(const struct rangeset *s, uint64_t start, uint64_t len)
{
	size_t i;

	if (!len)
		return 1;
	i = rs_find(s, start);
	return i < s->n && s->v[i].start <= start &&
	       s->v[i].start + s->v[i].len >= start + len;
}

uint64_t rs_overlap_bytes(const struct rangeset *s, uint64_t start,
			  uint64_t len)
{
	uint64_t end = start + len, sum = 0;
	size_t i;

	for (i = rs_find(s, start); i < s->n && s->v[i].start < end; i++) {
		uint64_t a = s->v[i].start > start ? s->v[i].start : start;
		uint64_t b = s->v[i].start + s->v[i].len;

		if (b > end)
			b = end;
		sum += b - a;
	}
	return sum;
}

uint64_t rs_total(const struct rangeset *s)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		sum += s->v[i].len;
	return sum;
}

uint64_t rs_map_overlaps(struct rangeset *dst, const struct rangeset *s,
			 uint64_t start, uint64_t len, uint64_t dst_start)
{
	uint64_t end = start + len, sum = 0;
	size_t i;

	for (i = rs_find(s, start); i < s->n && s->v[i].start < end; i++) {
		uint64_t a = s->v[i].start > start ? s->v[i].start : start;
		uint64_t b = s->v[i].start + s->v[i].len;

		if (b > end)
			b = end;
		rs_add(dst, dst_start + (a - start), b - a);
		sum += b - a;
	}
	return sum;
}

void rs_subtract(struct rangeset *dst, const struct rangeset *a,
		 const struct rangeset *b)
{
	size_t i, j = 0;

	rs_clear(dst);
	for (i = 0; i < a->n; i++) {
		uint64_t pos = a->v[i].start, end = pos + a->v[i].len;

		while (j < b->n && b->v[j].start + b->v[j].len <= pos)
			j++;
		for (size_t k = j; k < b->n && b->v[k].start < end; k++) {
			if (b->v[k].start > pos)
				rs_add(dst, pos, b->v[k].start - pos);
			if (b->v[k].start + b->v[k].len > pos)
				pos = b->v[k].start + b->v[k].len;
			if (pos >= end)
				break;
		}
		if (pos < end)
			rs_add(dst, pos, end - pos);
	}
	rs_normalize(dst);
}

void rs_clip(struct rangeset *s, uint64_t end)
{
	size_t i, o = 0;

	for (i = 0; i < s->n; i++) {
		if (s->v[i].start >= end)
			continue;
		if (s->v[i].start + s->v[i].len > end)
			s->v[i].len = end - s->v[i].start;
		s->v[o++] = s->v[i];
	}
	s->n = o;
}
