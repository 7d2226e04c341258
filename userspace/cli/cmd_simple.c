// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj remove and chj checkpoint: one device-mapper call each. */
#include "cli.h"

/* Parse a command whose only argument is NAME; 0 or an exit code. */
static int only_name(const struct chj_cmd *c, int argc, char **argv)
{
	static const struct option lo[] = { { 0 } };

	if (cli_getopt(c, argc, argv, "", lo) != -1)
		return c->usage_exit;
	if (argc - optind != 1)
		return cli_usage(c, optind == argc ? "NAME is required" : "too many arguments");
	return 0;
}

int cmd_remove(int argc, char **argv)
{
	const struct chj_cmd *c = chj_find_cmd("remove");
	struct chj_error e = { 0 };
	int rc = only_name(c, argc, argv);

	if (rc)
		return rc;
	if (chj_dm_remove(argv[optind], &e))
		return cli_fail(&e);
	return cli_finish(EXIT_OK);
}

int cmd_checkpoint(int argc, char **argv)
{
	const struct chj_cmd *c = chj_find_cmd("checkpoint");
	struct chj_error e = { 0 };
	uint64_t epoch;
	int rc = only_name(c, argc, argv);

	if (rc)
		return rc;
	if (chj_dm_checkpoint(argv[optind], &epoch, &e))
		return cli_fail(&e);
	printf("%llu\n", (unsigned long long)epoch);
	return cli_finish(EXIT_OK);
}
