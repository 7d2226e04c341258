/* SPDX-License-Identifier: GPL-2.0 OR MIT */
#ifndef CHJ_SUITES_H
#define CHJ_SUITES_H
#include <check.h>
Suite *suite_crc(void);
Suite *suite_size(void);
Suite *suite_sb(void);
Suite *suite_journal(void);
Suite *suite_bitmap(void);
Suite *suite_changes(void);
Suite *suite_check(void);
Suite *suite_dmparse(void);
Suite *suite_cli(void);
Suite *suite_benchstats(void);
Suite *suite_qcow2(void);
Suite *suite_export_access(void);
#endif
