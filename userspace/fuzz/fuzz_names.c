// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the name index's file (resolve/nameindex.c):
 * SQLite parses it, nameindex.c reads its meta values and entry rows,
 * updates and rebuilds it.  The file is root's own, but a damaged one must
 * only ever mean "walk and rebuild".  Oracle beyond the sanitizers: every
 * entry a lookup returns is one this code could have written (a name of
 * 1-255 bytes without '/' or NUL, nonzero inode and directory).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[80], j[96];
	struct nlist l = { 0 };
	FILE *f;
	long n;

	/* tmpfs when there is one: the index writes its file. */
	snprintf(path, sizeof(path), "%s/chj-fuzz-names-%d.db",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", (int)getpid());
	snprintf(j, sizeof(j), "%s-journal", path);
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	n = nidx_fuzz_file(path, &l);
	if (n < 0 || (size_t)n != l.n)
		abort();
	for (size_t i = 0; i < l.n; i++) {
		const struct nent *e = &l.v[i];

		if (!e->ino || !e->dir || !e->len || e->len > 255 ||
		    memchr(NL_NAME(&l, e), '/', e->len) || memchr(NL_NAME(&l, e), 0, e->len))
			abort();
	}
	nl_free(&l);
	unlink(path);
	unlink(j);
	return 0;
}
