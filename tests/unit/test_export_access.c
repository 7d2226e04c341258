// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj export's access options (cli/export_net.c): what is refused as a
 * usage error, what qemu-nbd is asked for, and the socket's mode and owner
 * whatever the umask.  TLS handshakes themselves: tests/vm/nbd-export.sh.
 */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_run.h"
#include "suites.h"

static char dir[] = "/tmp/chj-expacc-XXXXXX";
static char img[128], snap[128], sock[128], tmpd[128], fake[128], args[128], pid[128];

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void setup(void)
{
	char cmd[512];

	ck_assert_ptr_nonnull(mkdtemp(dir));
#define P(v, name) snprintf(v, sizeof(v), "%s/" name, dir)
	P(img, "meta");
	P(snap, "snap");
	P(sock, "sock");
	P(tmpd, "tmp");
	P(fake, "fake-qemu-nbd");
	P(args, "args");
	P(pid, "pid");
#undef P
	ck_assert_int_eq(mkdir(tmpd, 0700), 0);
	snprintf(cmd, sizeof(cmd), "truncate -s 4M %s && truncate -s 64M %s", img, snap);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(chj("format", img, "--origin-size", "64M", NULL), 0);
	/* a qemu-nbd that records its arguments, one a line, and fails */
	snprintf(cmd, sizeof(cmd), "#!/bin/sh\nprintf '%%s\\n' \"$@\" >%s\nexit 1\n", args);
	put(fake, cmd, 0755);
}

static void teardown(void)
{
	char cmd[512];

	/* a server left by a failed check would hold the runner's stdout */
	snprintf(cmd, sizeof(cmd), "[ ! -s %s ] || kill $(cat %s) 2>/dev/null; rm -rf %s", pid, pid, dir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(dir, "/tmp/chj-expacc-XXXXXX");
	unsetenv("CHJ_QEMU_NBD");
}

#define EXP(...) chj("export", "--metadata", img, "--since", "1", "--snapshot", snap, \
		     "--tmpdir", tmpd, __VA_ARGS__, NULL)

/* A usage error: exit 2, "chj: export: " and why, nothing on stdout. */
static void refused(int rc, const char *why)
{
	ck_assert_int_eq(rc, EXIT_USAGE);
	ck_assert_msg(!strncmp(err, "chj: export: ", 13) && strstr(err, why),
		      "said '%s', not '%s'", err, why);
	ck_assert_str_eq(out, "");
}

/* Got past the checks: the (fake) qemu-nbd was started, and failed. */
static void started(int rc)
{
	ck_assert_msg(rc == EXIT_ERROR && strstr(err, "could not start the export"),
		      "rc %d, said '%s'", rc, err);
	ck_assert_int_eq(access(args, F_OK), 0);
	unlink(args);
}

START_TEST(plain_tcp_only_on_loopback)
{
	static const char *const open_to_all[] = { "0.0.0.0:10809", ":10809", "[::]:10809",
						   "192.0.2.1:10809", "[::ffff:10.0.0.1]:1" };
	static const char *const loopback[] = { "127.0.0.1:10809", "127.1.2.3:1", "[::1]:10809",
						"localhost:10809", "[::ffff:127.0.0.1]:1" };

	setenv("CHJ_QEMU_NBD", fake, 1);
	for (size_t i = 0; i < sizeof(open_to_all) / sizeof(*open_to_all); i++) {
		refused(EXP("--tcp", open_to_all[i]), "without TLS: anyone who can reach it");
		ck_assert_ptr_nonnull(strstr(err, "--insecure-plain"));
		ck_assert_int_ne(access(args, F_OK), 0);
		started(EXP("--tcp", open_to_all[i], "--insecure-plain"));
	}
	for (size_t i = 0; i < sizeof(loopback) / sizeof(*loopback); i++)
		started(EXP("--tcp", loopback[i]));
	refused(EXP("--tcp", "[::1:10809"), "not HOST:PORT");
	refused(EXP("--tcp", "127.0.0.1:"), "not HOST:PORT");
}
END_TEST

START_TEST(option_combinations)
{
	refused(EXP("--socket", sock, "--tls-creds", dir, "--tls-psk", "/k/keys.psk"),
		"give one of --tls-creds DIR and --tls-psk FILE");
	refused(EXP("--socket", sock, "--tls-authz", "CN=a"), "--tls-authz: needs --tls-creds");
	refused(EXP("--socket", sock, "--tls-psk", "/k/keys.psk", "--tls-authz", "CN=a"),
		"does not check PSK usernames");
	refused(EXP("--socket", sock, "--tls-creds", dir, "--tls-authz", ""), "an empty name");
	refused(EXP("--tcp", "0.0.0.0:1", "--tls-creds", dir, "--insecure-plain"),
		"--insecure-plain: contradicts");
	refused(EXP("--socket", sock, "--insecure-plain"), "--insecure-plain: only for --tcp");
	refused(EXP("--tcp", "127.0.0.1:1", "--socket-group", "0"), "--socket-group: only for --socket");
	refused(EXP("--socket", sock, "--socket-group", "no-such-group-chj"),
		"--socket-group no-such-group-chj: no such group");
	refused(EXP("--socket", sock, "--socket-group", "-1"), "no such group");
	refused(EXP("--socket", sock, "--tls-psk", "/k/server.psk"), "name the file keys.psk");
	/* missing credential files: an error (1), named, before anything starts */
	ck_assert_int_eq(EXP("--tcp", "0.0.0.0:1", "--tls-creds", dir), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "/ca-cert.pem: No such file or directory"));
	ck_assert_int_eq(EXP("--socket", sock, "--tls-psk", "/nonexistent/keys.psk"), EXIT_ERROR);
	ck_assert_ptr_nonnull(strstr(err, "chj: /nonexistent/keys.psk: No such file"));
	ck_assert_int_ne(access(sock, F_OK), 0);
}
END_TEST

static char *slurp_args(void)
{
	static char buf[8192];
	FILE *f = fopen(args, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* What qemu-nbd is given: JSON objects, the CA required, DNs as given. */
START_TEST(qemu_nbd_tls_arguments)
{
	char creds[192], psk[256], want[768], *a;

	snprintf(creds, sizeof(creds), "%s/x,509 \"creds\"", dir);
	ck_assert_int_eq(mkdir(creds, 0700), 0);
	for (const char *f = "ca-cert.pem\0server-cert.pem\0server-key.pem\0"; *f; f += strlen(f) + 1) {
		snprintf(psk, sizeof(psk), "%s/%s", creds, f);
		put(psk, "", 0600);
	}
	setenv("CHJ_QEMU_NBD", fake, 1);
	ck_assert_int_eq(EXP("--tcp", "0.0.0.0:10809", "--tls-creds", creds,
			     "--tls-authz", "O=chj,CN=backup \"1\"", "--tls-authz", "CN=b"), EXIT_ERROR);
	a = slurp_args();
	snprintf(want, sizeof(want), "--object\n{\"qom-type\":\"tls-creds-x509\",\"id\":\"chjtls\","
		 "\"endpoint\":\"server\",\"dir\":\"%s/x,509 \\\"creds\\\"\",\"verify-peer\":true}\n"
		 "--object\n{\"qom-type\":\"authz-list\",\"id\":\"chjauthz\",\"policy\":\"deny\","
		 "\"rules\":[{\"match\":\"O=chj,CN=backup \\\"1\\\"\",\"policy\":\"allow\","
		 "\"format\":\"exact\"},{\"match\":\"CN=b\",\"policy\":\"allow\",\"format\":\"exact\"}]}\n"
		 "--tls-creds=chjtls\n--tls-authz=chjauthz\n--bind=0.0.0.0\n--port=10809\n", dir);
	ck_assert_msg(strstr(a, want), "qemu-nbd got:\n%s", a);
	unlink(args);

	snprintf(psk, sizeof(psk), "%s/keys.psk", dir);
	put(psk, "backup:0123456789abcdef\n", 0600);
	ck_assert_int_eq(EXP("--socket", sock, "--tls-psk", psk), EXIT_ERROR);
	a = slurp_args();
	snprintf(want, sizeof(want), "--object\n{\"qom-type\":\"tls-creds-psk\",\"id\":\"chjtls\","
		 "\"endpoint\":\"server\",\"dir\":\"%s\"}\n--tls-creds=chjtls\n--socket=%s\n", dir, sock);
	ck_assert_msg(strstr(a, want), "qemu-nbd got:\n%s", a);
	ck_assert_ptr_null(strstr(a, "authz"));
	unlink(args);

	/* no TLS: no objects */
	ck_assert_int_eq(EXP("--tcp", "127.0.0.1:10809"), EXIT_ERROR);
	ck_assert_ptr_null(strstr(slurp_args(), "tls"));
}
END_TEST

/* connect() to sock as uid/gid 65534 with supplementary group sgid: 0 or errno. */
static int connect_as_nobody(gid_t sgid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int status;
	pid_t p = fork();

	ck_assert_int_ge(p, 0);
	if (!p) {
		int fd;

		if (setgroups(1, &sgid) || setgid(65534) || setuid(65534))
			_exit(100);
		strcpy(sa.sun_path, sock);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		_exit(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ? errno : 0);
	}
	ck_assert_int_eq(waitpid(p, &status, 0), p);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void stop_server(void)
{
	FILE *f = fopen(pid, "r");
	int n = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%d", &n), 1);
	fclose(f);
	ck_assert_int_eq(kill(n, SIGTERM), 0);
	/*
	 * Until it is gone (it removes the socket): reaped here if this
	 * process became its subreaper (chj export without --fork does that).
	 */
	for (int i = 0; waitpid(n, NULL, WNOHANG) != n && !kill(n, 0) && i < 1000; i++)
		usleep(10000);
	unlink(pid);
}

/*
 * Serve with the real qemu-nbd (make deps) and the extra words (up to 2),
 * umask 0; the socket's mode, group, and connect() as nobody without and
 * with group 12345, all taken before the server is stopped (a failed check
 * must not leave it running).
 */
struct sock_seen {
	mode_t mode;
	gid_t gid;
	int nobody, member;
};

static struct sock_seen serve_and_look(const char *w1, const char *w2)
{
	struct sock_seen s = { 0 };
	mode_t old = umask(0);
	char uri[256];
	struct stat st;
	int rc = w1 ? EXP("--socket", sock, "--fork", "--pid-file", pid, w1, w2) :
		      EXP("--socket", sock, "--fork", "--pid-file", pid);

	umask(old);
	ck_assert_msg(rc == 0, "chj export: %d: %s", rc, err);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s\n", sock);
	if (!lstat(sock, &st))
		s.mode = st.st_mode & 07777, s.gid = st.st_gid;
	if (getuid() == 0)
		s.nobody = connect_as_nobody(65534), s.member = connect_as_nobody(12345);
	stop_server();
	ck_assert_str_eq(out, uri);
	return s;
}

START_TEST(socket_owner_only)
{
	struct sock_seen s;

	/* others may traverse the directory: only the socket's mode decides */
	ck_assert_int_eq(chmod(dir, 0711), 0);
	s = serve_and_look(NULL, NULL);
	ck_assert_uint_eq(s.mode, 0600);
	if (getuid() == 0) {
		ck_assert_int_eq(s.nobody, EACCES);
		ck_assert_int_eq(s.member, EACCES);
	}
	s = serve_and_look("--socket-group", "12345");
	ck_assert_uint_eq(s.mode, 0660);
	ck_assert_uint_eq(s.gid, 12345);
	if (getuid() == 0) {
		ck_assert_int_eq(s.nobody, EACCES);
		ck_assert_int_eq(s.member, 0);
	}
}
END_TEST

Suite *suite_export_access(void)
{
	Suite *s = suite_create("export-access");
	TCase *tc = tcase_create("export-access");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, plain_tcp_only_on_loopback);
	tcase_add_test(tc, option_combinations);
	tcase_add_test(tc, qemu_nbd_tls_arguments);
	tcase_add_test(tc, socket_owner_only);
	suite_add_tcase(s, tc);
	return s;
}
