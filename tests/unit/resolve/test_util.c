// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The heap in huge pages (util.c, heap_hugepages): when it advises, the
 * heap's mapping carries the advice and holds the bytes advised; malloc
 * works as before either way (where it is not glibc's, nothing is
 * advised).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resolve.h"
#include "suites.h"

/* Whether the mapping holding p is advised for huge pages ("hg" in
 * /proc/self/smaps), and its size in KiB. */
static int advised(const void *p, unsigned long *kib)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, hg = 0;

	ck_assert_ptr_nonnull(f);
	*kib = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ' ') == line + strcspn(line, " ")) {
			if (in)
				break;
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			if (in)
				*kib = (hi - lo) >> 10;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8))
			hg = strstr(line, " hg") != NULL;
	}
	fclose(f);
	return hg;
}

START_TEST(heap_hugepages_advises_the_heap_and_malloc_works)
{
	size_t pad = 8 << 20, got;
	unsigned long kib;
	char *p, *q;

	got = heap_hugepages(pad);
	/* Allocations of every size work after it, big ones in the heap. */
	p = malloc(100);
	q = malloc(pad / 4);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(q);
	memset(q, 1, pad / 4);
	if (got) {
		/* glibc's malloc, THP not off: the advised part is big, and
		 * what malloc hands out below pad lies in it. */
		ck_assert_uint_ge(got, pad);
		ck_assert(advised(q + pad / 8, &kib));
		ck_assert_uint_ge(kib, (unsigned long)(pad >> 10));
	}
	free(q);
	free(p);
	/* Nonsense sizes: nothing done. */
	ck_assert_uint_eq(heap_hugepages(0), 0);
	ck_assert_uint_eq(heap_hugepages((size_t)1 << 40), 0);
}
END_TEST

Suite *suite_util(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, heap_hugepages_advises_the_heap_and_malloc_works);
	suite_add_tcase(s, tc);
	return s;
}
