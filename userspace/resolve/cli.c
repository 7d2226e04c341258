// SPDX-License-Identifier: GPL-2.0 OR MIT
/* The command line of chj-resolve: usage, help (kept equal to
 * chj-resolve(8): a unit test compares them) and option parsing. */
#include <getopt.h>
#include <stdio.h>

#include "libchj.h"
#include "resolve.h"

const char resolve_usage[] =
"Usage: chj-resolve [--since EPOCH] [-0 | --json] [--mount DIR] [--stats] DEVICE\n";

const char resolve_help[] =
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
"  --version      print the version\n"
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
"retained or newer than the current one, the metadata is damaged, the\n"
"filesystem is not on DEVICE or its layout is unsupported), or a change\n"
"could not be attributed to a file with certainty.\n"
"Nothing is printed on stdout unless the status is 0.\n";

static int usage_error(const char *fmt, const char *arg)
{
	fputs("chj-resolve: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	fputs(resolve_usage, stderr);
	fputs("Try 'chj-resolve --help' for more information.\n", stderr);
	return RX_USAGE;
}

int resolve_parse_args(struct resolver *r, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "mount", required_argument, NULL, 'm' },
		{ "stats", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int opt, zero = 0, json = 0;

	opterr = 0;
	optind = 0;	/* (re)start getopt: the unit tests call this again */
	/* A leading ':' tells a missing argument (':') from an unknown option. */
	while ((opt = getopt_long(argc, argv, ":0h", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (chj_parse_u64(optarg, &r->since))
				return usage_error("--since %s: not an epoch number", optarg);
			r->have_since = 1;
			break;
		case '0': zero = 1; break;
		case 'j': json = 1; break;
		case 'm': r->mount_opt = optarg; break;
		case 'S': r->want_stats = 1; break;
		case 'V':
			printf("chj-resolve %s (metadata format %u)\n", CHJ_RELEASE, CHJ_VERSION);
			return -1;
		case 'h':
			fputs(resolve_usage, stdout);
			fputs(resolve_help, stdout);
			return -1;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
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

