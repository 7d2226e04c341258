// SPDX-License-Identifier: GPL-2.0 OR MIT
/* --stats report and the progress line. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libchj.h"
#include "resolve.h"

static const char *const phase_names[PH_NR] = {
	"sync", "map", "analyze", "walk", "ranges", "output",
};

void stats_print(const struct resolver *r, FILE *f)
{
	const struct stats *s = &r->st;
	char b[32];
	double total = 0;
	int first = 1;

	fprintf(f, "chj-resolve: %s on %s (%s), since epoch %llu, current %llu, method %s\n",
		r->fstype, r->mnt ? r->mnt : "?", r->dev_path,
		(unsigned long long)r->since, (unsigned long long)r->current_epoch,
		s->method ? s->method : "-");
	fprintf(f, "changed: %llu regions of %u bytes, %s in %llu ranges\n",
		(unsigned long long)s->changed_regions, r->region_bytes,
		chj_human_size(s->changed_bytes, b, sizeof(b)),
		(unsigned long long)s->changed_ranges);
	fputs("attributed:", f);
	for (int a = 0; a < AT_NR; a++) {
		if (!s->tally.bytes[a])
			continue;
		if (a == AT_UNNAMED)
			snprintf(b, sizeof(b), "%llu", (unsigned long long)s->tally.bytes[a]);
		else
			chj_human_size(s->tally.bytes[a], b, sizeof(b));
		fprintf(f, "%s %s %s", first ? "" : ",", settle_rows[a].name, b);
		first = 0;
	}
	fputs(first ? " nothing\n" : "\n", f);
	if (s->journal_trans || s->journal_blocks)
		fprintf(f, "journal: %llu transactions in changed regions name %llu home blocks\n",
			(unsigned long long)s->journal_trans,
			(unsigned long long)s->journal_blocks);
	if (s->journal_moved)
		fprintf(f, "journal: it moved since the change map was read (sequence %u -> %u): walked from where it was then\n",
			s->journal_seq_map, s->journal_seq_now);
	fprintf(f, "listed: %llu inodes, %llu paths; %llu changed inodes have no path under the mount\n",
		(unsigned long long)s->inodes_listed, (unsigned long long)s->paths_listed,
		(unsigned long long)s->unreachable);
	fputs("reasons:", f);
	first = 1;
	for (unsigned i = 0; i < RSN_NR; i++) {
		if (!s->by_reason[i])
			continue;
		fprintf(f, "%s %s %llu", first ? "" : ",", reason_name(i),
			(unsigned long long)s->by_reason[i]);
		first = 0;
	}
	fputs(first ? " none\n" : "\n", f);
	fprintf(f, "false-positive sources: %llu inodes listed only for sharing a changed inode block",
		(unsigned long long)s->itable_neighbours);
	if (s->writeback_dropped)
		fprintf(f, "; %llu inodes written back for changes older than the epoch were left out (not in the log since)",
			(unsigned long long)s->writeback_dropped);
	if (s->name_entries)
		fprintf(f, "; %llu inodes listed only for an entry of a changed directory (it may name another inode than before)",
			(unsigned long long)s->name_entries);
	if (s->name_same)
		fprintf(f, "; %llu entries of changed directories were left out (the same as at the epoch's start: state store)",
			(unsigned long long)s->name_same);
	if (s->leaf_neighbours)
		fprintf(f, "; %llu inodes sharing a changed tree leaf were left out (inode item older than the epoch)",
			(unsigned long long)s->leaf_neighbours);
	fputc('\n', f);
	if (s->dirs_walked || s->files_mapped)
		fprintf(f, "walk: %llu directories, %llu entries, %llu files mapped%s\n",
			(unsigned long long)s->dirs_walked, (unsigned long long)s->entries_walked,
			(unsigned long long)s->files_mapped,
			s->full_scan ? " (every inode scanned: a changed block's owner was not among the changed inodes)" : "");
	if (s->unmapped)
		fprintf(f, "walk: %llu files listed whole: another process's lease kept their extents from being read\n",
			(unsigned long long)s->unmapped);
	if (s->cache[0])
		fprintf(f, "name cache: %s\n", s->cache);
	if (s->state[0])
		fprintf(f, "state store: %s\n", s->state);
	if (s->note[0])
		fprintf(f, "note: %s\n", s->note);
	if (s->settle_done)
		fprintf(f, "settled: %s%s%s\n",
			s->verdict == SETTLE_FULL_SCAN ? "full scan needed" :
			s->verdict == SETTLE_CONSERVATIVE ? "listed, conservatively" : "listed",
			s->settled[0] ? ": " : "", s->settled);
	fputs("time:", f);
	for (int p = 0; p < PH_NR; p++) {
		fprintf(f, " %s %.3fs", phase_names[p], s->phase[p]);
		total += s->phase[p];
	}
	fprintf(f, ", total %.3fs\n", total);
}

void progress(struct resolver *r, const char *fmt, ...)
{
	double t;
	va_list ap;

	if (!r->tty)
		return;
	t = now_sec();
	/* Only for long work (CHJ_RESOLVE_PROGRESS_AFTER seconds, default 1,
	 * for tests), and not more than 5 times a second. */
	if (r->progress_after < 0) {
		const char *v = test_hook("CHJ_RESOLVE_PROGRESS_AFTER");
		char *end = NULL;

		r->progress_after = v && *v ? strtod(v, &end) : 1.0;
		if (!end || *end || !(r->progress_after >= 0))
			r->progress_after = 1.0;
	}
	if (t - r->t0 < r->progress_after || t - r->last_progress < 0.2)
		return;
	r->last_progress = t;
	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	r->progress_shown = 1;
}

void progress_done(struct resolver *r)
{
	if (r->progress_shown)
		fputs("\r\033[K", stderr);
	r->progress_shown = 0;
}
