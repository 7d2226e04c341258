// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the state store's file (resolve/store.c): SQLite
 * parses it, store.c reads its meta values, snapshots and hash rows.  The
 * file is root's own, but a damaged one must only ever mean "rebuild, list
 * conservatively".  Oracle beyond the sanitizers: each of the 64 lookups
 * matches at most once (a store with two rows for one epoch matches none);
 * store_open_keys (the open rows XFS closes when their entries are gone)
 * returns nothing on an error, else one key per open row.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resolve.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[80], j[96];
	FILE *f;

	/* tmpfs when there is one: the store writes its file. */
	snprintf(path, sizeof(path), "%s/chj-fuzz-store-%d.db",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", (int)getpid());
	snprintf(j, sizeof(j), "%s-journal", path);
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	if (store_fuzz_file(path) > 64)
		abort();
	unlink(path);
	unlink(j);
	return 0;
}
