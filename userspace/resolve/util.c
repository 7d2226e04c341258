// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Allocation that cannot fail quietly, time, numbers, error messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resolve.h"

static void oom(void)
{
	fputs("chj-resolve: out of memory\n", stderr);
	exit(RX_ERROR);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		oom();
	return p;
}

void xgrow(void **v, size_t *cap, size_t need, size_t sz)
{
	size_t c = *cap;

	if (need <= c)
		return;
	if (!c)
		c = 16;
	while (c < need) {
		if (c > SIZE_MAX / 2 / sz)
			oom();
		c *= 2;
	}
	*v = xrealloc(*v, c * sz);
	*cap = c;
}

double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!s || !*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

int rx_fail(struct resolver *r, int code, const char *fmt, ...)
{
	va_list ap;

	/* The first failure is the one worth telling. */
	if (r->err_code)
		return r->err_code;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->err_code = code;
	return code;
}
