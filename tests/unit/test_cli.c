// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The chj command line: usage errors, help, and offline commands on images. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "suites.h"
#include "testimg.h"

static char out[65536], err[8192];
static char img[64];

/* Run chj with the given words; stdout and stderr land in out and err. */
static int chj(const char *first, ...)
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
	ck_assert_int_eq(chj("changes", "--bogus", NULL), EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "'--bogus'"));
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
	ck_assert_int_eq(chj("format", "--origin-size", "1M", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("dump", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("metadata-size", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1T", "--changed", "101", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "1T", "--epochs", "x", NULL), EXIT_USAGE);
	ck_assert_int_eq(chj("help", "nope", NULL), EXIT_USAGE);
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
	for (const struct chj_cmd *c = chj_cmds; c->name; c++) {
		char want[64];

		if (!strcmp(c->name, "help"))
			continue;
		snprintf(want, sizeof(want), "Usage: chj %s ", c->name);
		ck_assert_int_eq(chj(c->name, "--help", NULL), 0);
		ck_assert_msg(strstr(out, want), "%s --help: %s", c->name, out);
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
	ck_assert_int_eq(chj("changes", "--since", "0", "--metadata", img, NULL), EXIT_NOT_RETAINED);
	ck_assert_str_eq(out, "");
	ck_assert_ptr_nonnull(strstr(err, "full backup"));
	ck_assert_int_eq(chj("changes", "--since", "2", "--metadata", img, NULL), EXIT_ERROR);
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
	ck_assert_int_eq(chj("dump", img, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "         1          1          1            2"));
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
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "0 131072\n");	/* damaged block: all changed */
	ck_assert_ptr_nonnull(strstr(err, "warning"));
	ck_assert_int_eq(chj("check", "--repair", img, NULL), FSCK_CORRECTED);
	ck_assert_int_eq(chj("check", img, NULL), FSCK_OK);
	ck_assert_int_eq(chj("changes", "--since", "1", "--metadata", img, NULL), 0);
	ck_assert_str_eq(out, "0 131072\n");	/* repair kept it all changed */
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
	ck_assert_ptr_nonnull(strstr(err, "raised to 8 KiB"));
	ck_assert_int_eq(chj("metadata-size", "--origin-size", "4T", "--region-size", "4K", NULL), 0);
	ck_assert_str_eq(err, "");
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
	ck_assert_int_eq(EXP("--since", "0", "--snapshot", snap, "--socket", sock), EXIT_NOT_RETAINED);
	ck_assert_ptr_nonnull(strstr(err, "full backup"));
	ck_assert_int_eq(EXP("--since", "2", "--snapshot", snap, "--socket", sock), EXIT_ERROR);
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
	tcase_add_test(tc, metadata_size);
	tcase_add_test(tc, live_commands_fail_cleanly_without_dm);
	tcase_add_test(tc, export_errors_leave_nothing);
	suite_add_tcase(s, tc);
	return s;
}
