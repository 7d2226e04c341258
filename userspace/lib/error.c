// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The one way libchj reports a failure: a code plus "<what>: <why>". */
#include <stdarg.h>
#include <stdio.h>

#include "libchj.h"

int chj_err(struct chj_error *e, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return rc;
	e->rc = rc;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return rc;
}
