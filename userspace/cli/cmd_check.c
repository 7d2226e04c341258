// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj check: full verification with fsck's exit codes. */
#include "cli.h"

static void report(void *ctx, enum chj_check_level lvl, const char *msg)
{
	static const char *tag[] = { "note", "error", "fixed" };

	printf("%s: %s: %s\n", (const char *)ctx, tag[lvl], msg);
}

int cmd_check(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ 0 }
	};
	const struct chj_cmd *c = chj_find_cmd("check");
	struct chj_error e = { 0 };
	struct chj_check_result r;
	struct chj_meta *m = NULL;
	int opt, repair = 0, rc, code;
	const char *path;

	while ((opt = cli_getopt(c, argc, argv, "", lo)) != -1) {
		if (opt != 'r')
			return c->usage_exit;
		repair = 1;
	}
	if (optind != argc - 1)
		return cli_usage(c, optind == argc ? "METADATA_DEV is required" : "too many arguments");
	path = argv[optind];
	rc = chj_meta_open(&m, path, repair, &e);
	if (!rc)
		rc = chj_check(m, repair, report, (void *)path, &r, &e);
	chj_meta_close(m);
	if (rc) {
		cli_fail(&e);
		return cli_finish(FSCK_OPERATIONAL);
	}
	if (r.no_superblock) {
		/* Like e2fsck on something that is not a file system: 8. */
		printf("%s: not chj metadata (or both superblocks damaged): nothing to check\n", path);
		code = FSCK_OPERATIONAL;
	} else if (!r.problems) {
		printf("%s: clean\n", path);
		code = FSCK_OK;
	} else if (r.fixed >= r.problems) {
		printf("%s: %u errors, all corrected\n", path, r.problems);
		code = FSCK_CORRECTED;
	} else {
		printf("%s: %u errors, %u corrected%s\n", path, r.problems, r.fixed,
		       repair ? "" : " (run with --repair to make them safe)");
		code = FSCK_UNCORRECTED;
	}
	return cli_finish(code);
}
