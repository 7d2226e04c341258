/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHJ_RESOLVE_SUITES_H
#define CHJ_RESOLVE_SUITES_H
#include <check.h>
Suite *suite_rangeset(void);
Suite *suite_output(void);
Suite *suite_ranges(void);
Suite *suite_xfs(void);
Suite *suite_xfslog(void);
Suite *suite_jbd2(void);
Suite *suite_cli(void);
Suite *suite_store(void);
Suite *suite_htab(void);
Suite *suite_pathat(void);
Suite *suite_prefetch(void);
Suite *suite_btplan(void);
Suite *suite_ext4(void);
Suite *suite_util(void);
Suite *suite_settle(void);
/* scratch.c: a fresh directory /tmp/chj-TAG.XXXXXX, and its removal. */
char *scratch_dir(const char *tag);
void scratch_rm(const char *dir);
#endif
