// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The command line: parsing, usage errors, and --help against the man page. */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libchj.h"
#include "resolve.h"
#include "suites.h"

static struct resolver r;

/* What resolve_parse_args printed on stdout and stderr. */
static char out[4096], err[4096];

static void slurp_fd(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

/* Parse the given words (NULL-terminated); stdout and stderr land in out, err. */
static int parse_words(const char *first, ...)
{
	char *argv[16] = { "chj-resolve" };
	int argc = 1, rc, so, se;
	FILE *fo = tmpfile(), *fe = tmpfile();
	va_list ap;

	ck_assert(fo && fe);
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	memset(&r, 0, sizeof(r));
	fflush(stdout);
	fflush(stderr);
	so = dup(1);
	se = dup(2);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	rc = resolve_parse_args(&r, argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	slurp_fd(fo, out, sizeof(out));
	slurp_fd(fe, err, sizeof(err));
	return rc;
}

START_TEST(options)
{
	ck_assert_int_eq(parse_words("--since", "7", "--json", "--mount", "/m", "--stats", "dev", NULL), 0);
	ck_assert(r.have_since);
	ck_assert_uint_eq(r.since, 7);
	ck_assert_int_eq(r.out_mode, 2);
	ck_assert_str_eq(r.mount_opt, "/m");
	ck_assert(r.want_stats);
	ck_assert_str_eq(r.device_arg, "dev");
	ck_assert_int_eq(parse_words("-0", "/dev/mapper/x", NULL), 0);
	ck_assert_int_eq(r.out_mode, 1);
	ck_assert(!r.have_since);
	ck_assert_int_eq(parse_words("--help", NULL), -1);
	ck_assert_int_eq(parse_words("-h", NULL), -1);
	ck_assert_ptr_nonnull(strstr(out, "Usage: chj-resolve"));
	/* One release number with chj: chj --version prints the same. */
	ck_assert_int_eq(parse_words("--version", NULL), -1);
	ck_assert_str_eq(out, "chj-resolve " CHJ_RELEASE " (metadata format 2)\n");
}
END_TEST

START_TEST(usage_errors)
{
	ck_assert_int_eq(parse_words(NULL), RX_USAGE);
	ck_assert_int_eq(parse_words("-0", "--json", "d", NULL), RX_USAGE);
	ck_assert_int_eq(parse_words("--since", "x7", "d", NULL), RX_USAGE);
	ck_assert_int_eq(parse_words("--since", "-1", "d", NULL), RX_USAGE);
	ck_assert_int_eq(parse_words("--since", NULL), RX_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "chj-resolve: option '--since' needs an argument\n"));
	ck_assert_int_eq(parse_words("--mount", NULL), RX_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "option '--mount' needs an argument"));
	ck_assert_int_eq(parse_words("--bogus", "d", NULL), RX_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "chj-resolve: unknown option '--bogus'\n"));
	ck_assert_int_eq(parse_words("-x", "d", NULL), RX_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "unknown option '-x'"));
	ck_assert_int_eq(parse_words("d", "e", NULL), RX_USAGE);
}
END_TEST

static char *read_man(void)
{
	FILE *f = fopen("man/chj-resolve.8", "r");
	char *buf = calloc(1, 1 << 16);

	ck_assert_ptr_nonnull(f);
	ck_assert(fread(buf, 1, (1 << 16) - 1, f) > 0);
	fclose(f);
	return buf;
}

START_TEST(help_matches_man_page)
{
	char *man = read_man();
	const char *p = resolve_help;
	int n = 0;

	/* Every long option the help names is in the man page (roff: \-\-). */
	while ((p = strstr(p, "--"))) {
		char opt[32], want[40];
		int k = 0;

		p += 2;
		while (k < 30 && (islower((unsigned char)p[k]) || p[k] == '-'))
			opt[k] = p[k], k++;
		opt[k] = 0;
		if (!k)
			continue;
		snprintf(want, sizeof(want), "\\-\\-%s", opt);
		ck_assert_msg(strstr(man, want), "man page lacks %s", want);
		n++;
	}
	ck_assert_int_ge(n, 5);	/* since json mount stats help */
	ck_assert_ptr_nonnull(strstr(man, ".B \\-0"));
	ck_assert_ptr_nonnull(strstr(resolve_usage, "[--since EPOCH] [-0 | --json] [--mount DIR] [--stats] DEVICE"));
	/* The same exit statuses and escaping rule in both. */
	for (const char *w = "0123"; *w; w++) {
		char tp[16];

		snprintf(tp, sizeof(tp), ".TP\n.B %c\n", *w);
		ck_assert_msg(strstr(man, tp), "man page lacks exit status %c", *w);
	}
	ck_assert_ptr_nonnull(strstr(resolve_help, "3 full scan needed"));
	ck_assert_ptr_nonnull(strstr(man, "Full scan needed"));
	ck_assert_ptr_nonnull(strstr(resolve_help, "syncfs()"));
	ck_assert_ptr_nonnull(strstr(man, ".BR syncfs (2)"));
	free(man);
}
END_TEST

Suite *suite_cli(void)
{
	Suite *s = suite_create("cli");
	TCase *t = tcase_create("cli");

	tcase_add_test(t, options);
	tcase_add_test(t, usage_errors);
	tcase_add_test(t, help_matches_man_page);
	suite_add_tcase(s, t);
	return s;
}
