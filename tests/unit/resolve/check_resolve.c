// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj-resolve unit tests: the runner. */
#include <check.h>
#include <stdlib.h>

static Suite *suite_placeholder(void)
{
	return suite_create("resolve");
}

int main(void)
{
	SRunner *sr = srunner_create(suite_placeholder());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
