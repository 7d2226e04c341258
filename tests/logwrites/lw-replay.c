// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * lw-replay: check chj's write-ahead rule against a dm-log-writes log.
 *
 * The device under log-writes holds chj's metadata in sectors [0, M) and the
 * origin in [M, end) (split with dm-linear).  The log is replayed entry by
 * entry onto an in-memory copy of the device's initial state.  At every
 * crash point -- just before each metadata write entry, just before each
 * flush entry, and at the end of the log -- the adversarial crash state is:
 *
 *   origin:   the baseline plus every data write logged so far (the worst
 *             case: everything the target issued reached the disk);
 *   metadata: only what was durable -- writes logged before the last FLUSH
 *             entry, plus FUA writes after it; non-FUA metadata writes since
 *             the last flush are dropped.
 *
 * "chj changes --since E" on the metadata of that state must report every
 * origin region whose content differs from the baseline (the state at the
 * log mark where epoch E began).  It is asked through libchj in process
 * (the code the command runs), and/or through the chj command on an image
 * file (--cli, --cli-every N).  A metadata state chj rejects is a failure
 * too, unless the superblock area was still blank (not formatted yet); then
 * any changed region is a violation.  --torn adds the states where the
 * metadata write in flight at a point is torn.  Controls: --fake-empty and
 * --model all|none|nofua.  See docs/testing.md, "Crash-consistency testing
 * with dm-log-writes", for the method and its limits.
 *
 * The log is read with lwlog (lwlog.h: the format, the bounds checks).
 *
 * Exit status: 0 every crash point passed, 1 a violation (or chj rejected a
 * crash state), 2 usage, I/O or log format error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "libchj.h"
#include "lwlog.h"

extern char **environ;


#define SECT		((uint64_t)512)
#define MBLK		((uint64_t)4096)		/* metadata dirty-tracking granularity */

enum model {
	M_DURABLE,	/* the adversarial model described above */
	M_ALL,		/* keep every metadata write (weaker: must pass too) */
	M_NONE,		/* keep no metadata write after the baseline */
	M_NOFUA,	/* treat FUA metadata writes as plain ones */
};
static const char *const model_names[] = { "durable", "all", "none", "nofua" };

/* ------------------------------------------------------------ options -- */

static struct {
	const char *log, *image, *mark, *chj, *meta_file;
	uint64_t dev_sectors, meta_sectors, since;
	uint32_t region_sectors;
	enum model model;
	bool have_since, fake_empty, keep_going, torn;
	uint64_t cli_every;
	int verbose;
} opt = { .chj = "chj", .model = M_DURABLE };

/* --------------------------------------------------------------- state -- */

static int log_fd = -1;
static struct lwlog lw;
static uint64_t origin_sectors, nr_regions, nr_words;
static uint8_t *img;			/* the device, every write applied */
static uint8_t *durable;		/* the metadata area of the crash state */
static uint64_t meta_bytes, meta_blocks;

/* Metadata blocks written since the last flush (not durable yet). */
static uint8_t *pend;
static uint64_t *pend_list, pend_n;
/* Durable blocks not yet written to the image file. */
static uint8_t *fdirty;
static uint64_t *fdirty_list, fdirty_n;

/* Origin regions, checker granularity. */
static uint8_t **base;			/* baseline copy, from first touch on */
static uint64_t *differs;		/* content differs from the baseline */
static uint64_t *discarded;		/* discarded since the baseline */
static uint64_t *covered;		/* reported by the tracker */
static uint64_t *last_writer;		/* entry index + 1 of the last change */
static uint64_t nr_differs;

static bool baselined;
static uint64_t baseline_entry;		/* entry index of the mark, or 0 */
static uint64_t data_ver, durable_ver;
static uint64_t checked_data_ver = ~0ull, checked_durable_ver = ~0ull;
static bool last_violated;

/* What the tracker said for durable_ver == checked_durable_ver. */
enum tracker_answer { T_RANGES, T_NOT_RETAINED, T_UNFORMATTED };
static enum tracker_answer answer;
static uint64_t answer_ranges;

/* Counters. */
static struct {
	uint64_t writes, data_writes, fua_data, meta_writes, fua_meta, flushes, discards,
		 marks, bytes;
	uint64_t points, distinct, tracker_runs, lib_runs, cli_runs, points_changed, violations,
		 not_retained, unformatted, max_differs, torn_points, torn_violations;
} st;

static char tmp_out[4096], tmp_err[4096];
static int meta_fd = -1;		/* the crash state's metadata image file */
static bool own_meta_file;

/* ------------------------------------------------------------- helpers -- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("lw-replay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		die("out of memory (%zu x %zu bytes)", n, sz);
	return p;
}

static void *xmap(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("cannot map %zu bytes: %s", len, strerror(errno));
	return p;
}

/* Reads as lwlog does; end of file reads as EIO (a truncated file). */
static void xpread(int fd, void *buf, size_t len, uint64_t off, const char *what)
{
	if (lwlog_read_fd(&fd, buf, len, off))
		die("%s: cannot read %zu bytes at byte %" PRIu64 ": %s", what, len, off,
		    errno == EIO ? "I/O error or truncated" : strerror(errno));
}

static void xpwrite(int fd, const void *buf, size_t len, uint64_t off, const char *what)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("%s: write error: %s", what, r < 0 ? strerror(errno) : "short write");
		done += r;
	}
}

static inline bool bit_test(const uint64_t *b, uint64_t i)
{
	return (b[i >> 6] >> (i & 63)) & 1;
}

static inline void bit_set(uint64_t *b, uint64_t i)
{
	b[i >> 6] |= 1ull << (i & 63);
}

static inline void bit_clear(uint64_t *b, uint64_t i)
{
	b[i >> 6] &= ~(1ull << (i & 63));
}

static const char *flags_str(uint64_t f, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s%s",
		 f & LW_FLUSH ? "FLUSH " : "", f & LW_FUA ? "FUA " : "",
		 f & LW_DISCARD ? "DISCARD " : "", f & LW_MARK ? "MARK " : "",
		 f & LW_METADATA ? "META " : "", f ? "" : "none");
	if (buf[0] && buf[strlen(buf) - 1] == ' ')
		buf[strlen(buf) - 1] = 0;
	return buf;
}

static const char *entry_str(const struct lwlog_entry *e, char *buf, size_t len)
{
	char fl[64];

	if (e->flags & LW_MARK)
		snprintf(buf, len, "entry %" PRIu64 " (mark '%s')", e->idx, e->label);
	else if (!e->nr)
		snprintf(buf, len, "entry %" PRIu64 " (%s, no data)", e->idx,
			 flags_str(e->flags, fl, sizeof(fl)));
	else
		snprintf(buf, len, "entry %" PRIu64 " (%s %s device sectors %" PRIu64
			 "+%" PRIu64 " [%s])", e->idx,
			 e->flags & LW_DISCARD ? "discard" : "write",
			 e->sector + e->nr <= opt.meta_sectors ? "metadata" : "origin",
			 e->sector, e->nr, flags_str(e->flags, fl, sizeof(fl)));
	return buf;
}

/* ------------------------------------------------------ metadata model -- */

static void durable_touch(uint64_t blk)
{
	if (!fdirty[blk]) {
		fdirty[blk] = 1;
		fdirty_list[fdirty_n++] = blk;
	}
}

/* Copy bytes [off, off + len) of the image's metadata area into durable. */
static void make_durable(uint64_t off, uint64_t len)
{
	if (!len)
		return;
	memcpy(durable + off, img + off, len);
	for (uint64_t b = off / MBLK; b <= (off + len - 1) / MBLK; b++)
		durable_touch(b);
	durable_ver++;
}

/* A flush completed: everything written before it is durable. */
static void flush_pending(void)
{
	for (uint64_t i = 0; i < pend_n; i++) {
		uint64_t b = pend_list[i], off = b * MBLK;
		uint64_t len = off + MBLK > meta_bytes ? meta_bytes - off : MBLK;

		pend[b] = 0;
		make_durable(off, len);
	}
	pend_n = 0;
}

static void pend_add(uint64_t off, uint64_t len)
{
	for (uint64_t b = off / MBLK; b <= (off + len - 1) / MBLK; b++) {
		if (!pend[b]) {
			pend[b] = 1;
			pend_list[pend_n++] = b;
		}
	}
}

static bool model_frozen(void)
{
	return opt.model == M_NONE && baselined;
}

static void meta_flush(void)
{
	if (!model_frozen())
		flush_pending();
}

/* The write is already applied to img. */
static void meta_write(const struct lwlog_entry *e)
{
	uint64_t off = e->sector * SECT, len = e->nr * SECT;
	/* The weaker and broken models apply from the baseline on. */
	bool fua = (e->flags & LW_FUA) && !(opt.model == M_NOFUA && baselined);

	if (model_frozen())
		return;
	if ((opt.model == M_ALL && baselined) || fua)
		make_durable(off, len);
	else
		pend_add(off, len);
}

/* --------------------------------------------------------- origin side -- */

static uint64_t region_bytes(uint64_t r)
{
	uint64_t start = r * opt.region_sectors;
	uint64_t end = start + opt.region_sectors;

	if (end > origin_sectors)
		end = origin_sectors;
	return (end - start) * SECT;
}

static uint8_t *region_ptr(uint64_t r)
{
	return img + (opt.meta_sectors + r * opt.region_sectors) * SECT;
}

/* Before a data entry touching regions [r0, r1] is applied. */
static void save_baseline(uint64_t r0, uint64_t r1)
{
	for (uint64_t r = r0; r <= r1; r++) {
		if (base[r])
			continue;
		base[r] = malloc(region_bytes(r));
		if (!base[r])
			die("out of memory saving the baseline of region %" PRIu64, r);
		memcpy(base[r], region_ptr(r), region_bytes(r));
	}
}

static void set_differs(uint64_t r, bool d)
{
	if (d && !bit_test(differs, r)) {
		bit_set(differs, r);
		nr_differs++;
	} else if (!d && bit_test(differs, r)) {
		bit_clear(differs, r);
		nr_differs--;
	}
}

/* After a data entry touching regions [r0, r1] was applied. */
static void update_differs(const struct lwlog_entry *e, uint64_t r0, uint64_t r1)
{
	for (uint64_t r = r0; r <= r1; r++) {
		bool d = bit_test(discarded, r) ||
			 memcmp(base[r], region_ptr(r), region_bytes(r)) != 0;

		set_differs(r, d);
		last_writer[r] = e->idx + 1;
	}
	if (nr_differs > st.max_differs)
		st.max_differs = nr_differs;
	data_ver++;
}

/* ------------------------------------------------------------- tracker -- */

static void write_meta_file(int fd)
{
	for (uint64_t i = 0; i < fdirty_n; i++) {
		uint64_t b = fdirty_list[i], off = b * MBLK;
		uint64_t len = off + MBLK > meta_bytes ? meta_bytes - off : MBLK;

		fdirty[b] = 0;
		xpwrite(fd, durable + off, len, off, opt.meta_file);
	}
	fdirty_n = 0;
}

static bool sb_area_blank(void)
{
	for (uint64_t c = 0; c < CHJ_SB_COPIES; c++) {
		const uint8_t *p = durable + c * CHJ_BLOCK_SIZE;

		if ((c + 1) * CHJ_BLOCK_SIZE > meta_bytes)
			break;
		for (unsigned i = 0; i < CHJ_SB_BYTES; i++)
			if (p[i])
				return false;
	}
	return true;
}

static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	char *buf;

	if (fd < 0 || fstat(fd, &sb))
		die("%s: %s", path, strerror(errno));
	buf = xcalloc(sb.st_size + 1, 1);
	if (sb.st_size)
		xpread(fd, buf, sb.st_size, 0, path);
	close(fd);
	*len = sb.st_size;
	return buf;
}

static void cover_range(uint64_t s, uint64_t l)
{
	uint64_t first, end, last_excl;

	if (!l || s >= origin_sectors)
		return;
	end = s + l > origin_sectors ? origin_sectors : s + l;
	first = (s + opt.region_sectors - 1) / opt.region_sectors;
	last_excl = end == origin_sectors ? nr_regions : end / opt.region_sectors;
	for (uint64_t r = first; r < last_excl; r++)
		bit_set(covered, r);
}

struct range {
	uint64_t s, l;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

static const struct lwlog_entry *cur_entry;	/* for messages */
static const char *cur_point;
/* Sectors of the write at the current point applied in a torn state, or 0. */
static uint64_t torn_k;

static const char *torn_text(void)
{
	static char buf[96];

	if (!torn_k || !cur_entry)
		return "";
	snprintf(buf, sizeof(buf), " with that write torn after %" PRIu64 " of %" PRIu64
		 " sectors", torn_k, cur_entry->nr);
	return buf;
}

static void fail_point(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* One answer of `chj changes --since E`: exit status, ranges, message. */
struct answer {
	int rc;			/* 0 ranges, 3 not retained, 1 error */
	struct range *v;
	size_t n, cap;
	char msg[600];
};

static void answer_add(struct answer *a, uint64_t s, uint64_t l)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 256;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			die("out of memory");
	}
	a->v[a->n].s = s;
	a->v[a->n++].l = l;
}

/* The chj command on the image file, as a user would run it. */
static void ask_cli(struct answer *a)
{
	char since[32], *out, *err;
	char *argv[] = { (char *)opt.chj, "changes", "--since", since, "--metadata",
			 (char *)opt.meta_file, NULL };
	posix_spawn_file_actions_t fa;
	size_t olen, elen;
	int status, rc;
	pid_t pid;

	write_meta_file(meta_fd);
	snprintf(since, sizeof(since), "%" PRIu64, opt.since);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, tmp_out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, tmp_err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	rc = posix_spawnp(&pid, opt.chj, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		die("cannot run %s: %s", opt.chj, strerror(rc));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	st.cli_runs++;
	out = slurp(tmp_out, &olen);
	err = slurp(tmp_err, &elen);
	if (elen && err[elen - 1] == '\n')
		err[elen - 1] = 0;
	if (!WIFEXITED(status))
		fail_point("%s changes was killed by signal %d", opt.chj, WTERMSIG(status));
	a->rc = WEXITSTATUS(status);
	snprintf(a->msg, sizeof(a->msg), "%s", err);
	if (!a->rc) {
		char *p = out, *end;

		while (*p) {
			uint64_t s, l;

			s = strtoull(p, &end, 10);
			if (end == p || *end != ' ')
				fail_point("chj changes printed an unexpected line: %.80s", p);
			p = end + 1;
			l = strtoull(p, &end, 10);
			if (end == p || (*end != '\n' && *end))
				fail_point("chj changes printed an unexpected line: %.80s", p);
			p = *end ? end + 1 : end;
			answer_add(a, s, l);
		}
	} else if (a->rc != 1 && a->rc != 3) {
		fail_point("%s changes exited %d: %s", opt.chj, a->rc, err);
	}
	free(out);
	free(err);
}

/* The same question through libchj, on the image in memory. */
static void ask_lib(struct answer *a)
{
	struct chj_error e = { 0 };
	struct chj_changes *ch = NULL;
	struct chj_meta *m = NULL;
	int rc;

	st.lib_runs++;
	rc = chj_meta_open_mem(&m, durable, meta_bytes, 0, &e);
	if (!rc)
		rc = chj_changes_since(m, opt.since, &ch, &e);
	chj_meta_close(m);
	if (rc) {
		a->rc = rc == CHJ_ERR_NOT_RETAINED ? 3 : 1;
		snprintf(a->msg, sizeof(a->msg), "chj: %s", e.msg);
		return;
	}
	a->rc = 0;
	{
		uint64_t cur = 0;
		struct chj_range r;

		while (chj_changes_next(ch, &cur, &r))
			answer_add(a, r.start, r.len);
	}
	chj_changes_free(ch);
}

static bool answers_equal(const struct answer *x, const struct answer *y)
{
	if (x->rc != y->rc || x->n != y->n)
		return false;
	for (size_t i = 0; i < x->n; i++)
		if (x->v[i].s != y->v[i].s || x->v[i].l != y->v[i].l)
			return false;
	return true;
}

/* Ask the tracker about the crash state's metadata; fill covered. */
static void run_tracker(void)
{
	struct answer a = { 0 }, b = { 0 };
	struct range *v;
	size_t n;

	memset(covered, 0, nr_words * 8);
	answer_ranges = 0;
	if (opt.fake_empty) {
		answer = T_RANGES;
		return;
	}
	st.tracker_runs++;
	if (opt.cli_every == 1) {
		ask_cli(&a);
	} else {
		ask_lib(&a);
		if (opt.cli_every && st.tracker_runs % opt.cli_every == 1) {
			ask_cli(&b);
			if (!answers_equal(&a, &b))
				fail_point("libchj and `chj changes` disagree: exit %d with %zu ranges "
					   "vs exit %d with %zu ranges (%s)", a.rc, a.n, b.rc, b.n,
					   b.msg);
			free(b.v);
		}
	}
	if (a.rc == 3) {
		/* "No longer retained: a full backup is needed": safe. */
		answer = T_NOT_RETAINED;
		st.not_retained++;
		memset(covered, 0xff, nr_words * 8);
	} else if (a.rc == 1 && sb_area_blank()) {
		/* Never formatted: it tracks nothing; fine while nothing changed. */
		answer = T_UNFORMATTED;
		st.unformatted++;
	} else if (a.rc) {
		fail_point("chj changes --since %" PRIu64 " rejected the crash state's metadata "
			   "(exit %d): %s", opt.since, a.rc, a.msg);
	} else {
		answer = T_RANGES;
		v = a.v;
		n = a.n;
		/* Sorted and merged already, by chj's promise; make sure. */
		qsort(v, n, sizeof(*v), range_cmp);
		for (size_t i = 0; i < n;) {
			uint64_t s = v[i].s, e = v[i].s + v[i].l;
			size_t j = i + 1;

			for (; j < n && v[j].s <= e; j++)
				if (v[j].s + v[j].l > e)
					e = v[j].s + v[j].l;
			cover_range(s, e - s);
			i = j;
		}
		answer_ranges = n;
	}
	free(a.v);
}

/* ------------------------------------------------------------ messages -- */

/* What the crash state's metadata says about origin sector os. */
static void explain_metadata(uint64_t os)
{
	const struct chj_superblock *best = NULL;
	int best_copy = -1;

	for (int c = 0; c < (int)CHJ_SB_COPIES; c++) {
		const struct chj_superblock *sb = (const void *)(durable + c * CHJ_BLOCK_SIZE);
		bool ok;

		if ((uint64_t)(c + 1) * CHJ_BLOCK_SIZE > meta_bytes)
			break;
		ok = chj_le32(sb->magic) == CHJ_SB_MAGIC &&
		     chj_le32(sb->csum) == chj_block_csum(sb, CHJ_SB_BYTES);
		fprintf(stderr, "    superblock copy %d: %s", c,
			ok ? "valid checksum" : "no valid superblock");
		if (ok)
			fprintf(stderr, ", seq %" PRIu64 ", current epoch %" PRIu64
				", oldest %" PRIu64 ", flags 0x%x, journal %" PRIu64 "..%" PRIu64,
				chj_le64(sb->seq), chj_le64(sb->current_epoch),
				chj_le64(sb->oldest_epoch), chj_le32(sb->flags),
				chj_le64(sb->journal_head), chj_le64(sb->journal_tail));
		fputc('\n', stderr);
		if (ok && (!best || chj_le64(sb->seq) > chj_le64(best->seq))) {
			best = sb;
			best_copy = c;
		}
	}
	if (!best)
		return;
	{
		uint64_t rs = chj_le32(best->region_sectors);
		uint64_t q = rs ? os / rs : 0;
		uint64_t idx = q / CHJ_REGIONS_PER_BLOCK;
		uint64_t blk = chj_le64(best->bitmap_start) + idx;
		const struct chj_bitmap_block *b;
		uint64_t bit = q % CHJ_REGIONS_PER_BLOCK;

		if (!rs || (blk + 1) * CHJ_BLOCK_SIZE > meta_bytes) {
			fprintf(stderr, "    (superblock %d geometry out of range)\n", best_copy);
			return;
		}
		b = (const void *)(durable + blk * CHJ_BLOCK_SIZE);
		fprintf(stderr, "    newest superblock: copy %d; chj region %" PRIu64
			" (%" PRIu64 " sectors) lives in bitmap block %" PRIu64
			": magic %s, checksum %s, epoch %" PRIu64 ", bit %" PRIu64 " = %d\n",
			best_copy, q, rs, blk,
			chj_le32(b->magic) == CHJ_BITMAP_MAGIC ? "ok" : "BAD",
			chj_le32(b->csum) == chj_block_csum(b, CHJ_BLOCK_SIZE) ? "ok" : "BAD",
			chj_le64(b->epoch), bit, (b->bits[bit / 8] >> (bit % 8)) & 1);
		fprintf(stderr, "    the same block in the full (every write applied) image: "
			"epoch %" PRIu64 ", bit = %d\n",
			chj_le64(((const struct chj_bitmap_block *)(img + blk * CHJ_BLOCK_SIZE))->epoch),
			(((const struct chj_bitmap_block *)(img + blk * CHJ_BLOCK_SIZE))->bits[bit / 8]
			 >> (bit % 8)) & 1);
	}
}

static void print_summary(FILE *f)
{
	fprintf(f, "log: %" PRIu64 " entries: %" PRIu64 " writes (%" PRIu64 " metadata, %"
		PRIu64 " of them FUA; %" PRIu64 " origin, %" PRIu64 " FUA; %" PRIu64
		" MiB), %" PRIu64 " flushes, %" PRIu64 " discards, %" PRIu64
		" marks; baseline at entry %" PRIu64 "\n", lw.nr_entries, st.writes,
		st.meta_writes, st.fua_meta, st.data_writes, st.fua_data, st.bytes >> 20,
		st.flushes, st.discards, st.marks, baseline_entry);
	fprintf(f, "model %s%s, since epoch %" PRIu64 ", %" PRIu32 "-sector regions: "
		"%" PRIu64 " distinct crash states, %" PRIu64 " tracker answers (%" PRIu64
		" libchj, %" PRIu64 " chj command), %" PRIu64 " points with changed data "
		"(max %" PRIu64 " regions changed), %" PRIu64 " not retained, %" PRIu64
		" unformatted, %" PRIu64 " torn-write states\n",
		model_names[opt.model], opt.fake_empty ? " + fake empty tracker" : "",
		opt.since, opt.region_sectors, st.distinct, st.tracker_runs, st.lib_runs,
		st.cli_runs, st.points_changed, st.max_differs, st.not_retained,
		st.unformatted, st.torn_points);
}

static void fail_point(const char *fmt, ...)
{
	char eb[400];
	va_list ap;

	fprintf(stderr, "lw-replay: FAIL at crash point %" PRIu64 " (%s%s)%s: ", st.points,
		cur_point, cur_entry ? entry_str(cur_entry, eb, sizeof(eb)) : "", torn_text());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	write_meta_file(meta_fd);
	fprintf(stderr, "  crash-state metadata image: %s\n", opt.meta_file);
	explain_metadata(0);
	print_summary(stderr);
	printf("crash points checked: %" PRIu64 " (FAILED)\n", st.points);
	exit(1);
}

/* ----------------------------------------------------------- checking -- */

static void report_violation(uint64_t r, uint64_t count)
{
	uint64_t os = r * opt.region_sectors;
	char eb[400];

	fprintf(stderr, "lw-replay: VIOLATION at crash point %" PRIu64 " (%s%s)%s:\n",
		st.points, cur_point, cur_entry ? entry_str(cur_entry, eb, sizeof(eb)) : "",
		torn_text());
	fprintf(stderr, "  origin region %" PRIu64 " (origin sectors %" PRIu64 "+%" PRIu64
		", device sector %" PRIu64 ") %s the baseline but is not reported changed "
		"(%" PRIu64 " such regions at this point)\n", r, os,
		region_bytes(r) / SECT, opt.meta_sectors + os,
		bit_test(discarded, r) ? "was discarded since" : "differs from",
		count);
	if (last_writer[r])
		fprintf(stderr, "  last changed by entry %" PRIu64 "\n", last_writer[r] - 1);
	if (opt.fake_empty)
		fprintf(stderr, "  tracker: fake, reports nothing\n");
	else if (answer == T_UNFORMATTED)
		fprintf(stderr, "  tracker: chj changes: metadata not formatted yet (blank superblocks)\n");
	else
		fprintf(stderr, "  tracker: chj changes --since %" PRIu64 " printed %" PRIu64
			" ranges, none covering the region\n", opt.since, answer_ranges);
	write_meta_file(meta_fd);
	fprintf(stderr, "  crash-state metadata image: %s\n", opt.meta_file);
	explain_metadata(os);
}

static void check_point(const char *why, const struct lwlog_entry *e)
{
	uint64_t count = 0, first = 0;

	if (!baselined)
		return;
	if (torn_k)
		st.torn_points++;
	else
		st.points++;
	cur_point = why;
	cur_entry = e;
	if (opt.verbose > 1)
		fprintf(stderr, "point %" PRIu64 ": %s%s%" PRIu64 " torn %" PRIu64 ", %" PRIu64
			" differing\n", st.points, why, e ? "entry " : "", e ? e->idx : 0, torn_k,
			nr_differs);
	if (nr_differs && !torn_k)
		st.points_changed++;
	if (data_ver == checked_data_ver && durable_ver == checked_durable_ver) {
		/* The same crash state as the previous point: the same verdict. */
		if (last_violated)
			st.violations++;
		return;
	}
	st.distinct++;
	if (durable_ver != checked_durable_ver)
		run_tracker();
	checked_data_ver = data_ver;
	checked_durable_ver = durable_ver;
	last_violated = false;
	for (uint64_t w = 0; w < nr_words; w++) {
		uint64_t bad = differs[w] & ~covered[w];

		if (!bad)
			continue;
		if (!count)
			first = w * 64 + __builtin_ctzll(bad);
		count += __builtin_popcountll(bad);
	}
	if (!count)
		return;
	if (!st.violations && !st.torn_violations)
		report_violation(first, count);
	if (torn_k) {
		st.torn_violations++;
	} else {
		last_violated = true;
		st.violations++;
	}
	if (!opt.keep_going) {
		print_summary(stderr);
		printf("crash points checked: %" PRIu64 " (FAILED)\n", st.points);
		exit(1);
	}
}

/* Mark durable bytes [off, off + len) changed (for the image file). */
static void durable_changed(uint64_t off, uint64_t len)
{
	for (uint64_t b = off / MBLK; b <= (off + len - 1) / MBLK; b++)
		durable_touch(b);
	durable_ver++;
}

/*
 * The metadata write e (its data at log offset pos) is in flight at this
 * point: a crash can leave it torn.  Check the states where only its first
 * sector, half of it, or all but its last sector reached the disk.
 */
static void check_torn(const struct lwlog_entry *e, uint64_t pos)
{
	uint64_t ks[3] = { 1, e->nr / 2, e->nr - 1 }, prev = 0;
	uint64_t off = e->sector * SECT, len = e->nr * SECT;
	uint8_t *data, *save;

	if (!baselined || e->nr < 2 || model_frozen())
		return;
	data = xcalloc(len, 1);
	save = xcalloc(len, 1);
	xpread(log_fd, data, len, pos, opt.log);
	memcpy(save, durable + off, len);
	for (int i = 0; i < 3; i++) {
		if (!ks[i] || ks[i] >= e->nr || ks[i] == prev)
			continue;
		prev = ks[i];
		memcpy(durable + off, save, len);
		memcpy(durable + off, data, ks[i] * SECT);
		durable_changed(off, len);
		torn_k = ks[i];
		check_point("torn write, ", e);
		torn_k = 0;
	}
	memcpy(durable + off, save, len);
	durable_changed(off, len);
	free(data);
	free(save);
}

/* --------------------------------------------------------------- main -- */

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
"Usage: lw-replay --metadata-sectors M (--device-sectors N | --image FILE)\n"
"                 --since E [--mark LABEL] [options] LOG\n"
"\n"
"Replay a dm-log-writes LOG of a device holding chj metadata in sectors\n"
"[0, M) and the origin in [M, N), and at every crash point (before each\n"
"metadata write or flush entry, and at the end) check that `chj changes\n"
"--since E` on the durable metadata reports every origin region whose\n"
"content differs from the baseline (the state at mark LABEL, or the start).\n"
"\n"
"  --metadata-sectors M   size of the metadata area, 512-byte sectors\n"
"  --device-sectors N     size of the logged device (initial content zeros)\n"
"  --image FILE           initial content of the device (read, not written)\n"
"  --since E              epoch that began at the baseline\n"
"  --mark LABEL           baseline: the first mark with this label\n"
"  --region-sectors R     checker granularity (default 8); at most chj's\n"
"  --chj PATH             the chj command (default: chj from PATH)\n"
"  --meta-file PATH       where to write crash-state metadata (default: a\n"
"                         temporary file, removed on success)\n"
"  --model MODEL          durable (default): drop non-FUA metadata writes\n"
"                         since the last flush; from the baseline on, all:\n"
"                         keep every metadata write; none: keep none;\n"
"                         nofua: FUA metadata writes count as plain ones\n"
"  --cli                  ask `chj changes` (the command) at every point;\n"
"                         default: libchj in process (the same code)\n"
"  --cli-every N          also ask the command at every Nth tracker run\n"
"                         and fail unless both answers are identical\n"
"  --torn                 also check, before each metadata write of more\n"
"                         than one sector, the states where it is torn\n"
"                         after its first sector, half, or all but one\n"
"  --fake-empty           pretend chj reported no change (control)\n"
"  --keep-going           count violations at every point, do not stop\n"
"  -v                     more output (twice: every crash point)\n"
"\n"
"Prints `crash points checked: N`.  Exit 0 pass, 1 violation, 2 error.\n");
	exit(rc);
}

static uint64_t num(const char *s, const char *what)
{
	uint64_t v;

	if (chj_parse_u64(s, &v))
		die("%s: not a number: %s", what, s);
	return v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "metadata-sectors", required_argument, NULL, 'M' },
		{ "device-sectors", required_argument, NULL, 'N' },
		{ "image", required_argument, NULL, 'i' },
		{ "since", required_argument, NULL, 'E' },
		{ "mark", required_argument, NULL, 'm' },
		{ "region-sectors", required_argument, NULL, 'r' },
		{ "chj", required_argument, NULL, 'c' },
		{ "meta-file", required_argument, NULL, 'f' },
		{ "model", required_argument, NULL, 'o' },
		{ "fake-empty", no_argument, NULL, 'F' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "cli", no_argument, NULL, 'C' },
		{ "torn", no_argument, NULL, 'T' },
		{ "cli-every", required_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int c;

	opt.region_sectors = 8;
	while ((c = getopt_long(argc, argv, "hv", lo, NULL)) != -1) {
		switch (c) {
		case 'M': opt.meta_sectors = num(optarg, "--metadata-sectors"); break;
		case 'N': opt.dev_sectors = num(optarg, "--device-sectors"); break;
		case 'i': opt.image = optarg; break;
		case 'E': opt.since = num(optarg, "--since"); opt.have_since = true; break;
		case 'm': opt.mark = optarg; break;
		case 'r': opt.region_sectors = (uint32_t)num(optarg, "--region-sectors"); break;
		case 'c': opt.chj = optarg; break;
		case 'f': opt.meta_file = optarg; break;
		case 'o': {
			size_t i;

			for (i = 0; i < sizeof(model_names) / sizeof(*model_names); i++)
				if (!strcmp(optarg, model_names[i]))
					break;
			if (i == sizeof(model_names) / sizeof(*model_names))
				die("--model: unknown model %s", optarg);
			opt.model = (enum model)i;
			break;
		}
		case 'F': opt.fake_empty = true; break;
		case 'k': opt.keep_going = true; break;
		case 'C': opt.cli_every = 1; break;
		case 'T': opt.torn = true; break;
		case 'e': opt.cli_every = num(optarg, "--cli-every"); break;
		case 'v': opt.verbose++; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc - 1)
		usage(2);
	opt.log = argv[optind];
	if (!opt.meta_sectors || !opt.have_since || (!opt.dev_sectors && !opt.image))
		usage(2);
	if (!opt.region_sectors || (opt.region_sectors & (opt.region_sectors - 1)))
		die("--region-sectors must be a power of two");
}

static void open_log(void)
{
	char err[256];
	off_t size;

	log_fd = open(opt.log, O_RDONLY | O_CLOEXEC);
	if (log_fd < 0)
		die("%s: %s", opt.log, strerror(errno));
	size = lseek(log_fd, 0, SEEK_END);
	if (size < 0)
		die("%s: %s", opt.log, strerror(errno));
	if (lwlog_open(&lw, lwlog_read_fd, &log_fd, (uint64_t)size, err, sizeof(err)))
		die("%s: %s", opt.log, err);
}

static void setup(void)
{
	uint64_t dev_bytes;

	if (opt.image) {
		int fd = open(opt.image, O_RDONLY | O_CLOEXEC);
		struct stat sb;

		if (fd < 0 || fstat(fd, &sb))
			die("%s: %s", opt.image, strerror(errno));
		if (!opt.dev_sectors)
			opt.dev_sectors = sb.st_size / SECT;
		if ((uint64_t)sb.st_size < opt.dev_sectors * SECT)
			die("%s: smaller than %" PRIu64 " sectors", opt.image, opt.dev_sectors);
		dev_bytes = opt.dev_sectors * SECT;
		img = xmap(dev_bytes);
		xpread(fd, img, dev_bytes, 0, opt.image);
		close(fd);
	} else {
		dev_bytes = opt.dev_sectors * SECT;
		img = xmap(dev_bytes);
	}
	if (opt.meta_sectors >= opt.dev_sectors)
		die("the metadata area (%" PRIu64 " sectors) leaves no origin in %" PRIu64
		    " sectors", opt.meta_sectors, opt.dev_sectors);
	meta_bytes = opt.meta_sectors * SECT;
	meta_blocks = (meta_bytes + MBLK - 1) / MBLK;
	origin_sectors = opt.dev_sectors - opt.meta_sectors;
	nr_regions = (origin_sectors + opt.region_sectors - 1) / opt.region_sectors;
	nr_words = (nr_regions + 63) / 64;

	durable = xmap(meta_bytes);
	memcpy(durable, img, meta_bytes);
	pend = xcalloc(meta_blocks, 1);
	pend_list = xcalloc(meta_blocks, sizeof(uint64_t));
	fdirty = xcalloc(meta_blocks, 1);
	fdirty_list = xcalloc(meta_blocks, sizeof(uint64_t));
	for (uint64_t b = 0; b < meta_blocks; b++)
		durable_touch(b);

	base = xcalloc(nr_regions, sizeof(*base));
	differs = xcalloc(nr_words, 8);
	discarded = xcalloc(nr_words, 8);
	covered = xcalloc(nr_words, 8);
	last_writer = xcalloc(nr_regions, sizeof(uint64_t));
}

static int open_meta_file(void)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	static char path[4096];
	int fd;

	if (!opt.meta_file) {
		snprintf(path, sizeof(path), "%s/lw-replay-meta.XXXXXX", dir);
		fd = mkstemp(path);
		if (fd < 0)
			die("%s: %s", path, strerror(errno));
		opt.meta_file = path;
		own_meta_file = true;
	} else {
		fd = open(opt.meta_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			die("%s: %s", opt.meta_file, strerror(errno));
	}
	if (ftruncate(fd, (off_t)meta_bytes))
		die("%s: %s", opt.meta_file, strerror(errno));
	snprintf(tmp_out, sizeof(tmp_out), "%s.out", opt.meta_file);
	snprintf(tmp_err, sizeof(tmp_err), "%s.err", opt.meta_file);
	return fd;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	uint64_t pos;
	char eb[400];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	parse_args(argc, argv);
	open_log();
	setup();
	meta_fd = open_meta_file();
	if (!opt.mark) {
		baselined = true;
		baseline_entry = 0;
	}

	for (;;) {
		struct lwlog_entry e;
		uint64_t end, i;
		char err[256];
		int got = lwlog_next(&lw, &e, err, sizeof(err));

		if (got < 0)
			die("%s: %s", opt.log, err);
		if (!got)
			break;
		i = e.idx;
		pos = e.data_off;
		if (e.flags & LW_MARK) {
			st.marks++;
			if (!baselined && !strcmp(e.label, opt.mark)) {
				baselined = true;
				baseline_entry = i;
				if (opt.verbose)
					fprintf(stderr, "baseline: %s\n", entry_str(&e, eb, sizeof(eb)));
			}
			continue;
		}
		end = e.sector + e.nr;
		if (e.nr && end > opt.dev_sectors)
			die("%s: beyond the device's %" PRIu64 " sectors", entry_str(&e, eb, sizeof(eb)),
			    opt.dev_sectors);
		if (e.nr && e.sector < opt.meta_sectors && end > opt.meta_sectors)
			die("%s: spans the metadata and origin areas", entry_str(&e, eb, sizeof(eb)));

		if (e.flags & LW_FLUSH) {
			/* A flush: the crash point is just before it completes. */
			check_point("before ", &e);
			st.flushes++;
			meta_flush();
		}
		if (!e.nr) {
			if (!(e.flags & LW_FLUSH) && opt.verbose)
				fprintf(stderr, "ignoring %s\n", entry_str(&e, eb, sizeof(eb)));
			continue;
		}
		if (e.flags & LW_DISCARD) {
			uint64_t r0, r1;

			st.discards++;
			if (e.sector < opt.meta_sectors)
				die("%s: a discard in the metadata area is not modelled",
				    entry_str(&e, eb, sizeof(eb)));
			/* Content after a discard is unknown: count it changed. */
			r0 = (e.sector - opt.meta_sectors) / opt.region_sectors;
			r1 = (end - 1 - opt.meta_sectors) / opt.region_sectors;
			if (baselined) {
				save_baseline(r0, r1);
				for (uint64_t r = r0; r <= r1; r++)
					bit_set(discarded, r);
				update_differs(&e, r0, r1);
			}
			continue;
		}
		st.writes++;
		st.bytes += e.nr * SECT;
		if (e.sector < opt.meta_sectors) {
			if (!(e.flags & LW_FLUSH))
				check_point("before ", &e);
			if (opt.torn)
				check_torn(&e, pos);
			st.meta_writes++;
			if (e.flags & LW_FUA)
				st.fua_meta++;
			xpread(log_fd, img + e.sector * SECT, e.nr * SECT, pos, opt.log);
			meta_write(&e);
		} else {
			uint64_t r0 = (e.sector - opt.meta_sectors) / opt.region_sectors;
			uint64_t r1 = (end - 1 - opt.meta_sectors) / opt.region_sectors;

			st.data_writes++;
			if (e.flags & LW_FUA)
				st.fua_data++;
			if (baselined)
				save_baseline(r0, r1);
			xpread(log_fd, img + e.sector * SECT, e.nr * SECT, pos, opt.log);
			if (baselined)
				update_differs(&e, r0, r1);
		}
	}
	if (!baselined)
		die("%s: no mark '%s' in %" PRIu64 " entries", opt.log, opt.mark, lw.nr_entries);
	check_point("end of log", NULL);

	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_summary(stdout);
	if (st.violations || st.torn_violations) {
		printf("violations at %" PRIu64 " of %" PRIu64 " crash points (%" PRIu64
		       " with changed data)", st.violations, st.points, st.points_changed);
		if (opt.torn)
			printf(" and at %" PRIu64 " of %" PRIu64 " torn-write states",
			       st.torn_violations, st.torn_points);
		printf("\n");
		printf("crash points checked: %" PRIu64 " (FAILED)\n", st.points);
		return 1;
	}
	printf("crash points checked: %" PRIu64 " (passed, %.1f s)\n", st.points,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	close(meta_fd);
	if (own_meta_file)
		unlink(opt.meta_file);
	unlink(tmp_out);
	unlink(tmp_err);
	return 0;
}
