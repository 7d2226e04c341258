// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj export: serve a snapshot over NBD with chj's changes since an epoch as
 * the dirty bitmap qemu:dirty-bitmap:NAME, through qemu-nbd.  The bitmap
 * lives in a small qcow2 wrapper (lib/qcow2.c) over the snapshot as its raw
 * data file; qemu-nbd opens it read-only and the wrapper is unlinked as soon
 * as the server is ready, so nothing is left behind however it ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chj_qcow2.h"
#include "cli.h"
#include "export_net.h"

extern char **environ;

struct opts {
	uint64_t since, gran;
	int have_since, once, fork;
	const char *name, *metadata, *snapshot, *bitmap;
	const char *export_name, *tmpdir, *pid_file;
	struct export_net net;	/* --socket/--tcp, TLS, who may connect */
};

static int export_args(const struct chj_cmd *c, int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "since", required_argument, NULL, 's' },
		{ "snapshot", required_argument, NULL, 'S' },
		{ "metadata", required_argument, NULL, 'm' },
		{ "socket", required_argument, NULL, 'k' },
		{ "tcp", required_argument, NULL, 't' },
		{ "bitmap", required_argument, NULL, 'B' },
		{ "export-name", required_argument, NULL, 'x' },
		{ "granularity", required_argument, NULL, 'g' },
		{ "tmpdir", required_argument, NULL, 'T' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "once", no_argument, NULL, 'o' },
		{ "fork", no_argument, NULL, 'f' },
		{ "tls-creds", required_argument, NULL, 'C' },
		{ "tls-psk", required_argument, NULL, 'P' },
		{ "tls-authz", required_argument, NULL, 'A' },
		{ "insecure-plain", no_argument, NULL, 'I' },
		{ "socket-group", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int opt, rc;

	while ((opt = cli_getopt(c, argc, argv, "h", lo)) != -1) {
		switch (opt) {
		case 's':
			if (chj_parse_u64(optarg, &o->since))
				return cli_usage(c, "--since %s: not an epoch number", optarg);
			o->have_since = 1;
			break;
		case 'S': o->snapshot = optarg; break;
		case 'm': o->metadata = optarg; break;
		case 'k': o->net.socket = optarg; break;
		case 't': o->net.tcp = optarg; break;
		case 'C': o->net.tls_creds = optarg; break;
		case 'P': o->net.tls_psk = optarg; break;
		case 'A':
			if (!*optarg || o->net.n_authz == EXPORT_MAX_AUTHZ)
				return cli_usage(c, "--tls-authz: %s", *optarg ? "at most 64 names" :
						 "an empty name");
			o->net.authz[o->net.n_authz++] = optarg;
			break;
		case 'I': o->net.insecure_plain = 1; break;
		case 'G': o->net.socket_group = optarg; break;
		case 'B': o->bitmap = optarg; break;
		case 'x': o->export_name = optarg; break;
		case 'g':
			if (chj_parse_size(optarg, &o->gran) || o->gran < 512 ||
			    o->gran > (1ull << CHJ_QCOW2_MAX_GRAN_BITS) || (o->gran & (o->gran - 1)))
				return cli_usage(c, "--granularity %s: not a power of two from 512 B to 2 GiB",
						 optarg);
			break;
		case 'T': o->tmpdir = optarg; break;
		case 'p': o->pid_file = optarg; break;
		case 'o': o->once = 1; break;
		case 'f': o->fork = 1; break;
		case 'h': return -1;
		default: return c->usage_exit;
		}
	}
	if (!o->have_since)
		return cli_usage(c, "--since EPOCH is required");
	if (!o->snapshot)
		return cli_usage(c, "--snapshot DEV is required");
	if (!o->bitmap)
		o->bitmap = "chj";
	for (const char *p = o->bitmap; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p))
			return cli_usage(c, "--bitmap %s: use letters, digits, '.', '_' and '-'", o->bitmap);
	if (!*o->bitmap || strlen(o->bitmap) > CHJ_QCOW2_MAX_NAME)
		return cli_usage(c, "--bitmap: 1 to %d characters", CHJ_QCOW2_MAX_NAME);
	if (!o->export_name)
		o->export_name = "";
	rc = cli_source(c, argc, argv, o->metadata, &o->name);
	return rc ? rc : export_net_check(c, &o->net);
}

/* The temporary directory, the qcow2 wrapper and qemu-nbd's pid file. */
struct tmp {
	char dir[PATH_MAX - 32], qcow2[PATH_MAX], pid[PATH_MAX];
};

static void tmp_remove(struct tmp *t)
{
	if (t->qcow2[0])
		unlink(t->qcow2);
	if (t->pid[0])
		unlink(t->pid);
	if (t->dir[0])
		rmdir(t->dir);
	t->dir[0] = t->qcow2[0] = t->pid[0] = 0;
}

static int export_fail(const char *what, const char *why)
{
	fprintf(stderr, "chj: %s: %s\n", what, why);
	return EXIT_ERROR;
}

/* The snapshot: as large as the origin, and not the origin or the device. */
static int check_snapshot(const struct opts *o, uint64_t origin_bytes)
{
	struct chj_error e = { 0 };
	struct chj_dm_table t;
	uint64_t bytes;
	dev_t rdev;
	char why[160], node[PATH_MAX];
	struct stat st;

	if (chj_dev_size(o->snapshot, &bytes, &rdev, &e))
		return cli_fail(&e);
	if (bytes != origin_bytes) {
		snprintf(why, sizeof(why), "snapshot is %llu bytes, the origin %llu",
			 (unsigned long long)bytes, (unsigned long long)origin_bytes);
		return export_fail(o->snapshot, why);
	}
	if (!o->name || !rdev)
		return 0;
	if (chj_dm_get_table(o->name, &t, &e))
		return cli_fail(&e);
	snprintf(node, sizeof(node), "/dev/mapper/%s", o->name);
	if (rdev == t.origin || (!stat(node, &st) && st.st_rdev == rdev))
		return export_fail(o->snapshot, rdev == t.origin ?
			    "is the origin itself, not a snapshot of it" :
			    "is the tracked device itself, not a snapshot of it");
	return 0;
}

struct iter {
	const struct chj_changes *ch;
	uint64_t cur;
};

static int next_range(void *ctx, struct chj_range *r)
{
	struct iter *it = ctx;

	return chj_changes_next(it->ch, &it->cur, r);
}

/* Build the wrapper in a fresh directory under tmpdir. */
static int build(const struct opts *o, const struct chj_changes *ch, unsigned gran_bits,
		 struct tmp *t)
{
	const struct chj_changes_info *in = chj_changes_info(ch);
	const char *base = o->tmpdir ? o->tmpdir : getenv("TMPDIR");
	char data[PATH_MAX], absbase[PATH_MAX];
	struct chj_qcow2_opts q = {
		.size = in->sb.origin_sectors << CHJ_SECTOR_SHIFT,
		.data_file = data, .bitmap = o->bitmap, .gran_bits = gran_bits,
	};
	struct iter it = { ch, 0 };
	struct chj_error e = { 0 };
	int fd, rc;

	if (!realpath(o->snapshot, data))
		return export_fail(o->snapshot, strerror(errno));
	if (!base || !*base)
		base = "/tmp";
	/* absolute: qemu-nbd must find the wrapper whatever its cwd */
	if (!realpath(base, absbase))
		return export_fail(base, strerror(errno));
	base = absbase;
	if ((size_t)snprintf(t->dir, sizeof(t->dir), "%s/chj-export.XXXXXX", base) >= sizeof(t->dir))
		return t->dir[0] = 0, export_fail(base, "path too long");
	if (!mkdtemp(t->dir)) {
		rc = export_fail(base, strerror(errno));
		t->dir[0] = 0;
		return rc;
	}
	snprintf(t->qcow2, sizeof(t->qcow2), "%s/bitmap.qcow2", t->dir);
	snprintf(t->pid, sizeof(t->pid), "%s/qemu-nbd.pid", t->dir);
	fd = open(t->qcow2, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return export_fail(t->qcow2, strerror(errno));
	rc = chj_qcow2_write(fd, &q, next_range, &it, NULL, &e);
	if (!rc && fsync(fd))
		rc = chj_err(&e, CHJ_ERR_IO, "%s: %s", t->qcow2, strerror(errno));
	close(fd);
	return rc ? cli_fail(&e) : 0;
}

/* Start qemu-nbd --fork and wait until it serves; *server is its pid. */
static int export_start(struct opts *o, const struct tmp *t, const sigset_t *old,
		 pid_t *server)
{
	const char *prog = getenv("CHJ_QEMU_NBD");
	char a_bitmap[CHJ_QCOW2_MAX_NAME + 16], a_pid[PATH_MAX + 16], a_x[1024];
	char host[256] = "", port[32] = "", a_b[300], a_p[48], a_k[PATH_MAX + 16];
	char *argv[32];
	int argc = 0, status, n;
	mode_t mask;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t sa;
	pid_t pid;
	FILE *f;

	if (!prog || !*prog)
		prog = "qemu-nbd";
	snprintf(a_bitmap, sizeof(a_bitmap), "--bitmap=%s", o->bitmap);
	snprintf(a_pid, sizeof(a_pid), "--pid-file=%s", o->pid_file ? o->pid_file : t->pid);
	if ((size_t)snprintf(a_x, sizeof(a_x), "--export-name=%s", o->export_name) >= sizeof(a_x))
		return export_fail(o->export_name, "export name too long");
	argv[argc++] = (char *)prog;
	argv[argc++] = "--read-only";
	argv[argc++] = "--fork";
	argv[argc++] = "--format=qcow2";
	argv[argc++] = "--shared=16";
	argv[argc++] = a_bitmap;
	argv[argc++] = a_pid;
	argv[argc++] = a_x;
	if (!o->once)
		argv[argc++] = "--persistent";
	if (export_net_objects(&o->net, argv, &argc))
		return EXIT_ERROR;
	if (o->net.socket) {
		snprintf(a_k, sizeof(a_k), "--socket=%s", o->net.socket);
		argv[argc++] = a_k;
	} else {
		/* checked by export_net_check */
		export_split_tcp(o->net.tcp, host, sizeof(host), port, sizeof(port));
		snprintf(a_b, sizeof(a_b), "--bind=%s", host);
		snprintf(a_p, sizeof(a_p), "--port=%s", port);
		if (host[0])
			argv[argc++] = a_b;
		argv[argc++] = a_p;
	}
	argv[argc++] = "--";
	argv[argc++] = (char *)t->qcow2;
	argv[argc] = NULL;

	posix_spawnattr_init(&sa);
	posix_spawnattr_setsigmask(&sa, old);
	posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK);
	/*
	 * The server's stdin and stdout are /dev/null: the URI is ours to
	 * print, and a --fork server holding our stdout would keep
	 * uri=$(chj export --fork ...) waiting for its end.
	 */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	/* qemu-nbd binds the socket: 0600 whatever the caller's umask */
	mask = umask(0177);
	n = posix_spawnp(&pid, prog, &fa, &sa, argv, environ);
	umask(mask);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&sa);
	if (n)
		return export_fail(prog, strerror(n));
	/* --fork: the first process exits once the server listens. */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return export_fail(prog, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return export_fail(prog, "could not start the export (its message is above)");
	f = fopen(o->pid_file ? o->pid_file : t->pid, "r");
	n = f ? fscanf(f, "%d", server) : 0;
	if (f)
		fclose(f);
	if (n != 1 || *server <= 0)
		return export_fail(prog, "started, but left no pid file");
	return 0;
}

/*
 * Foreground: wait for the server (our child: we are its subreaper), and
 * pass SIGINT, SIGTERM and SIGHUP on to it as SIGTERM.
 */
static int serve(pid_t server, const sigset_t *waitset)
{
	int sig, status;
	pid_t p;

	for (;;) {
		p = waitpid(server, &status, WNOHANG);
		if (p == server)
			break;
		if (p < 0 && errno != EINTR)
			return export_fail("qemu-nbd", strerror(errno));
		sig = sigwaitinfo(waitset, NULL);
		if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
			kill(server, SIGTERM);
	}
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return EXIT_OK;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)
		return EXIT_OK;
	return export_fail("qemu-nbd", "the server failed");
}

int cmd_export(int argc, char **argv)
{
	const struct chj_cmd *c = chj_find_cmd("export");
	struct opts o = { 0 };
	struct chj_changes *ch = NULL;
	struct tmp t;
	sigset_t block, old;
	unsigned gran_bits;
	pid_t server = 0;
	struct stat st;
	int rc = export_args(c, argc, argv, &o);

	if (rc)
		return rc < 0 ? cli_finish(EXIT_OK) : rc;
	memset(&t, 0, sizeof(t));
	/* Signals wait until the wrapper is gone or the server runs. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);

	rc = cli_changes(o.metadata, o.name, o.since, &ch);
	if (rc)
		goto out;
	{
		uint64_t region = (uint64_t)chj_changes_info(ch)->sb.region_sectors << CHJ_SECTOR_SHIFT;

		if (!o.gran)
			o.gran = region;
		if (o.gran < region) {
			fprintf(stderr, "chj: export: --granularity %llu: finer than the region size %llu\n",
				(unsigned long long)o.gran, (unsigned long long)region);
			rc = EXIT_USAGE;
			goto out;
		}
		gran_bits = __builtin_ctzll(o.gran);
	}
	rc = export_net_files(&o.net);
	if (rc)
		goto out;
	rc = check_snapshot(&o, chj_changes_info(ch)->sb.origin_sectors << CHJ_SECTOR_SHIFT);
	if (rc)
		goto out;
	/* qemu-nbd would unlink whatever is there: never take a path in use. */
	if (o.net.socket && !lstat(o.net.socket, &st)) {
		rc = export_fail(o.net.socket, "socket path taken (something exists there)");
		goto out;
	}
	rc = build(&o, ch, gran_bits, &t);
	chj_changes_free(ch);
	ch = NULL;
	if (rc)
		goto out;
	/* The server is reparented to us when qemu-nbd's first process exits. */
	if (!o.fork)
		prctl(PR_SET_CHILD_SUBREAPER, 1);
	rc = export_start(&o, &t, &old, &server);
	/* qemu-nbd holds the wrapper open: the file is no longer needed. */
	tmp_remove(&t);
	if (!rc)
		rc = export_socket_perms(&o.net);
	if (rc) {
		if (server > 0)
			kill(server, SIGTERM);
		goto out;
	}
	export_print_uri(&o.net, o.export_name);
	if (!o.fork) {
		rc = serve(server, &block);
		if (o.pid_file)
			unlink(o.pid_file);
	}
out:
	tmp_remove(&t);
	chj_changes_free(ch);
	export_net_free(&o.net);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return cli_finish(rc);
}
