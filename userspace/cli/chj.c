// SPDX-License-Identifier: GPL-2.0 OR MIT
/* chj: command table, help, dispatch and the helpers every subcommand uses. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"

const struct chj_cmd chj_cmds[] = {
	{ "create", cmd_create,
	  "NAME METADATA_DEV ORIGIN_DEV [--region-size SIZE] [--chunk-size SIZE] [--mark-ahead N] [--force]",
	  "create tracked device /dev/mapper/NAME over ORIGIN_DEV",
	  "Create /dev/mapper/NAME, a dm-chj device over ORIGIN_DEV that records\n"
	  "changed regions on METADATA_DEV.  Use /dev/mapper/NAME from then on:\n"
	  "writes to ORIGIN_DEV directly are not tracked.\n"
	  "\n"
	  "A METADATA_DEV without chj metadata is formatted first.  One that holds\n"
	  "chj metadata keeps it, with its region size and history.  One that holds\n"
	  "a file system or another signature is refused unless --force.\n"
	  "If NAME already exists with the same table, nothing is done and the\n"
	  "exit status is 0, so boot scripts can run it again; a NAME with another\n"
	  "table is an error.\n"
	  "\n"
	  "  --region-size SIZE  granularity of tracking, a power of two from 4 KiB\n"
	  "                      to 1 GiB; default 4 KiB, raised for origins over\n"
	  "                      1 TiB so the kernel's two region bitmaps stay\n"
	  "                      within 64 MiB\n"
	  "  --chunk-size SIZE   the intent map's chunk (table feature chunk_sectors),\n"
	  "                      a power of two from 4 KiB to 1 TiB, at least the\n"
	  "                      region size; default 4 MiB (or the region size).\n"
	  "                      Bigger: fewer chunk marks on the write path, more\n"
	  "                      regions counted whole after an unclean stop.  The\n"
	  "                      target raises it for origins of over 28480 chunks\n"
	  "  --mark-ahead N      accepted for old tables and kept in the table\n"
	  "                      (0 to 32640), without effect: a chunk mark covers\n"
	  "                      what marking ahead did\n"
	  "  --force             overwrite a METADATA_DEV that carries a signature\n",
	  EXIT_USAGE },
	{ "remove", cmd_remove, "NAME",
	  "remove tracked device NAME (its metadata is kept)",
	  "Remove /dev/mapper/NAME.  The metadata device keeps every mark: a later\n"
	  "chj create with the same devices carries on where it stopped.\n",
	  EXIT_USAGE },
	{ "status", cmd_status, "[--json] [NAME...]",
	  "show epochs, marks and journal use of tracked devices",
	  "Show each chj device (all of them without NAME): region size, current\n"
	  "and oldest retained epoch, regions marked in the current epoch, journal\n"
	  "use, mode (ok, or fail after a metadata write error) and the table's\n"
	  "features (CHUNK-SIZE, the chunk the target uses; MARK-AHEAD, inert;\n"
	  "FEATURES lists any chj does not know).  Warns on\n"
	  "stderr when writes can bypass the tracker: another device (a leftover\n"
	  "dm-linear, say) also uses an origin, or an origin is mounted directly.\n"
	  "\n"
	  "  --json   JSON output: {\"chj\": [{...}, ...]}\n",
	  EXIT_USAGE },
	{ "checkpoint", cmd_checkpoint, "NAME",
	  "end the current epoch and print the new epoch number",
	  "End the current epoch of NAME and start the next one; print its number.\n"
	  "Backups take \"changes --since\" the epoch that a checkpoint printed\n"
	  "before the previous backup: checkpoint first, then back up.\n",
	  EXIT_USAGE },
	{ "changes", cmd_changes,
	  "--since EPOCH (NAME | --metadata METADATA_DEV) [--bytes] [--json]",
	  "print the ranges changed since an epoch",
	  "Print every range of the origin that may have changed since EPOCH began\n"
	  "(EPOCH itself included), one \"START LENGTH\" line per range, in 512-byte\n"
	  "sectors, sorted and merged.  Nothing is printed unless the whole list is\n"
	  "known.  Ranges may include regions that did not change (false positives)\n"
	  "but never miss one that did.\n"
	  "\n"
	  "  --since EPOCH           first epoch to include\n"
	  "  --metadata METADATA_DEV read an inactive metadata device or image file\n"
	  "                          instead of a live device NAME\n"
	  "  --bytes                 START and LENGTH in bytes (also with --json)\n"
	  "  --json                  {\"since\": E, ..., \"unit\": \"sectors\",\n"
	  "                          \"region_size_bytes\": R, \"ranges\": [{\"start\":\n"
	  "                          S, \"length\": L}, ...]}; \"unit\" is the unit of\n"
	  "                          START and LENGTH (\"bytes\" with --bytes)\n"
	  "\n"
	  "Exit status 3, a full backup is needed: EPOCH is older than the oldest\n"
	  "retained epoch (history was dropped to make room), or newer than the\n"
	  "current one (the metadata was formatted anew), or the journal or a\n"
	  "bitmap block is damaged (the map cannot be trusted; see chj check).\n",
	  EXIT_USAGE },
	{ "export", cmd_export,
	  "--since EPOCH --snapshot DEV (NAME | --metadata METADATA_DEV) (--socket PATH [--socket-group GROUP] | --tcp HOST:PORT) [--tls-creds DIR [--tls-authz DN]... | --tls-psk FILE | --insecure-plain] [--bitmap NAME] [--granularity SIZE] [--export-name NAME] [--once] [--fork] [--pid-file FILE] [--tmpdir DIR]",
	  "serve a snapshot over NBD with the changes as a dirty bitmap",
	  "Serve DEV, a snapshot of the origin taken after chj checkpoint, read-only\n"
	  "over NBD through qemu-nbd, with the ranges changed since EPOCH (as chj\n"
	  "changes prints them) as the metadata context qemu:dirty-bitmap:NAME and\n"
	  "base:allocation.  Any NBD client reads the changed extents with\n"
	  "NBD_CMD_BLOCK_STATUS (libnbd block_status, nbdinfo --map).  Lock-step:\n"
	  "chj checkpoint prints E2; snapshot the origin; export --since E1, the\n"
	  "epoch printed before the previous backup.  The URI is printed once the\n"
	  "server listens; it runs until SIGINT/SIGTERM (or the client leaves,\n"
	  "with --once).  The origin and the metadata are never written; the\n"
	  "bitmap's qcow2 wrapper is removed before serving starts.  With TLS the\n"
	  "URI is nbds:// (nbds+unix://).\n"
	  "\n"
	  "  --snapshot DEV        what to serve: same size as the origin\n"
	  "  --socket PATH         Unix socket (must not exist), mode 0600: only its\n"
	  "                        owner connects, whatever the umask; or\n"
	  "  --socket-group GROUP  ... mode 0660, group GROUP: its members too\n"
	  "  --tcp HOST:PORT       TCP (HOST empty: every address); without TLS only\n"
	  "                        on a loopback address, unless --insecure-plain\n"
	  "  --tls-creds DIR       TLS with x509: DIR has ca-cert.pem, server-cert.pem,\n"
	  "                        server-key.pem (qemu's tls-creds-x509); clients\n"
	  "                        need a certificate signed by that CA\n"
	  "  --tls-authz DN        with --tls-creds: only a client certificate whose\n"
	  "                        subject is DN (repeat for more; certificate order,\n"
	  "                        as openssl x509 -subject -nameopt sep_comma_plus)\n"
	  "  --tls-psk FILE        TLS with pre-shared keys: FILE, named keys.psk,\n"
	  "                        has USER:HEXKEY lines (qemu's tls-creds-psk)\n"
	  "  --insecure-plain      allow plain TCP beyond loopback: anyone who reaches\n"
	  "                        the port reads the whole snapshot\n"
	  "  --bitmap NAME         bitmap name (default chj)\n"
	  "  --granularity SIZE    a power of two >= the region size (the default);\n"
	  "                        changed ranges are rounded outward to it\n"
	  "  --export-name NAME    NBD export name (default empty)\n"
	  "  --once                stop when the first client disconnects\n"
	  "  --fork                return once serving; the server keeps running\n"
	  "  --pid-file FILE       write the server's pid to FILE\n"
	  "  --tmpdir DIR          where the wrapper is built (default $TMPDIR, /tmp)\n"
	  "\n"
	  "Exit status 3, a full backup is needed (nothing is served): as for chj\n"
	  "changes, EPOCH is not retained, newer than the current one, or the map\n"
	  "is damaged.  Exit status 2, a usage error (\"chj: export: WHY\"): also\n"
	  "plain TCP beyond loopback, and TLS options that do not go together.\n",
	  EXIT_USAGE },
	{ "metadata-size", cmd_metadata_size,
	  "--origin-size SIZE [--region-size SIZE] [--epochs N] [--changed PERCENT] [-n]",
	  "compute the metadata device size for an origin",
	  "Print the metadata device size needed for an origin: two superblock\n"
	  "blocks, the bitmap (one bit per region) and a journal that keeps N\n"
	  "closed epochs, each changing PERCENT of the regions in the worst layout\n"
	  "(no two changed regions adjacent).  A journal that fills up drops the\n"
	  "oldest epochs; it never loses track of the current one.\n"
	  "\n"
	  "  --origin-size SIZE   size of the origin device\n"
	  "  --region-size SIZE   as for create (default 4 KiB, raised for large\n"
	  "                       origins)\n"
	  "  --epochs N           closed epochs to keep (default 8)\n"
	  "  --changed PERCENT    share of regions changed per epoch (default 1)\n"
	  "  -n, --numeric        print only the size in bytes\n"
	  "\n"
	  "SIZE must be what chj format takes: non-zero, whole 512-byte sectors.\n",
	  EXIT_USAGE },
	{ "format", cmd_format,
	  "METADATA_DEV --origin-size SIZE [--region-size SIZE] [--force]",
	  "format a metadata device or image (optional)",
	  "Write empty chj metadata for an origin of SIZE: epoch 1, no history, the\n"
	  "journal taking the rest of the device.  chj create formats a blank device\n"
	  "by itself; this is for preparing images and for starting over.  A device\n"
	  "with chj metadata or another signature is refused unless --force:\n"
	  "reformatting drops all history.\n"
	  "\n"
	  "  --origin-size SIZE   size of the origin the metadata will track\n"
	  "  --region-size SIZE   as for create\n"
	  "  --force              overwrite existing metadata or signatures\n",
	  EXIT_USAGE },
	{ "dump", cmd_dump, "METADATA_DEV [--json]",
	  "show the superblock and per-epoch history of a metadata device",
	  "Print the superblock in force, the state of both copies, the journal\n"
	  "records (blocks, extents and regions per closed epoch) and the regions\n"
	  "marked in the current epoch.\n"
	  "\n"
	  "  --json   JSON output\n",
	  EXIT_USAGE },
	{ "check", cmd_check, "METADATA_DEV [--repair]",
	  "verify a metadata device; --repair makes damage safe",
	  "Verify every checksum, field, journal record and bitmap block.  The\n"
	  "metadata must not be in use for --repair.\n"
	  "\n"
	  "  --repair   make damaged metadata safe, never by dropping a mark: damaged\n"
	  "             bitmap blocks become all changed; unreadable history is\n"
	  "             dropped and the oldest retained epoch raised past it, so\n"
	  "             older epochs get \"full backup needed\"\n"
	  "\n"
	  "Exit status as fsck: 0 no errors, 1 errors corrected, 4 errors left\n"
	  "uncorrected, 8 operational error (cannot read it, or not chj metadata:\n"
	  "no valid superblock), 16 usage error.\n",
	  FSCK_USAGE },
	{ "help", cmd_help, "[COMMAND]", "show help for chj or a command",
	  "Without COMMAND, list the commands; with one, show its options (as\n"
	  "chj COMMAND --help does).\n",
	  EXIT_USAGE },
	{ 0 }
};

const struct chj_cmd *chj_find_cmd(const char *name)
{
	for (const struct chj_cmd *c = chj_cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static void main_help(FILE *f)
{
	fprintf(f, "Usage: chj COMMAND [ARGS]\n\n"
		"chj tracks which regions of a block device change, epoch by epoch,\n"
		"so that backups copy only what changed.  No change is ever missed,\n"
		"even after a crash; some unchanged regions may be reported.\n\n"
		"Commands:\n");
	for (const struct chj_cmd *c = chj_cmds; c->name; c++)
		fprintf(f, "  %-14s %s\n", c->name, c->summary);
	fprintf(f, "\nRun 'chj COMMAND --help' for a command's options.\n\n"
		"Sizes: a number of bytes, or with a suffix K, M, G, T or P (powers of\n"
		"1024, optionally followed by B or iB: 4K = 4KiB = 4KB = 4096).\n\n"
		"Exit status: 0 success, 1 error, 2 usage error, 3 full backup needed\n"
		"(the epoch is no longer retained, is newer than the current one, or\n"
		"the metadata is damaged); chj check uses fsck's codes.\n");
}

void cli_help(const struct chj_cmd *c)
{
	printf("Usage: chj %s %s\n\n%s", c->name, c->synopsis, c->summary);
	printf(".\n%s%s", c->help[0] ? "\n" : "", c->help);
}

int cli_usage(const struct chj_cmd *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "chj: %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nUsage: chj %s %s\nTry 'chj %s --help'.\n",
		c->name, c->synopsis, c->name);
	return c->usage_exit;
}

int cli_fail(const struct chj_error *e)
{
	fprintf(stderr, "chj: %s\n", e->msg);
	return chj_rc_full_backup(e->rc) ? EXIT_FULL_BACKUP : EXIT_ERROR;
}

int cli_source(const struct chj_cmd *c, int argc, char **argv, const char *metadata,
	       const char **name)
{
	if (metadata && optind != argc)
		return cli_usage(c, "give NAME or --metadata, not both");
	if (!metadata && optind != argc - 1)
		return cli_usage(c, optind == argc ? "NAME or --metadata is required" :
				 "too many arguments");
	*name = metadata ? NULL : argv[optind];
	return 0;
}

int cli_changes(const char *metadata, const char *name, uint64_t since,
		struct chj_changes **ch)
{
	struct chj_error e = { 0 };
	struct chj_meta *m = NULL;
	int rc;

	*ch = NULL;
	if (metadata)
		rc = chj_meta_open(&m, metadata, 0, &e);
	else
		rc = chj_meta_open_live(&m, name, &e);
	/* The whole answer is computed before anything is printed or served. */
	if (!rc)
		rc = chj_changes_since(m, since, ch, &e);
	chj_meta_close(m);
	/* Damaged bitmap blocks: the map cannot be trusted (exit 3). */
	if (!rc && (rc = chj_changes_trusted(*ch, metadata ? metadata : name, &e))) {
		chj_changes_free(*ch);
		*ch = NULL;
	}
	return rc ? cli_fail(&e) : 0;
}

int cli_getopt(const struct chj_cmd *c, int argc, char **argv,
	       const char *shortopts, const struct option *longopts)
{
	char opts[32];
	int o;

	/* A leading ':' makes getopt tell a missing argument (':') apart. */
	snprintf(opts, sizeof(opts), ":%s", shortopts);
	o = getopt_long(argc, argv, opts, longopts, NULL);
	if (o == ':') {
		cli_usage(c, "option '%s' needs an argument", argv[optind - 1]);
		return '?';
	}
	if (o == '?')
		cli_usage(c, "unknown option '%s'", argv[optind - 1]);
	return o;
}

int cli_finish(int code)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "chj: standard output: %s\n",
			strerror(errno ? errno : EIO));
		return code ? code : EXIT_ERROR;
	}
	return code;
}

/* A parsed size, or a usage error that says what is wrong with it. */
static int size_arg(const struct chj_cmd *c, const char *opt, const char *arg,
		    uint64_t *bytes)
{
	int rc = chj_parse_size(arg, bytes);

	if (rc == CHJ_ERR_RANGE)
		return cli_usage(c, "%s %s: too large (2^64 bytes or more)", opt, arg);
	if (rc)
		return cli_usage(c, "%s %s: not a size (a number, optionally followed by K, M, G, T or P)",
				 opt, arg);
	return 0;
}

int cli_region_size(const struct chj_cmd *c, const char *arg, uint32_t *rs)
{
	uint64_t b;

	if (size_arg(c, "--region-size", arg, &b))
		return c->usage_exit;
	if (b % 512 || !chj_region_sectors_valid(b / 512))
		return cli_usage(c, "--region-size %s: must be a power of two from 4K to 1G",
				 arg);
	*rs = b / 512;
	return 0;
}

int cli_origin_size(const struct chj_cmd *c, const char *arg, uint64_t *sectors)
{
	uint64_t b;

	if (size_arg(c, "--origin-size", arg, &b))
		return c->usage_exit;
	if (!b)
		return cli_usage(c, "--origin-size %s: must not be zero", arg);
	if (b % 512)
		return cli_usage(c, "--origin-size %s: not a whole number of 512-byte sectors", arg);
	*sectors = b / 512;
	return 0;
}

int cli_chunk_size(const struct chj_cmd *c, const char *arg, uint32_t *sectors)
{
	uint64_t b, s;

	if (size_arg(c, "--chunk-size", arg, &b))
		return c->usage_exit;
	s = b / 512;
	/* dm-chj's chunk_sectors is a u32 power of two: at most 2^31. */
	if (b % 512 || s < 8 || s > (1ull << 31) || (s & (s - 1)))
		return cli_usage(c, "--chunk-size %s: must be a power of two from 4K to 1T",
				 arg);
	*sectors = s;
	return 0;
}

int cli_mark_ahead(const struct chj_cmd *c, const char *arg, uint32_t *regions)
{
	uint64_t v;

	if (chj_parse_u64(arg, &v) || v > CHJ_REGIONS_PER_BLOCK)
		return cli_usage(c, "--mark-ahead %s: not a number of regions from 0 to %u",
				 arg, CHJ_REGIONS_PER_BLOCK);
	*regions = v;
	return 0;
}

int cmd_help(int argc, char **argv)
{
	const struct chj_cmd *c;

	if (argc < 2) {
		main_help(stdout);
		return cli_finish(EXIT_OK);
	}
	if (argc > 2)
		return cli_usage(chj_find_cmd("help"), "too many arguments");
	c = chj_find_cmd(argv[1]);
	if (!c)
		return cli_usage(chj_find_cmd("help"), "unknown command '%s'", argv[1]);
	cli_help(c);
	return cli_finish(EXIT_OK);
}

/* Does argv (up to a "--") ask for help? */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}

int chj_main(int argc, char **argv)
{
	const struct chj_cmd *c;

	if (argc < 2) {
		main_help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(1, argv);
	if (!strcmp(argv[1], "--version")) {
		printf("chj %s (metadata format %u)\n", CHJ_RELEASE, CHJ_VERSION);
		return cli_finish(EXIT_OK);
	}
	c = chj_find_cmd(argv[1]);
	if (!c) {
		fprintf(stderr, "chj: unknown command '%s'\nTry 'chj help'.\n", argv[1]);
		return EXIT_USAGE;
	}
	/* --help is handled here, once, for every command. */
	if (wants_help(argc - 1, argv + 1)) {
		cli_help(c);
		return cli_finish(EXIT_OK);
	}
	/*
	 * getopt keeps its state in globals: optind = 0 makes glibc start
	 * over (a unit test runs many commands in one process); opterr = 0
	 * leaves the messages to cli_getopt.
	 */
	optind = 0;
	opterr = 0;
	return c->run(argc - 1, argv + 1);
}
