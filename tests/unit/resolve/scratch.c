// SPDX-License-Identifier: GPL-2.0 OR MIT
/* Scratch directories for the unit tests that need real files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

char *scratch_dir(const char *tag)
{
	char *t = malloc(strlen(tag) + 32);

	ck_assert_ptr_nonnull(t);
	sprintf(t, "/tmp/chj-%s.XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(t));
	return t;
}

void scratch_rm(const char *dir)
{
	char cmd[256];

	ck_assert_uint_lt(strlen(dir), sizeof(cmd) - 16);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
