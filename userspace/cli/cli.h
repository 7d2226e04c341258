/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/* The chj command: subcommands, shared helpers and exit codes. */
#ifndef CHJ_CLI_H
#define CHJ_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "libchj.h"

/* Exit codes (chj check uses fsck's instead, below). */
#define EXIT_OK			0
#define EXIT_ERROR		1
#define EXIT_USAGE		2
#define EXIT_FULL_BACKUP	3	/* chj_rc_full_backup(): a full backup is needed */

#define FSCK_OK			0
#define FSCK_CORRECTED		1
#define FSCK_UNCORRECTED	4
#define FSCK_OPERATIONAL	8
#define FSCK_USAGE		16

struct chj_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;	/* one line, after "chj NAME " */
	const char *summary;	/* one line for chj help */
	const char *help;	/* the rest of chj NAME --help */
	int usage_exit;		/* exit code for usage errors */
};

extern const struct chj_cmd chj_cmds[];
const struct chj_cmd *chj_find_cmd(const char *name);

/* Entry point; main() only calls this (the unit tests call it too). */
int chj_main(int argc, char **argv);

/* Print "chj: CMD: why" and a hint; return the command's usage exit code. */
int cli_usage(const struct chj_cmd *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print "chj: msg" for a library error; return EXIT_ERROR or EXIT_FULL_BACKUP. */
int cli_fail(const struct chj_error *e);
/*
 * After the options: NAME (a live device) or --metadata, exactly one of
 * them; *name is NULL with --metadata.  0, or the usage exit code.
 */
int cli_source(const struct chj_cmd *c, int argc, char **argv, const char *metadata,
	       const char **name);
/*
 * The changes since EPOCH of METADATA, or of the live device NAME: the whole
 * answer, and only a trusted one.  0, or the error printed and the exit
 * code (EXIT_FULL_BACKUP where chj_rc_full_backup() says so).
 */
int cli_changes(const char *metadata, const char *name, uint64_t since,
		struct chj_changes **ch);
/* Print chj CMD --help to stdout (chj_main does, for --help or -h). */
void cli_help(const struct chj_cmd *c);
/*
 * getopt_long for a subcommand (chj_main has reset getopt and handled
 * --help already): an unknown option or a missing argument is a usage
 * error, each with its own message, and returns '?'.
 */
int cli_getopt(const struct chj_cmd *c, int argc, char **argv,
	       const char *shortopts, const struct option *longopts);
/* Flush stdout; a write error there is a failure, not silent truncation. */
int cli_finish(int code);
/*
 * Option arguments; each prints its own usage error (too large, zero, not
 * whole sectors...) and returns the command's usage exit code, or 0.
 * --region-size into sectors: power of two, 4 KiB .. 1 GiB.
 */
int cli_region_size(const struct chj_cmd *c, const char *arg, uint32_t *rs);
/* --origin-size into sectors: non-zero, whole sectors (what format takes). */
int cli_origin_size(const struct chj_cmd *c, const char *arg, uint64_t *sectors);
/* --mark-ahead: 0 .. CHJ_REGIONS_PER_BLOCK regions (dm-chj's limit). */
int cli_mark_ahead(const struct chj_cmd *c, const char *arg, uint32_t *regions);
/* --chunk-size: a power of two from 4 KiB to 1 TiB, in sectors. */
int cli_chunk_size(const struct chj_cmd *c, const char *arg, uint32_t *sectors);
/* Region size to use: given, or the default, saying on stderr if raised. */
uint32_t cli_pick_region(uint64_t origin_sectors, uint32_t given);
/*
 * Before formatting path: refuse chj metadata (unless allow_chj or force)
 * and other signatures (unless force; then wipe them).  0 or an exit code.
 */
int cli_check_overwrite(const char *path, int force, int allow_chj);

int cmd_create(int argc, char **argv);
int cmd_remove(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_changes(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_metadata_size(int argc, char **argv);
int cmd_format(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_help(int argc, char **argv);

#endif /* CHJ_CLI_H */
