// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The methods chj-resolve knows: the one place that lists them (resolve.h). */
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

static const struct resolve_method *const methods[] = {
	&ext4_method, &xfs_method, &btrfs_method,
};

/* The release hook of a method whose state is one malloc'ed block. */
void method_free_state(struct resolver *r)
{
	free(r->method_state);
	r->method_state = NULL;
}

const struct resolve_method *method_for(const char *fstype)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		for (const char *const *t = methods[i]->fstypes; *t; t++)
			if (!strcmp(*t, fstype))
				return methods[i];
	return NULL;
}
