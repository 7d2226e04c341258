// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The chj command line: usage errors, help, and offline commands on images. */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_run.h"
#include "suites.h"
#include "testimg.h"

char out[65536], err[8192];
static char img[64];

/* Run chj with the given words; stdout and stderr land in out and err. */
int chj(const char *first, ...)
{
	char *argv[32] = { "chj" };
	int argc = 1, rc, so, se, fo, fe;
	char po[] = "/tmp/chj-out-XXXXXX", pe[] = "/tmp/chj-err-XXXXXX";
	va_list ap;
	ssize_t n;

	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	fo = mkstemp(po);
	fe = mkstemp(pe);
	so = dup(1);
	se = dup(2);
	dup2(fo, 1);
	dup2(fe, 2);
	rc = chj_main(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	n = pread(fo, out, sizeof(out) - 1, 0);
	out[n > 0 ? n : 0] = 0;
	n = pread(fe, err, sizeof(err) - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(fo);
	close(fe);
	unlink(po);
	unlink(pe);
	return rc;
}

static void setup(void)
{
	int fd;

	strcpy(img, "/tmp/chj-img-XXXXXX");
	fd = mkstemp(img);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
}

static void teardown(void)
{
	unlink(img);
}

START_TEST(usage_errors)
{
	ck_assert_int_eq(chj(NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("frobnicate", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "unknown command"));
	ck_assert_int_eq(chj("changes", "--metadata", img, NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "--since EPOCH is required"));
	ck_assert_int_eq(chj("changes", "--since", "x1", "--metadata", img, NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("changes", "--since", "-1", "--metadata", img, NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, "name", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("changes", "--since", "1", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("changes", "--since", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "option '--since' needs an argument"));
	ck_assert_int_eq(chj("changes", "--bogus", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "unknown option '--bogus'"));
	ck_assert_int_eq(chj("metadata-size", "-x", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "unknown option '-x'"));
	ck_assert_int_eq(chj("create", "a", "b", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("create", "a/b", "c", "d", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("create", "a", "b", "c", "--region-size", "3K", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("create", "a", "b", "c", "--region-size", "2G", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("create", "a", "b", "c", "--region-size", "2K", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("remove", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("remove", "a", "b", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("checkpoint", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("format", img, NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("format", img, "--origin-size", "1000", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "not a whole number of 512-byte sectors"));
	ck_assert_int_eq(chj("format", img, "--origin-size", "0", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "must not be zero"));
	ck_assert_int_eq(chj("format", img, "--origin-size", "99999999P", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "too large"));
	ck_assert_int_eq(chj("format", img, "--origin-size", "1X", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "not a size"));
	ck_assert_int_eq(chj("create", "a", "b", "c", "--region-size", "99999999999999999999", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "too large"));
	ck_assert_int_eq(chj("create", "a", "b", "c", "--chunk-size", "3M", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "--chunk-size 3M: must be a power of two from 4K to 1T"));
	ck_assert_int_eq(chj("create", "a", "b", "c", "--chunk-size", "2K", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("create", "a", "b", "c", "--chunk-size", "2T", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("create", "a", "b", "c", "--chunk-size", "x", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "not a size"));
	ck_assert_int_eq(chj("create", "a", "b", "c", "--mark-ahead", "32641", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "0 to 32640"));
	ck_assert_int_eq(chj("format", "--origin-size", "1M", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("dump", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("metadata-size", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1T", "--changed", "101", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1T", "--epochs", "x", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("help", "nope", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "unknown command 'nope'"));
	ck_assert_int_eq(chj("help", "create", "remove", NULL), EXIT_USAGE);
	/* chj check follows fsck: usage errors are 16. */
	ck_assert_int_eq(chj("check", NULL), FSCK_USAGE);
	ck_assert_int_eq(chj("check", "--frob", img, NULL), FSCK_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "chj: check: "));
}
END_TEST

START_TEST(help_for_every_command)
{
	ck_assert_int_eq(chj("help", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "Exit status"));
	ck_assert_int_eq(chj("--version", NULL), 0);
	ck_assert_str_eq(out, "chj " CHJ_RELEASE " (metadata format 2)\n");
	for (const struct chj_cmd *c = chj_cmds; c->name; c++) {
		char want[64];

		snprintf(want, sizeof(want), "Usage: chj %s ", c->name);
		ck_assert_int_eq(chj(c->name, "--help", NULL), 0);
		ck_assert_msg(strstr(out, want), "%s --help: %s", c->name, out);
		/* One way for every command: -h, and --help after other words. */
		ck_assert_int_eq(chj(c->name, "-h", NULL), 0);
		ck_assert_msg(strstr(out, want), "%s -h: %s", c->name, out);
		ck_assert_int_eq(chj(c->name, "x", "--bogus", "--help", NULL), 0);
		ck_assert_msg(strstr(out, want), "%s x --bogus --help: %s", c->name, out);
		ck_assert_int_eq(chj("help", c->name, NULL), 0);
		ck_assert_ptr_nonnull(strstr(out, want));
		ck_assert_ptr_nonnull(strstr(out, c->summary));
	}
}
END_TEST

START_TEST(offline_round_trip)
{
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "formatted"));
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, "--json", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"ranges\": []"));
	ck_assert_int_eq(chj("changes", "--since", "0", "--metadata", img, NULL), EXIT_FULL_BACKUP);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "full backup"));
	/* Newer than the current epoch: formatted anew since, full backup. */
	ck_assert_int_eq(chj("changes", "--since", "2", "--metadata", img, NULL), EXIT_FULL_BACKUP);
	ck_assert_int_eq(chj("dump", img, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "current 1, oldest retained 1"));
	ck_assert_int_eq(chj("dump", "--json", img, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"current_epoch\": 1"));
	ck_assert_int_eq(chj("check", img, NULL), FSCK_OK);
	ck_assert_ptr_nonnull(strstr(out, "clean"));
	/* Reformatting chj metadata needs --force. */
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", NULL), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "--force"));
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", "--force", NULL), 0);
}
END_TEST

/* Marks written through the library show up in chj changes output. */
START_TEST(changes_output_formats)
{
	struct timg t;
	int fd;

	timg_init(&t, 1024, 131072, 8);	/* 64 MiB origin */
	timg_mark(&t, 3, 2);
	timg_checkpoint(&t);
	timg_mark(&t, 100, 1);
	fd = open(img, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, t.buf, t.len, 0), (ssize_t)t.len);
	close(fd);
	timg_free(&t);
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "24 16\n800 8\n");
	ck_assert_int_eq(chj("changes", "--since", "2", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "800 8\n");
	ck_assert_int_eq(chj("changes", "--since", "1", "--bytes", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "12288 8192\n409600 4096\n");
	ck_assert_int_eq(chj("changes", "--since=1", "--json", "--metadata", img, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "{\"start\": 24, \"length\": 16},\n  {\"start\": 800, \"length\": 8}\n]}"));
	/* Mixed units are named: the ranges' "unit", the region size in bytes. */
	ck_assert_ptr_nonnull(strstr(out, "\"unit\": \"sectors\", \"region_size_bytes\": 4096,"));
	ck_assert_int_eq(chj("changes", "--since=1", "--json", "--bytes", "--metadata", img, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\"unit\": \"bytes\", \"region_size_bytes\": 4096,"));
	ck_assert_ptr_nonnull(strstr(out, "{\"start\": 12288, \"length\": 8192},\n  {\"start\": 409600, \"length\": 4096}\n]}"));
	ck_assert_int_eq(chj("dump", img, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "         1          1          1            2"));
}
END_TEST

/*
 * The JSON of chj's command (in out) against docs/json.md's vocabulary
 * (tests/tools/json-vocab.py): every key printed is documented, in the
 * one key style, and with all, every key documented is printed.
 */
static void json_vocabulary_ok(const char *cmd, int all)
{
	char path[] = "/tmp/chj-vocab-XXXXXX", sh[256];
	int fd = mkstemp(path), rc;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, out, strlen(out)), (ssize_t)strlen(out));
	close(fd);
	snprintf(sh, sizeof(sh), "python3 ../tests/tools/json-vocab.py ../docs/json.md %s %s <%s",
		 cmd, all ? "--all" : "", path);
	rc = system(sh);
	unlink(path);
	ck_assert_msg(rc == 0, "%s --json: keys not as docs/json.md says: %s", cmd, out);
}

/* chj changes and chj dump speak docs/json.md's vocabulary, old keys too. */
START_TEST(json_one_vocabulary)
{
	struct timg t;
	int fd;

	timg_init(&t, 1024, 131072, 8);
	timg_mark(&t, 3, 2);
	timg_checkpoint(&t);
	fd = open(img, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, t.buf, t.len, 0), (ssize_t)t.len);
	close(fd);
	timg_free(&t);
	ck_assert_int_eq(chj("changes", "--since=1", "--json", "--metadata", img, NULL), 0);
	json_vocabulary_ok("changes", 1);
	ck_assert_int_eq(chj("dump", "--json", img, NULL), 0);
	json_vocabulary_ok("dump", 1);
	ck_assert_ptr_nonnull(strstr(out, "\"region_size_bytes\": 4096,"));
	ck_assert_ptr_nonnull(strstr(out, "\"current_marked_regions\": 0,"));
	/* The checker itself: a key it does not know fails. */
	ck_assert_int_ne(system("echo '{\"current_epoch\": 1, \"regionSize\": 1}' | "
				"python3 ../tests/tools/json-vocab.py ../docs/json.md changes >/dev/null"), 0);
}
END_TEST

START_TEST(check_exit_codes)
{
	int fd;
	char byte = 0x55;

	ck_assert_int_eq(chj("check", "/nonexistent/x", NULL), FSCK_OPERATIONAL);
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", NULL), 0);
	/* Damage bitmap block 0: error left (4), then repaired (1), then clean. */
	fd = open(img, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, &byte, 1, 2 * CHJ_BLOCK_SIZE + 100), 1);
	close(fd);
	ck_assert_int_eq(chj("check", img, NULL), FSCK_UNCORRECTED);
	ck_assert_ptr_nonnull(strstr(out, "error: bitmap block 0"));
	/* A damaged bitmap block: the map cannot be trusted, nothing printed. */
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), EXIT_FULL_BACKUP);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "damaged bitmap blocks"));
	ck_assert_int_eq(chj("check", "--repair", img, NULL), FSCK_CORRECTED);
	ck_assert_int_eq(chj("check", img, NULL), FSCK_OK);
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "0 131072\n");	/* repair kept it all changed */
}
END_TEST

/* chj check on something that is not chj metadata: 8, as e2fsck. */
START_TEST(check_not_metadata)
{
	char junk[CHJ_BLOCK_SIZE * 2];
	int fd;

	ck_assert_int_eq(chj("check", img, NULL), FSCK_OPERATIONAL);	/* zeros */
	ck_assert_ptr_nonnull(strstr(out, "not chj metadata"));
	ck_assert_ptr_null(strstr(out, "--repair"));
	ck_assert_int_eq(chj("check", "--repair", img, NULL), FSCK_OPERATIONAL);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 2654435761u >> 13);
	fd = open(img, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	close(fd);
	ck_assert_int_eq(chj("check", img, NULL), FSCK_OPERATIONAL);
	ck_assert_ptr_nonnull(strstr(out, "not chj metadata"));
	/* And chj changes on it: an error, not "full backup needed". */
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), EXIT_ERROR);
}
END_TEST

/* Damaged history, or an epoch from before a reformat: full backup (3). */
START_TEST(changes_full_backup_cases)
{
	struct timg t;
	struct chj_journal_block *b;
	int fd;

	timg_init(&t, 1024, 131072, 8);
	timg_mark(&t, 3, 2);
	timg_checkpoint(&t);
	timg_mark(&t, 100, 1);
	b = timg_jblock(&t, t.sb.journal_head);
	b->nr_extents = chj_cpu32(999999);
	timg_reseal(b, CHJ_BLOCK_SIZE);
	fd = open(img, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, t.buf, t.len, 0), (ssize_t)t.len);
	close(fd);
	timg_free(&t);
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), EXIT_FULL_BACKUP);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "journal damaged"));
	/* The current epoch alone does not need the journal. */
	ck_assert_int_eq(chj("changes", "--since", "2", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "800 8\n");
	/* Epoch 5 of metadata at epoch 2: formatted anew since. */
	ck_assert_int_eq(chj("changes", "--since", "5", "--metadata", img, NULL), EXIT_FULL_BACKUP);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "newer than the current epoch"));
	/* After check --repair the history is dropped: 3 again, then clean. */
	ck_assert_int_eq(chj("check", "--repair", img, NULL), FSCK_CORRECTED);
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), EXIT_FULL_BACKUP);
	ck_assert_ptr_nonnull(strstr(err, "no longer retained"));
}
END_TEST

/*
 * The exit status table of chj(8) and README: every code it documents is
 * produced by a case here, and the man page lists exactly these codes.
 */
START_TEST(exit_status_table)
{
	/* "IMG" stands for a formatted image. */
	static const struct { int code; const char *argv[6]; } cases[] = {
		{ EXIT_OK, { "changes", "--since", "1", "--metadata", "IMG" } },
		{ EXIT_ERROR, { "changes", "--since", "1", "--metadata", "/nonexistent/meta" } },
		{ EXIT_USAGE, { "changes", "--since" } },
		{ EXIT_FULL_BACKUP, { "changes", "--since", "0", "--metadata", "IMG" } },
		{ EXIT_FULL_BACKUP, { "changes", "--since", "2", "--metadata", "IMG" } },
		{ FSCK_OK, { "check", "IMG" } },
		{ FSCK_OPERATIONAL, { "check", "/nonexistent/meta" } },
		{ FSCK_USAGE, { "check", "--bogus", "IMG" } },
	};
	static char man[65536];
	FILE *f = fopen("man/chj.8", "r");
	size_t n = f ? fread(man, 1, sizeof(man) - 1, f) : 0;
	char *sect;

	ck_assert_ptr_nonnull(f);
	fclose(f);
	man[n] = 0;
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", NULL), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *w[6] = { 0 };
		int rc;

		for (int k = 0; k < 5 && cases[i].argv[k]; k++)
			w[k] = strcmp(cases[i].argv[k], "IMG") ? cases[i].argv[k] : img;
		rc = chj(w[0], w[1], w[2], w[3], w[4], NULL);
		ck_assert_msg(rc == cases[i].code, "case %zu (%s %s): exit %d, want %d (%s)",
			      i, w[0], w[1] ? w[1] : "", rc, cases[i].code, err);
	}
	/* chj(8) lists 0 to 3, then fsck's codes for chj check. */
	sect = strstr(man, ".SH EXIT STATUS");
	ck_assert_ptr_nonnull(sect);
	for (int code = 0; code <= 3; code++) {
		char want[16];

		snprintf(want, sizeof(want), ".B %d\n", code);
		ck_assert_msg(strstr(sect, want), "chj(8) EXIT STATUS lacks %d", code);
	}
	ck_assert_ptr_nonnull(strstr(sect, "0 no errors, 1 errors corrected, 4 errors left\nuncorrected, 8"));
}
END_TEST

/* A whole file into a malloc'd string. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/*
 * Every long option a command's --help names is in chj(8) (roff: \-\-) and
 * in README's command table, and every option in the --help text is one the
 * command takes (getopt accepts it; the usage line names it).
 */
START_TEST(help_matches_man_page)
{
	char *man = slurp("man/chj.8"), *readme = slurp("../README.md");
	unsigned total = 0;

	for (const struct chj_cmd *c = chj_cmds; c->name; c++) {
		char *p;

		ck_assert_int_eq(chj(c->name, "--help", NULL), 0);
		for (p = out; (p = strstr(p, "--")); ) {
			char opt[40], want[80];
			size_t k = 0;

			p += 2;
			while (k < sizeof(opt) - 1 && (p[k] == '-' || (p[k] >= 'a' && p[k] <= 'z')))
				opt[k] = p[k], k++;
			opt[k] = 0;
			p += k;
			if (!k || !strcmp(opt, "help"))
				continue;
			snprintf(want, sizeof(want), "\\-\\-");
			for (size_t i = 0; opt[i]; i++)
				snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s",
					 opt[i] == '-' ? "\\-" : (char[]){ opt[i], 0 });
			ck_assert_msg(strstr(man, want), "chj(8) lacks %s (chj %s --help)", want, c->name);
			snprintf(want, sizeof(want), "--%s", opt);
			ck_assert_msg(strstr(readme, want), "README lacks %s (chj %s --help)", want, c->name);
			total++;
		}
		/* The synopsis in chj(8) names the command. */
		{
			char want[64];

			snprintf(want, sizeof(want), "\"%s ", c->name);
			if (strcmp(c->name, "help"))
				ck_assert_msg(strstr(man, want) || strstr(man, c->name),
					      "chj(8) lacks %s", c->name);
		}
	}
	ck_assert_uint_ge(total, 12);
	/* And the other way: every option chj(8) names is in some --help. */
	{
		static char all[1 << 17];
		size_t used = 0;

		for (const struct chj_cmd *c = chj_cmds; c->name; c++) {
			ck_assert_int_eq(chj(c->name, "--help", NULL), 0);
			used += snprintf(all + used, sizeof(all) - used, "%s", out);
		}
		for (char *p = man; (p = strstr(p, "\\-\\-")); ) {
			char opt[40] = "--";
			size_t k = 2;

			for (p += 4; k < sizeof(opt) - 1; ) {
				if (!strncmp(p, "\\-", 2))
					opt[k++] = '-', p += 2;
				else if (*p >= 'a' && *p <= 'z')
					opt[k++] = *p++;
				else
					break;
			}
			opt[k] = 0;
			if (k > 2 && strcmp(opt, "--help"))
				ck_assert_msg(strstr(all, opt), "chj(8) names %s, no --help does", opt);
		}
	}
	free(man);
	free(readme);
}
END_TEST

/*
 * README's Layout table names every directory of the tree (top level,
 * tests/, userspace/: "`DIR/" starts a path there) and every file in docs/
 * ("`NAME`"): a directory or document
 * added without a line there fails (issue 18: docs/boot.md and
 * docs/resolve.md were missing).  Build output (build/) is not named.
 */
static void layout_names_dir(const char *layout, const char *dir, const char *prefix, bool dirs)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((e = readdir(d))) {
		char path[512], want[300];
		struct stat st;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "build"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(stat(path, &st), 0);
		if (dirs != !!S_ISDIR(st.st_mode))
			continue;
		if (dirs)
			snprintf(want, sizeof(want), "`%s%s/", prefix, e->d_name);
		else
			snprintf(want, sizeof(want), "`%s`", e->d_name);
		ck_assert_msg(strstr(layout, want), "README Layout lacks %s", want);
		n++;
	}
	closedir(d);
	ck_assert_int_gt(n, 2);
}

START_TEST(readme_layout_complete)
{
	char *readme = slurp("../README.md");
	char *layout = strstr(readme, "\n## Layout\n"), *end;

	ck_assert_ptr_nonnull(layout);
	end = strstr(layout + 1, "\n## ");
	if (end)
		*end = 0;
	layout_names_dir(layout, "..", "", true);
	layout_names_dir(layout, "../tests", "tests/", true);
	layout_names_dir(layout, "../userspace", "userspace/", true);
	layout_names_dir(layout, "../docs", "", false);
	free(readme);
}
END_TEST

/*
 * One release number: chj, the module, the DKMS package and the Debian
 * packages (debian/changelog's newest entry, native: no Debian revision
 * unless "-N") agree.
 */
START_TEST(one_release_number)
{
	char *dkms = slurp("../dkms.conf"), *mod = slurp("../dm-target/dm-chj-target.c");
	char *deb = slurp("../debian/changelog");

	ck_assert_ptr_nonnull(strstr(dkms, "PACKAGE_VERSION=\"" CHJ_RELEASE "\""));
	ck_assert_ptr_nonnull(strstr(mod, "MODULE_VERSION(\"" CHJ_RELEASE "\")"));
	ck_assert_msg(!strncmp(deb, "chj (" CHJ_RELEASE ")", strlen("chj (" CHJ_RELEASE ")")) ||
		      !strncmp(deb, "chj (" CHJ_RELEASE "-", strlen("chj (" CHJ_RELEASE "-")),
		      "debian/changelog's first entry is not chj %s", CHJ_RELEASE);
	free(dkms);
	free(mod);
	free(deb);
}
END_TEST

/*
 * chj dump --json on a path that is not UTF-8: valid JSON (Python's strict
 * decoder), and the name comes back byte for byte (surrogateescape).
 */
START_TEST(json_non_utf8_name)
{
	char dir[] = "/tmp/chj-json-XXXXXX", path[128], cmd[512], jpath[160];
	FILE *f;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bad-\xff\xfe-\xc3\x28-tab\t-quote\"-ok-\xc3\xa9", dir);
	ck_assert_int_eq(rename(img, path), 0);
	ck_assert_int_eq(chj("format", path, "--origin-size", "1M", NULL), 0);
	ck_assert_int_eq(chj("dump", "--json", path, NULL), 0);
	snprintf(jpath, sizeof(jpath), "%s/out.json", dir);
	f = fopen(jpath, "w");
	fputs(out, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,os,sys; d=json.load(open(sys.argv[1], encoding=\"utf-8\")); "
		 "p=os.listdir(sys.argv[2]); b=[x for x in p if x != \"out.json\"][0]; "
		 "sys.exit(0 if d[\"path\"].encode(\"utf-8\",\"surrogateescape\") == "
		 "os.fsencode(sys.argv[2] + \"/\" + b) else 3)' %s %s", jpath, dir);
	rc = system(cmd);
	ck_assert_msg(rc == 0, "python3 json: status %d on %s", rc, out);
	ck_assert_int_eq(rename(path, img), 0);
	unlink(jpath);
	rmdir(dir);
}
END_TEST

START_TEST(metadata_size)
{
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1T", "-n", "--epochs", "0", NULL), 0);
	/* 2 superblocks + 8225 bitmap blocks + minimum journal of 8 blocks. */
	ck_assert_str_eq(out, "33730560\n");
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1T", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "268435456 regions of 4 KiB"));
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "4T", NULL), 0);
	/* Two region bitmaps in the kernel: 4 TiB needs 16 KiB regions. */
	ck_assert_ptr_nonnull(strstr(err, "raised to 16 KiB"));
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "4T", "--region-size", "4K", NULL), 0);
	ck_assert_str_eq(err, "");
	/* It answers only for sizes chj format takes. */
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1000", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "512-byte sectors"));
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1536", "-n", NULL), 0);
	{
		uint64_t size = strtoull(out, NULL, 10);
		int fd = open(img, O_WRONLY | O_TRUNC);

		ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
		close(fd);
		ck_assert_int_eq(chj("format", img, "--origin-size", "1536", NULL), 0);
	}
}
END_TEST

START_TEST(live_commands_fail_cleanly_without_dm)
{
	/* No device-mapper on the build host (or no such device): a clean error. */
	ck_assert_int_eq(chj("checkpoint", "chj-unit-no-such-device", NULL), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "chj: "));
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(chj("changes", "--since", "1", "chj-unit-no-such-device", NULL), EXIT_ERROR);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(chj("create", "x", img, img, NULL), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "not a block device"));
	/* Without device-mapper in the kernel, say so (libdevmapper does not). */
	{
		FILE *f = fopen("/proc/misc", "r");
		char line[128];
		int dm = 0;

		while (f && fgets(line, sizeof(line), f))
			dm |= strstr(line, " device-mapper\n") != NULL;
		if (f)
			fclose(f);
		if (!dm || access(CHJ_DM_CONTROL, F_OK)) {
			ck_assert_int_eq(chj("status", NULL), EXIT_ERROR);
			ck_assert_ptr_nonnull(strstr(err, "modprobe dm_mod"));
		}
	}
}
END_TEST

/* chj export without device-mapper: --metadata on an image. */
static int dir_empty(const char *d)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", d);
	return system(cmd) == 0;
}

START_TEST(export_errors_leave_nothing)
{
	char dir[] = "/tmp/chj-exp-XXXXXX", tmpd[] = "/tmp/chj-exptmp-XXXXXX", snap[128], small[128], sock[128], taken[128];
	char uri[256], cmd[512];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(small, sizeof(small), "%s/small", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(taken, sizeof(taken), "%s/taken", dir);
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", NULL), 0);
	fd = open(snap, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_eq(ftruncate(fd, 64 << 20), 0);
	close(fd);
	fd = open(small, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_eq(ftruncate(fd, 32 << 20), 0);
	close(fd);
	fd = open(taken, O_CREAT | O_WRONLY, 0600);
	close(fd);
	ck_assert_ptr_nonnull(mkdtemp(tmpd));
#define EXP(...) chj("export", "--metadata", img, "--tmpdir", tmpd, __VA_ARGS__, NULL)
	ck_assert_int_eq(EXP("--since", "1", "--socket", sock), EXIT_USAGE);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap), EXIT_USAGE);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", sock, "--tcp", ":1"), EXIT_USAGE);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--tcp", "nocolon"), EXIT_USAGE);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", sock, "--granularity", "3K"), EXIT_USAGE);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", sock, "--granularity", "2K"), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "finer than the region size"));
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", sock, "--bitmap", "a b"), EXIT_USAGE);
	ck_assert_int_eq(EXP("--since", "0", "--snapshot", snap, "--socket", sock), EXIT_FULL_BACKUP);
	ck_assert_ptr_nonnull(strstr(err, "full backup"));
	ck_assert_int_eq(EXP("--since", "2", "--snapshot", snap, "--socket", sock), EXIT_FULL_BACKUP);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", small, "--socket", sock), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "snapshot is 33554432 bytes, the origin 67108864"));
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", taken), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "socket path taken"));
	setenv("CHJ_QEMU_NBD", "false", 1);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", sock), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "could not start the export"));
	unsetenv("CHJ_QEMU_NBD");
	ck_assert_str_eq(out, "");
	ck_assert(dir_empty(tmpd));
	ck_assert_int_ne(access(sock, F_OK), 0);

	/* The real qemu-nbd (make deps): an empty bitmap over the whole image. */
	snprintf(uri, sizeof(uri), "%s/pid", dir);
	ck_assert_int_eq(EXP("--since", "1", "--snapshot", snap, "--socket", sock, "--fork",
			     "--pid-file", uri), 0);
	ck_assert(dir_empty(tmpd));
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s\n", sock);
	ck_assert_str_eq(out, uri);
	snprintf(cmd, sizeof(cmd),
		 "nbdinfo --map=qemu:dirty-bitmap:chj 'nbd+unix:///?socket=%s' | "
		 "grep -qx ' *0 *67108864 *0 *clean'; r=$?; kill $(cat %s/pid); exit $r",
		 sock, dir);
	ck_assert_int_eq(system(cmd), 0);
#undef EXP
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, tmpd);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *suite_cli(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, help_for_every_command);
	tcase_add_test(tc, offline_round_trip);
	tcase_add_test(tc, changes_output_formats);
	tcase_add_test(tc, check_exit_codes);
	tcase_add_test(tc, check_not_metadata);
	tcase_add_test(tc, changes_full_backup_cases);
	tcase_add_test(tc, exit_status_table);
	tcase_add_test(tc, help_matches_man_page);
	tcase_add_test(tc, one_release_number);
	tcase_add_test(tc, readme_layout_complete);
	tcase_add_test(tc, json_non_utf8_name);
	tcase_add_test(tc, json_one_vocabulary);
	tcase_add_test(tc, metadata_size);
	tcase_add_test(tc, live_commands_fail_cleanly_without_dm);
	tcase_add_test(tc, export_errors_leave_nothing);
	suite_add_tcase(s, tc);
	return s;
}
