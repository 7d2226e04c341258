// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj-resolve unit tests: the runner (exit 1 on any failure). */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
	SRunner *sr = srunner_create(suite_rangeset());
	int failed;

	srunner_add_suite(sr, suite_output());
	srunner_add_suite(sr, suite_ranges());
	srunner_add_suite(sr, suite_xfs());
	srunner_add_suite(sr, suite_xfslog());
	srunner_add_suite(sr, suite_jbd2());
	srunner_add_suite(sr, suite_cli());
	srunner_add_suite(sr, suite_store());
	srunner_add_suite(sr, suite_htab());
	srunner_add_suite(sr, suite_pathat());
	srunner_add_suite(sr, suite_prefetch());
	srunner_add_suite(sr, suite_btplan());
	srunner_add_suite(sr, suite_ext4());
	srunner_add_suite(sr, suite_util());
	srunner_add_suite(sr, suite_settle());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
