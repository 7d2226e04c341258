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
#define EXIT_NOT_RETAINED	3	/* epoch no longer retained: full backup */

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
/* Print "chj: msg" for a library error; return EXIT_ERROR/NOT_RETAINED. */
int cli_fail(const struct chj_error *e);
/* Print chj CMD --help to stdout. */
void cli_help(const struct chj_cmd *c);
/*
 * getopt_long for a subcommand: reset state, turn --help into help output
 * (returns 'h'), unknown options into a usage error ('?').
 */
int cli_getopt(const struct chj_cmd *c, int argc, char **argv,
	       const char *shortopts, const struct option *longopts);
/* Flush stdout; a write error there is a failure, not silent truncation. */
int cli_finish(int code);
/* Parse --region-size into sectors: power of two, 4 KiB .. 1 GiB. */
int cli_region_size(const struct chj_cmd *c, const char *arg, uint32_t *rs);
/* Region size to use: given, or the default, saying on stderr if raised. */
uint32_t cli_pick_region(uint64_t origin_sectors, uint32_t given);
/*
 * Before formatting path: refuse chj metadata (unless allow_chj or force)
 * and other signatures (unless force; then wipe them).  0 or an exit code.
 */
int cli_check_overwrite(const char *path, int force, int allow_chj);
/* Write s as a JSON string. */
void json_str(FILE *f, const char *s);

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
