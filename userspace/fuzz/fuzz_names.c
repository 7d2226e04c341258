// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * libFuzzer harness for the name-cache file's body parser (resolve/names.c,
 * nc_parse): the file is root's own, but a damaged or torn one must only
 * ever mean "walk instead".  Oracle beyond the sanitizers: an accepted body
 * has no more directories than 16-byte headers fit in it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "resolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	long n = names_parse_body(data, size);

	if (n > (long)(size / 16))
		abort();
	return 0;
}
