// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The unit test runner: every suite, exit status 1 on any failure. */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
	SRunner *sr = srunner_create(suite_crc());
	int failed;

	srunner_add_suite(sr, suite_size());
	srunner_add_suite(sr, suite_sb());
	srunner_add_suite(sr, suite_journal());
	srunner_add_suite(sr, suite_bitmap());
	srunner_add_suite(sr, suite_changes());
	srunner_add_suite(sr, suite_check());
	srunner_add_suite(sr, suite_dmparse());
	srunner_add_suite(sr, suite_cli());
	srunner_add_suite(sr, suite_benchstats());
	srunner_add_suite(sr, suite_qcow2());
	srunner_add_suite(sr, suite_export_access());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
