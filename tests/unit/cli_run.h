/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* Running chj_main inside the unit tests (test_cli.c). */
#ifndef CHJ_CLI_RUN_H
#define CHJ_CLI_RUN_H

/* chj FIRST ... NULL; its stdout and stderr land in out and err. */
int chj(const char *first, ...);
extern char out[65536], err[8192];

#endif
