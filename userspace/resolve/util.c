// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Allocation that cannot fail quietly, time, numbers, error messages. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

void rx_check_outside(struct resolver *r, uint64_t fs_bytes, const char *fs)
{
	uint64_t g = r->region_bytes ? r->region_bytes : 1, end;
	uint64_t bytes;

	end = fs_bytes > UINT64_MAX - g ? UINT64_MAX : (fs_bytes + g - 1) / g * g;
	r->st.tally.bytes[AT_GRAIN] = rs_overlap_bytes(&r->changed, fs_bytes, end - fs_bytes);
	bytes = rs_overlap_bytes(&r->changed, end, UINT64_MAX - end);
	r->st.tally.bytes[AT_OUTSIDE] = 0;
	tally_note(&r->st.tally, AT_OUTSIDE, bytes,
		   "%llu changed bytes past the end of the %s filesystem (%llu bytes)",
		   (unsigned long long)bytes, fs, (unsigned long long)fs_bytes);
}

/*
 * The first touch of each 4 KiB page of the heap is a page fault: a
 * steady-state run at 1M files touches about 5000 (SQLite's page caches,
 * the result table, the sorts' buffers), and on the benchmark's host, a
 * virtual machine, a fault costs about 10 µs, more than the run's index
 * searches (docs/bench/history.md, resolver runs 34-35).  So the heap grows by
 * pad at once (malloc's top pad), that part advised MADV_HUGEPAGE: the
 * first touch of each 2 MiB is then one fault.  Allocations up to pad come
 * from the heap too (not from mmap, each mapping faulted page by page
 * again).  Only address space is reserved: what is never touched costs
 * nothing.  Where transparent huge pages are off the advice does nothing
 * (the heap only grows in larger steps); where malloc is not glibc's (a
 * sanitizer, valgrind) nothing is done.  Returns the bytes advised.
 */
size_t heap_hugepages(size_t pad)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *a0, *a, *b, *p;

	if (pg <= 0 || pad < (size_t)pg || pad > INT_MAX / 2)
		return 0;
	if (!mallopt(M_MMAP_THRESHOLD, (int)pad) || !mallopt(M_TOP_PAD, (int)pad) ||
	    !mallopt(M_TRIM_THRESHOLD, (int)(2 * pad)))
		return 0;
	a0 = sbrk(0);
	/* Larger than what is left of the first heap: it grows, by pad more. */
	p = malloc(pad / 2);
	b = sbrk(0);
	if (!p || a0 == (char *)-1 || b == (char *)-1 || b <= a0 || p + pad / 2 > b || p + pad / 2 < a0) {
		free(p);
		return 0;
	}
	a = (char *)(((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1));
	if (madvise(a, (size_t)(b - a), MADV_HUGEPAGE))
		a = b;
	free(p);
	return (size_t)(b - a);
}

