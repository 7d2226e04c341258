// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj-resolve: the files of the filesystem on a dm-chj device whose content
 * or metadata may have changed since an epoch.  See chj-resolve(8) and
 * docs/resolve.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "resolve.h"

static const char usage_text[] =
"Usage: chj-resolve [--since EPOCH] [-0 | --json] [--mount DIR] [--stats] DEVICE\n";

static const char help_text[] =
"\n"
"List the files and directories of the filesystem on the dm-chj device\n"
"DEVICE (/dev/mapper/NAME, or NAME) whose content or metadata may have\n"
"changed since epoch EPOCH, one absolute path per line.  Every path of a\n"
"changed inode is listed, and every directory whose entries changed.\n"
"\n"
"  --since EPOCH  changes since this epoch (default: the current epoch,\n"
"                 i.e. since the last checkpoint)\n"
"  -0             end each path with NUL instead of a newline\n"
"  --json         JSON Lines: path, inode, type, reasons and, for regular\n"
"                 files, ranges (the changed byte ranges in the file)\n"
"  --mount DIR    where the filesystem is mounted (default: found in\n"
"                 /proc/self/mountinfo)\n"
"  --stats        counts, what the changed regions were attributed to, and\n"
"                 time per phase, on stderr\n"
"  -h, --help     show this help\n"
"\n"
"It calls syncfs() on the filesystem before reading the change map, so that\n"
"everything written before it started is on the device and in the map.\n"
"\n"
"A path containing a newline, carriage return or backslash is printed with\n"
"a leading backslash and those characters escaped as \\n, \\r and \\\\.\n"
"Unescaped paths start with '/'.\n"
"\n"
"Exit status: 0 success; 1 error; 2 usage error; 3 full scan needed: the\n"
"change map cannot be used (the target is in fail mode, EPOCH is no longer\n"
"retained, the filesystem is not on DEVICE, or its layout is unsupported).\n"
"Nothing is printed on stdout unless the status is 0.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("chj-resolve: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	fputs(usage_text, stderr);
	fputs("Try 'chj-resolve --help' for more information.\n", stderr);
	return RX_USAGE;
}

static int parse_args(struct resolver *r, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "mount", required_argument, NULL, 'm' },
		{ "stats", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int opt, zero = 0, json = 0;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "0h", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (parse_u64(optarg, &r->since))
				return usage_error("--since %s: not an epoch number", optarg);
			r->have_since = 1;
			break;
		case '0': zero = 1; break;
		case 'j': json = 1; break;
		case 'm': r->mount_opt = optarg; break;
		case 'S': r->want_stats = 1; break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(help_text, stdout);
			return -1;
		default:
			return usage_error("unknown or incomplete option %s", argv[optind - 1]);
		}
	}
	if (zero && json)
		return usage_error("%s", "-0 and --json exclude each other");
	r->out_mode = json ? 2 : zero ? 1 : 0;
	if (optind == argc)
		return usage_error("%s", "DEVICE is required");
	if (optind != argc - 1)
		return usage_error("unexpected argument %s", argv[optind + 1]);
	r->device_arg = argv[optind];
	return 0;
}

static void count_results(struct resolver *r)
{
	for (size_t i = 0; i < r->res.cap; i++) {
		const struct item *it = r->res.tab[i];

		if (!it || !it->reasons)
			continue;
		if (!it->npaths) {
			/* Inode slots listed only for their block are mostly
			 * free ones: not worth a mention. */
			if (it->reasons & ~(RSN_INODE | RSN_JOURNAL))
				r->st.unreachable++;
			continue;
		}
		r->st.inodes_listed++;
		for (unsigned b = 0; b < RSN_NR; b++)
			if (it->reasons & (1u << b))
				r->st.by_reason[b]++;
	}
}

static int run(struct resolver *r)
{
	double t;
	int rc;

	rc = target_open(r);
	if (!rc)
		rc = target_find_mount(r);
	if (rc)
		return rc;
	/*
	 * Dirty data and metadata reach the device, and so the change map,
	 * only when written back: sync first, then read the map.
	 */
	t = now_sec();
	if (syncfs(r->mnt_fd))
		return rx_fail(r, RX_ERROR, "syncfs %s: %s", r->mnt, strerror(errno));
	r->st.phase[PH_SYNC] = now_sec() - t;
	if (!strcmp(r->fstype, "btrfs") && (rc = btrfs_before_map(r)))
		return rc;
	t = now_sec();
	rc = target_read_changes(r);
	r->st.phase[PH_MAP] = now_sec() - t;
	if (rc)
		return rc;
	if (!strcmp(r->fstype, "ext4") || !strcmp(r->fstype, "ext3") ||
	    !strcmp(r->fstype, "ext2"))
		rc = ext4_resolve(r);
	else if (!strcmp(r->fstype, "xfs"))
		rc = xfs_resolve(r);
	else if (!strcmp(r->fstype, "btrfs"))
		rc = btrfs_resolve(r);
	else
		rc = rx_fail(r, RX_FULL_SCAN, "%s: filesystem type %s is not supported",
			     r->dev_path, r->fstype);
	progress_done(r);
	if (rc)
		return rc;
	count_results(r);
	t = now_sec();
	rc = output_results(r, stdout);
	if (!rc && fflush(stdout))
		rc = rx_fail(r, RX_ERROR, "write error on stdout: %s", strerror(errno));
	r->st.phase[PH_OUTPUT] = now_sec() - t;
	return rc;
}

int main(int argc, char **argv)
{
	static char obuf[1 << 16];
	struct resolver r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.dev_fd = r.mnt_fd = -1;
	rs_init(&r.changed);
	res_init(&r.res);
	rc = parse_args(&r, argc, argv);
	if (rc)
		return rc < 0 ? (fflush(stdout) ? RX_ERROR : RX_OK) : rc;
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	r.tty = isatty(2);
	r.t0 = now_sec();
	rc = run(&r);
	progress_done(&r);
	if (rc == RX_FULL_SCAN)
		fprintf(stderr, "chj-resolve: full scan needed: %s\n", r.err);
	else if (rc)
		fprintf(stderr, "chj-resolve: %s\n", r.err);
	if (r.want_stats && (rc == RX_OK || r.mnt))
		stats_print(&r, stderr);
	res_free(&r.res);
	rs_free(&r.changed);
	free(r.mnt);
	free(r.mnt_root);
	if (r.dev_fd >= 0)
		close(r.dev_fd);
	if (r.mnt_fd >= 0)
		close(r.mnt_fd);
	return rc;
}
