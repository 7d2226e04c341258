// SPDX-License-Identifier: GPL-2.0
/*
 * order-check: prove dm-chj's write-ahead rule from a block trace.
 *
 * Input: the text of /sys/kernel/tracing/trace recorded with the counter
 * trace clock (every event gets a global sequence number, so the file is a
 * total order across CPUs) and the events block_bio_queue,
 * block_bio_complete, block_rq_issue, block_rq_complete, plus markers
 * written to trace_marker by the test ("chj-order: checkpoint begin" ...).
 *
 * The rule, per epoch and region: the first write issued to the origin for
 * a region must be queued only after a write of a metadata block that marks
 * the region was queued (after the region's first incoming write in the
 * epoch) and became durable.  Durable means: completed on a device without a
 * volatile write cache; or completed with FUA; or completed before a flush
 * that was issued after it and completed.  On a blk-mq device the bio's own
 * completion is not traced, so there the request events tell: a data
 * request that covers the write completed, then a flush request was issued
 * and completed (QEMU's virtio disks emulate FUA that way: data, then a
 * post-flush).  Also checked: no origin write is in flight when the
 * superblock that ends an epoch is queued, and none is queued until it is
 * durable (a write straddling the switch could be lost from both epochs).
 *
 * Which metadata blocks mark a region comes from the format (marks_of()):
 * format 1 has one bitmap block per CHJ_REGIONS_PER_BLOCK regions; format 2
 * adds the superblock blocks, whose intent map marks the region's chunk.
 *
 * With --log (the VM tests' way), the superblock writes' contents come
 * from a dm-log-writes log of the metadata device (sb_match() says how a
 * logged write is matched to the trace's), and format 2's rules are read
 * from them: a first write may pass on its chunk only if every superblock
 * a crash could leave in force marks the chunk -- the last durable one,
 * written in this epoch (the checkpoint's own, which may carry the chunk),
 * and every later one not yet durable (sb_marks_now()); and a superblock
 * write that unmarks a chunk, against the one before it, retires it, so
 * every region written under the chunk in the epoch needs its exact bit
 * durable when it lands (retire_check_content()).  The bitmap blocks'
 * contents are not read: a write of one queued after a region's incoming
 * write counts as holding its bit.
 *
 * Without --log the checker sees no contents, so any durable superblock
 * write queued after the chunk's first incoming write in the epoch counts
 * as the mark (a chunk is marked once and covers its later writes), and a
 * carried mark is refused.  After a flushed
 * superblock write that may have retired it, a chunk needs a new mark for
 * its next write when no write came to it over the last two such writes
 * (dm-chj retires chunks idle for a whole clean pass; a chunk retired while
 * busier than that is not checked for its new mark).  Format 2 retires chunk
 * marks: a superblock written with PREFLUSH outside a checkpoint may clear
 * any chunk, so at each one, every region covered in the epoch whose
 * origin write was queued before the retire pass began (the first bitmap
 * write since the previous superblock write, else the superblock write
 * itself) must have had a bitmap block write of its block queued after its
 * incoming write and completed before (the PREFLUSH makes it durable).
 * The layout is read from the metadata device's superblock with libchj.
 *
 * Exit: 0 no violation, 1 violations or a trace that cannot be trusted
 * (out of order, lost events, no epoch to check), 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "chj_format.h"
#include "libchj.h"
#include "lwlog.h"

#define NONE UINT64_MAX

enum kind { EV_QUEUE, EV_BIO_DONE, EV_RQ_ISSUE, EV_RQ_DONE, EV_MARK };
enum op { OP_READ, OP_WRITE, OP_DISCARD, OP_FLUSH, OP_OTHER };

struct ev {
	uint64_t ts;
	uint64_t sector;
	int cpu;
	uint32_t dev;
	uint32_t nr;
	uint8_t kind, op;
	bool preflush, fua, meta;
	int err;
	char mark[48];		/* EV_MARK: the text after "chj-order: " */
};

/*
 * With --log: one superblock write as dm-log-writes logged it, its intent
 * map (nr_chunks bits) and seq, matched to the trace's write by its rank
 * among the writes to its slot.
 */
struct sb_content {
	uint64_t seq, epoch;
	bool fua, flush;	/* FUA; a flush logged since the previous one */
	uint8_t *bits;
};

/* A bio being followed until it is durable (metadata) or done (origin). */
struct tracked {
	uint64_t qts, sector, done_ts, durable_ts;
	uint32_t nr, done_sectors;
	uint8_t op;
	bool preflush, fua, is_sb, failed;
	const struct sb_content *sbc;	/* with --log: what a superblock write wrote */
	size_t next;		/* index of the next live one, for removal */
};

struct dev_model {
	uint32_t dev;
	bool write_through;
	bool rq_based;		/* completions come as request events */
	struct tracked *t;	/* outstanding (not yet done) bios */
	size_t n, cap;
	/* completed, not yet durable (write-back devices) */
	struct tracked *w;
	size_t wn, wcap;
	/* flushes issued, not yet completed: issue times, FIFO */
	uint64_t *fl;
	size_t fn, fcap;
};

static struct {
	uint32_t chj, meta, origin, version;
	uint64_t region_sectors, nr_regions, bitmap_start, bitmap_blocks;
	uint32_t mark_ahead;
	bool fake_no_marks;
	const char *log, *log_mark;
	uint64_t log_meta_sector;
	unsigned max_report;
} cfg = { .max_report = 20 };

static struct ev *evs;
static size_t nevs, evcap;

/* Per region, current epoch: earliest incoming write queued after it began. */
static uint64_t *ifirst;
static uint32_t *checked_epoch;
/* Per region: the epoch in which a write passed (its mark covers the rest). */
static uint32_t *ok_epoch;
/* Per metadata block: latest queue time of a durable write; pre-marked. */
static uint64_t *maxq, *premark;
/* Per metadata block: latest queue time of a completed write. */
static uint64_t *doneq;
static uint64_t meta_blocks;
/*
 * Format 2: regions covered in the current epoch, with the queue time of
 * their first origin write and of their first incoming write.
 */
struct covered {
	uint64_t r, ots, req;
};
static struct covered *cov;
static size_t ncov, covcap;
static uint64_t pass_start = NONE;	/* first bitmap write since the last sb write */
/* Format 2, per chunk: the write its mark must follow; the last write to it. */
static uint64_t *need, *last_in, *need_epoch, nr_chunks;
static uint32_t chunk_shift;
static uint64_t retire_prev[2];	/* the last two potential retires' queue times */

static struct stats {
	uint64_t origin_writes, first_writes, unchecked, meta_writes, durable,
		 flushes, epochs, violations, first_violations, drain_violations,
		 switch_violations, retire_checks, retire_violations;
} st;

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("order-check: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return p;
	*cap = need < 64 ? 64 : need * 2;
	p = realloc(p, *cap * size);
	if (!p)
		die("out of memory");
	return p;
}

/* ---------------------------------------------------------------- parse -- */

static int parse_dev(const char *s, uint32_t *dev)
{
	unsigned maj, min;
	char end;

	if (sscanf(s, "%u,%u%c", &maj, &min, &end) != 2 &&
	    sscanf(s, "%u:%u%c", &maj, &min, &end) != 2)
		return -1;
	if (maj > 4095 || min > 0xfffff)
		return -1;
	*dev = maj << 20 | min;
	return 0;
}

/* blk_fill_rwbs(): [F]{W,R,D,DE,F,N}[F][A][S][M] */
static void parse_rwbs(const char *s, struct ev *e)
{
	size_t i = 0;

	e->preflush = s[0] == 'F' && s[1] && strchr("WRDFN", s[1]);
	if (e->preflush)
		i++;
	switch (s[i]) {
	case 'W': e->op = OP_WRITE; break;
	case 'R': e->op = OP_READ; break;
	case 'D': e->op = OP_DISCARD; if (s[i + 1] == 'E') i++; break;
	case 'F': e->op = OP_FLUSH; break;
	default: e->op = OP_OTHER; break;
	}
	if (s[i])
		i++;
	e->fua = s[i] == 'F';
	e->meta = strchr(s + i, 'M') != NULL;
}

static bool data_op(const struct ev *e)
{
	/* Writes, discards, and the rest (write zeroes) that carry sectors. */
	return e->op != OP_READ && e->op != OP_FLUSH && e->nr;
}

/*
 * One line of the trace: "TASK-PID [CPU] FLAGS TS: EVENT: PAYLOAD".
 * Returns 0 for an event kept, 1 for a line to skip.
 */
static int parse_line(char *line, struct ev *e)
{
	char *p, *ev, *pl, rwbs[16], devs[32];
	unsigned long long sector;
	unsigned nr;
	int err;

	if (line[0] == '#')
		return 1;
	if (strstr(line, "LOST") && strstr(line, "EVENTS"))
		die("the trace lost events: %s (a larger buffer_size_kb)", line);
	p = strstr(line, "] ");
	if (!p)
		return 1;
	memset(e, 0, sizeof(*e));
	{
		char *b = p;

		while (b > line && b[-1] != '[')
			b--;
		e->cpu = atoi(b);
	}
	/* skip the flags column, then TS: */
	p = strchr(p + 2, ' ');
	if (!p)
		return 1;
	while (*p == ' ')
		p++;
	e->ts = strtoull(p, &ev, 10);
	if (ev == p || *ev != ':')
		return 1;
	ev += 2;
	pl = strstr(ev, ": ");
	if (!pl)
		return 1;
	*pl = 0;
	pl += 2;
	if (!strcmp(ev, "tracing_mark_write")) {
		const char *tag = "chj-order: ";

		if (strncmp(pl, tag, strlen(tag)))
			return 1;
		e->kind = EV_MARK;
		snprintf(e->mark, sizeof(e->mark), "%s", pl + strlen(tag));
		e->mark[strcspn(e->mark, "\n")] = 0;
		return 0;
	}
	if (!strcmp(ev, "block_bio_queue") || !strcmp(ev, "block_bio_complete")) {
		if (sscanf(pl, "%31s %15s %llu + %u", devs, rwbs, &sector, &nr) != 4)
			die("cannot parse: %s: %s", ev, pl);
		e->kind = ev[10] == 'q' ? EV_QUEUE : EV_BIO_DONE;
		if (e->kind == EV_BIO_DONE && sscanf(strrchr(pl, '['), "[%d]", &err) == 1)
			e->err = err;
	} else if (!strcmp(ev, "block_rq_issue") || !strcmp(ev, "block_rq_complete")) {
		/* issue: DEV RWBS BYTES (CMD) SECTOR + NR; complete: DEV RWBS (CMD) SECTOR + NR [ERR] */
		char *q = strstr(pl, ") ");

		if (sscanf(pl, "%31s %15s", devs, rwbs) != 2 || !q ||
		    sscanf(q + 2, "%llu + %u", &sector, &nr) != 2)
			die("cannot parse: %s: %s", ev, pl);
		e->kind = ev[9] == 'i' ? EV_RQ_ISSUE : EV_RQ_DONE;
		if (e->kind == EV_RQ_DONE && sscanf(strrchr(pl, '['), "[%d]", &err) == 1)
			e->err = err;
	} else {
		return 1;
	}
	if (parse_dev(devs, &e->dev))
		die("bad device in: %s", pl);
	e->sector = sector;
	e->nr = nr;
	parse_rwbs(rwbs, e);
	return 0;
}

static bool is_done(const struct ev *e)
{
	return e->kind == EV_BIO_DONE || e->kind == EV_RQ_DONE;
}

static uint64_t ties;

/*
 * An event that interrupts another one's recording on the same CPU gets
 * the same timestamp (the ring buffer's zero delta), so their real order
 * is unknown.  Take the pessimistic one: completions after the rest, so a
 * tie never makes a write durable before what it is compared with.
 */
static void order_ties(size_t from, size_t to)
{
	struct ev tmp[16];
	size_t n = 0, i;

	if (to - from > 16)
		die("more than 16 events share timestamp %" PRIu64, evs[from].ts);
	ties++;
	for (i = from; i < to; i++)
		if (!is_done(&evs[i]))
			tmp[n++] = evs[i];
	for (i = from; i < to; i++)
		if (is_done(&evs[i]))
			tmp[n++] = evs[i];
	memcpy(evs + from, tmp, n * sizeof(*tmp));
}

static void read_trace(FILE *f)
{
	char *line = NULL;
	size_t cap = 0, run = 0;

	while (getline(&line, &cap, f) > 0) {
		struct ev e;

		if (parse_line(line, &e))
			continue;
		if (nevs && e.ts < evs[nevs - 1].ts)
			die("the trace is not in one total order (timestamp %" PRIu64
			    " after %" PRIu64 "): record it with the counter clock",
			    e.ts, evs[nevs - 1].ts);
		if (nevs && e.ts == evs[nevs - 1].ts && e.cpu != evs[nevs - 1].cpu)
			die("CPUs %d and %d share timestamp %" PRIu64 ": not the counter clock",
			    e.cpu, evs[nevs - 1].cpu, e.ts);
		if (nevs && e.ts != evs[nevs - 1].ts) {
			if (nevs - run > 1)
				order_ties(run, nevs);
			run = nevs;
		}
		evs = grow(evs, &evcap, nevs + 1, sizeof(*evs));
		evs[nevs++] = e;
	}
	if (nevs - run > 1)
		order_ties(run, nevs);
	free(line);
}

/* ------------------------------------------------------------ the format -- */

/*
 * Metadata blocks whose durable write marks region r, into out[]; returns
 * how many.  Format 1: the bitmap block holding r's bit.  A later format
 * adds its own (an intent block covering r's chunk) here.
 */
static unsigned marks_of(uint64_t r, uint64_t out[3])
{
	out[0] = cfg.bitmap_start + r / CHJ_REGIONS_PER_BLOCK;
	if (cfg.version < 2)
		return 1;
	out[1] = 0;
	out[2] = 1;
	return 3;
}

static bool is_bitmap_block(uint64_t b)
{
	return b >= cfg.bitmap_start && b < cfg.bitmap_start + cfg.bitmap_blocks;
}

static bool is_sb_write(const struct ev *e)
{
	return e->op == OP_WRITE && e->nr && e->sector < CHJ_SB_COPIES * CHJ_BLOCK_SECTORS;
}

/* ------------------------------------------- superblock contents (--log) -- */

/*
 * With --log, a dm-log-writes log of the metadata device recorded with the
 * trace: the superblock writes are FUA and serial (dm-chj's one metadata
 * writer, each waited for), so dm-log-writes logs them in the order they
 * were queued, and the n-th write to a superblock block in the trace is the
 * n-th one in the log since the mark the test wrote when the trace began.
 * Each match is checked: the same FUA flag, a flush logged since the
 * previous superblock write if this one has PREFLUSH (dm sends a PREFLUSH
 * with data to its target as an empty flush, then the data), and seq one
 * above the previous superblock write's.
 */
static struct sb_content *sbs[CHJ_SB_COPIES];	/* per block, in log order */
static size_t nsbs[CHJ_SB_COPIES], sbcap[CHJ_SB_COPIES];
static size_t sb_rank[CHJ_SB_COPIES];		/* matched so far per block */
static size_t intent_bytes;
static struct sb_content sb_start;		/* the last one before the mark */
static const struct sb_content *sb_prev;	/* the last one queued */
static const struct sb_content *sb_durable;	/* the last one durable */
static uint64_t sb_durable_qts;
static uint64_t sbs_matched;

static void sb_decode(struct sb_content *c, const uint8_t *blk, unsigned slot,
		      uint64_t flags, size_t n)
{
	const char *why;
	struct chj_sb sb;

	if (chj_sb_classify(blk, slot, meta_blocks, &why) != CHJ_SB_VALID)
		die("%s: superblock write %zu to block %u: %s", cfg.log, n, slot, why);
	chj_sb_decode((const void *)blk, &sb);
	if (sb.version < 2 || sb.chunk_shift != chunk_shift || sb.nr_regions != cfg.nr_regions)
		die("%s: superblock write %zu to block %u has another geometry or format"
		    " (a resize or format change is not modelled)", cfg.log, n, slot);
	c->seq = sb.seq;
	c->epoch = sb.current_epoch;
	c->fua = flags & LW_FUA;
	c->flush = flags & LW_FLUSH;
	c->bits = malloc(intent_bytes ? intent_bytes : 1);
	if (!c->bits)
		die("out of memory");
	memcpy(c->bits, sb.intent, intent_bytes);
}

static void load_log(void)
{
	uint64_t lo = cfg.log_meta_sector, hi = lo + CHJ_SB_COPIES * CHJ_BLOCK_SECTORS;
	static uint8_t blk[CHJ_BLOCK_SIZE];
	bool on = false, before = false, flushed = false;
	struct lwlog_entry e;
	struct lwlog l;
	char err[256];
	off_t size;
	int fd, r;

	intent_bytes = (nr_chunks + 7) / 8;
	fd = open(cfg.log, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (size = lseek(fd, 0, SEEK_END)) < 0)
		die("%s: %s", cfg.log, strerror(errno));
	if (lwlog_open(&l, lwlog_read_fd, &fd, (uint64_t)size, err, sizeof(err)))
		die("%s: %s", cfg.log, err);
	while ((r = lwlog_next(&l, &e, err, sizeof(err))) == 1) {
		unsigned slot;

		if (e.flags & LW_MARK) {
			if (!strcmp(e.label, cfg.log_mark)) {
				if (on)
					die("%s: two marks '%s'", cfg.log, cfg.log_mark);
				on = true;
			}
			continue;
		}
		flushed |= (e.flags & LW_FLUSH) != 0;
		if (!e.nr || (e.flags & LW_DISCARD) || e.sector >= hi || e.sector + e.nr <= lo)
			continue;
		if ((e.sector - lo) % CHJ_BLOCK_SECTORS || e.nr != CHJ_BLOCK_SECTORS || e.sector < lo)
			die("%s: entry %" PRIu64 ": a write of %" PRIu64 "+%" PRIu64
			    " is not one whole superblock block", cfg.log, e.idx, e.sector, e.nr);
		slot = (unsigned)((e.sector - lo) / CHJ_BLOCK_SECTORS);
		if (lwlog_read_fd(&fd, blk, sizeof(blk), e.data_off))
			die("%s: %s", cfg.log, strerror(errno));
		if (!on) {
			free(sb_start.bits);
			sb_decode(&sb_start, blk, slot, e.flags, 0);
			before = true;
		} else {
			sbs[slot] = grow(sbs[slot], &sbcap[slot], nsbs[slot] + 1, sizeof(**sbs));
			sb_decode(&sbs[slot][nsbs[slot]], blk, slot, e.flags, nsbs[slot]);
			sbs[slot][nsbs[slot]++].flush = flushed;
		}
		flushed = false;
	}
	if (r < 0)
		die("%s: %s", cfg.log, err);
	if (!on)
		die("%s: no mark '%s' (written when the trace began)", cfg.log, cfg.log_mark);
	lwlog_close(&l);
	close(fd);
	/* The superblock in force when the trace began, if the log saw it. */
	if (before) {
		sb_prev = &sb_start;
		sb_durable = &sb_start;
	}
}

/* The logged contents of superblock write e, checked to belong to it. */
static const struct sb_content *sb_match(const struct ev *e)
{
	const struct sb_content *c;
	unsigned slot;

	if (e->nr != CHJ_BLOCK_SECTORS || e->sector % CHJ_BLOCK_SECTORS)
		die("superblock write %" PRIu64 "+%u queued at #%" PRIu64 ": not one whole block",
		    e->sector, e->nr, e->ts);
	slot = (unsigned)(e->sector / CHJ_BLOCK_SECTORS);
	if (sb_rank[slot] >= nsbs[slot])
		die("superblock write queued at #%" PRIu64 ": the log has only %zu to block %u"
		    " (not the same run, or the log began late)", e->ts, nsbs[slot], slot);
	c = &sbs[slot][sb_rank[slot]++];
	if (c->fua != e->fua || (e->preflush && !c->flush))
		die("superblock write queued at #%" PRIu64 " (%s%s) and the log's write %zu to"
		    " block %u (%s%s) differ: the trace and the log are not aligned", e->ts,
		    e->preflush ? "PREFLUSH " : "", e->fua ? "FUA" : "", sb_rank[slot] - 1, slot,
		    c->flush ? "PREFLUSH " : "", c->fua ? "FUA" : "");
	if (sb_prev && c->seq != sb_prev->seq + 1)
		die("superblock write queued at #%" PRIu64 " wrote seq %" PRIu64 " after %" PRIu64
		    ": the trace and the log are not aligned, or the writes were not serial",
		    e->ts, c->seq, sb_prev->seq);
	sbs_matched++;
	return c;
}

static bool sb_marks(const struct sb_content *c, uint64_t chunk)
{
	return chj_intent_test(c->bits, chunk);
}

/* ------------------------------------------------------ device modelling -- */

static struct dev_model meta_dm, origin_dm;

static struct tracked *track(struct dev_model *d, const struct ev *e)
{
	struct tracked *t;

	d->t = grow(d->t, &d->cap, d->n + 1, sizeof(*d->t));
	t = &d->t[d->n++];
	memset(t, 0, sizeof(*t));
	t->qts = e->ts;
	t->sector = e->sector;
	t->nr = e->nr;
	t->op = e->op;
	t->preflush = e->preflush;
	t->fua = e->fua;
	t->is_sb = d == &meta_dm && is_sb_write(e);
	return t;
}

static void durable(struct dev_model *d, struct tracked *t, uint64_t ts);

/* t's data reached the device at ts (or failed). */
static void data_done(struct dev_model *d, struct tracked *t, uint64_t ts, bool fua)
{
	t->done_ts = ts;
	if (t->failed)
		return;
	if (d == &meta_dm && t->op == OP_WRITE && !cfg.fake_no_marks) {
		uint64_t b = t->sector / CHJ_BLOCK_SECTORS;

		for (; b <= (t->sector + t->nr - 1) / CHJ_BLOCK_SECTORS && b < meta_blocks; b++)
			if (t->qts > doneq[b])
				doneq[b] = t->qts;
	}
	if (d->write_through || fua) {
		durable(d, t, ts);
		return;
	}
	d->w = grow(d->w, &d->wcap, d->wn + 1, sizeof(*d->w));
	d->w[d->wn++] = *t;
}

/* A flush issued at issue_ts completed at ts: what completed before it is durable. */
static void flush_done(struct dev_model *d, uint64_t issue_ts, uint64_t ts)
{
	size_t i = 0;

	st.flushes += d == &meta_dm;
	while (i < d->wn) {
		if (d->w[i].done_ts < issue_ts) {
			durable(d, &d->w[i], ts);
			d->w[i] = d->w[--d->wn];
		} else {
			i++;
		}
	}
}

static void untrack(struct dev_model *d, size_t i)
{
	d->t[i] = d->t[--d->n];
}

/*
 * A bio-level completion: the bio with the same range, else one whose end
 * matches (the iterator advanced), else the oldest overlapping one; for an
 * empty flush, the oldest empty flush (the conservative choice).
 */
static void bio_done(struct dev_model *d, const struct ev *e)
{
	size_t i, best = SIZE_MAX;
	int rank = 4;

	for (i = 0; i < d->n; i++) {
		struct tracked *t = &d->t[i];
		int r;

		if (!e->nr && !t->nr)
			r = 2;
		else if (t->sector == e->sector && t->nr == e->nr)
			r = 0;
		else if (t->nr && t->sector + t->nr == e->sector + e->nr)
			r = 1;
		else if (e->nr && t->sector < e->sector + e->nr && e->sector < t->sector + t->nr)
			r = 3;
		else
			continue;
		if (r < rank || (r == rank && t->qts < d->t[best].qts)) {
			rank = r;
			best = i;
		}
	}
	if (best == SIZE_MAX)
		return;		/* queued before the trace began */
	{
		struct tracked t = d->t[best];

		untrack(d, best);
		t.failed = e->err != 0;
		if (t.nr)
			data_done(d, &t, e->ts, t.fua);
		else
			t.done_ts = e->ts;
		/* A preflush bio's completion flushed what completed before it was queued. */
		if (t.preflush && !t.failed)
			flush_done(d, t.qts, e->ts);
	}
}

/* Request level: a data request covering [sector, +nr) completed. */
static void rq_done(struct dev_model *d, const struct ev *e)
{
	size_t i = 0;

	if (e->op == OP_FLUSH || (!e->nr && e->preflush)) {
		if (!d->fn)
			return;
		/* The oldest flush in flight: the conservative guess. */
		{
			uint64_t issue = d->fl[0];

			memmove(d->fl, d->fl + 1, --d->fn * sizeof(*d->fl));
			if (!e->err)
				flush_done(d, issue, e->ts);
		}
		return;
	}
	if (!e->nr)
		return;		/* the end of a flush sequence: already counted */
	while (i < d->n) {
		struct tracked *t = &d->t[i];
		uint64_t lo, hi;

		if (!t->nr || t->sector >= e->sector + e->nr || e->sector >= t->sector + t->nr) {
			i++;
			continue;
		}
		lo = t->sector > e->sector ? t->sector : e->sector;
		hi = t->sector + t->nr < e->sector + e->nr ? t->sector + t->nr : e->sector + e->nr;
		t->done_sectors += hi - lo;
		if (e->err)
			t->failed = true;
		if (t->done_sectors >= t->nr) {
			struct tracked done = *t;

			untrack(d, i);
			data_done(d, &done, e->ts, e->fua);
			continue;
		}
		i++;
	}
}

static void rq_issue(struct dev_model *d, const struct ev *e)
{
	if (e->op != OP_FLUSH)
		return;
	d->fl = grow(d->fl, &d->fcap, d->fn + 1, sizeof(*d->fl));
	d->fl[d->fn++] = e->ts;
}

/* ------------------------------------------------------------- checking -- */

static uint64_t epoch;		/* epochs begun inside the trace; 0 before */
static uint64_t epoch_start;	/* ts the current epoch's superblock became durable */
static uint64_t switch_sb_qts = NONE;	/* the pending epoch switch's sb write */
static uint64_t epoch_sb_qts;		/* the current epoch's first sb write */
static bool switching;
static uint64_t premark_from = NONE;	/* a premark window is open since */

static void violation(const char *fmt, ...)
{
	va_list ap;

	if (++st.violations > cfg.max_report)
		return;
	fputs("violation: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Incoming writes on the chj device not yet matched to an origin write. */
static struct ev *inc;
static size_t ninc, inccap;

static void durable(struct dev_model *d, struct tracked *t, uint64_t ts)
{
	uint64_t b, first, last;

	t->durable_ts = ts;
	if (d != &meta_dm)
		return;
	st.durable++;
	if (t->is_sb && t->sbc && t->qts > sb_durable_qts && !cfg.fake_no_marks) {
		sb_durable = t->sbc;
		sb_durable_qts = t->qts;
	}
	if (t->is_sb && t->qts == switch_sb_qts) {
		/* The superblock ending the epoch is durable: a new epoch. */
		ncov = 0;
		epoch++;
		/*
		 * Writes held over the switch need their chunks marked in the new
		 * epoch: from its start, before any later write to those chunks.
		 */
		for (size_t i = 0; cfg.version >= 2 && i < ninc; i++) {
			uint64_t a = inc[i].sector / cfg.region_sectors;
			uint64_t z = (inc[i].sector + inc[i].nr - 1) / cfg.region_sectors;

			if (z >= cfg.nr_regions)
				z = cfg.nr_regions - 1;
			for (uint64_t c = a >> chunk_shift; a <= z && c <= z >> chunk_shift; c++) {
				need[c] = ts;
				need_epoch[c] = epoch;
			}
		}
		st.epochs++;
		epoch_start = ts;
		epoch_sb_qts = t->qts;
		switching = false;
		switch_sb_qts = NONE;
	}
	if (t->op != OP_WRITE || cfg.fake_no_marks)
		return;
	first = t->sector / CHJ_BLOCK_SECTORS;
	last = (t->sector + t->nr - 1) / CHJ_BLOCK_SECTORS;
	for (b = first; b <= last && b < meta_blocks; b++) {
		if (!is_bitmap_block(b) && !(cfg.version >= 2 && b < CHJ_SB_COPIES))
			continue;
		if (t->qts > maxq[b])
			maxq[b] = t->qts;
		if (premark_from != NONE && t->qts > premark_from)
			premark[b] = t->qts;
	}
}


static void incoming(const struct ev *e)
{
	uint64_t r, r0 = e->sector / cfg.region_sectors;
	uint64_t r1 = (e->sector + e->nr - 1) / cfg.region_sectors;

	for (r = r0; r <= r1 && r < cfg.nr_regions; r++)
		if (ifirst[r] == NONE || ifirst[r] <= epoch_start)
			ifirst[r] = e->ts;
	if (cfg.version >= 2 && r0 < cfg.nr_regions) {
		if (r1 >= cfg.nr_regions)
			r1 = cfg.nr_regions - 1;
		for (uint64_t c = r0 >> chunk_shift; c <= r1 >> chunk_shift; c++) {
			last_in[c] = e->ts;
			if (need[c] == NONE || need_epoch[c] != epoch) {
				need[c] = e->ts;
				need_epoch[c] = epoch;
			}
		}
	}
	inc = grow(inc, &inccap, ninc + 1, sizeof(*inc));
	inc[ninc++] = *e;
}

/* The incoming write this origin write carries out: same range, else overlapping. */
static uint64_t match_incoming(const struct ev *o)
{
	size_t i, best = SIZE_MAX;
	uint64_t ts;

	for (i = 0; i < ninc; i++) {
		if (inc[i].sector == o->sector && inc[i].nr == o->nr) {
			best = i;
			break;
		}
		if (best == SIZE_MAX && inc[i].sector < o->sector + o->nr &&
		    o->sector < inc[i].sector + inc[i].nr)
			best = i;
	}
	if (best == SIZE_MAX)
		return NONE;
	ts = inc[best].ts;
	memmove(inc + best, inc + best + 1, (--ninc - best) * sizeof(*inc));
	return ts;
}

/*
 * With --log: every superblock a crash now could leave in force marks
 * chunk c in this epoch: the last durable one (written in this epoch), and
 * each written after it that has not failed, in flight or not yet durable.
 */
static bool sb_marks_now(uint64_t c)
{
	size_t i;

	if (!sb_durable || sb_durable_qts < epoch_sb_qts || !sb_marks(sb_durable, c))
		return false;
	for (i = 0; i < meta_dm.n; i++)
		if (meta_dm.t[i].is_sb && meta_dm.t[i].qts > sb_durable_qts &&
		    !sb_marks(meta_dm.t[i].sbc, c))
			return false;
	for (i = 0; i < meta_dm.wn; i++)
		if (meta_dm.w[i].is_sb && meta_dm.w[i].qts > sb_durable_qts &&
		    !sb_marks(meta_dm.w[i].sbc, c))
			return false;
	return true;
}

static void origin_write(const struct ev *e)
{
	uint64_t r, r0 = e->sector / cfg.region_sectors;
	uint64_t r1 = (e->sector + e->nr - 1) / cfg.region_sectors;
	uint64_t its = match_incoming(e);

	st.origin_writes++;
	if (switching) {
		st.switch_violations++;
		violation("origin write %" PRIu64 "+%u queued at #%" PRIu64
			  " while the superblock ending epoch %" PRIu64 " (queued at #%" PRIu64
			  ") is not durable", e->sector, e->nr, e->ts, epoch, switch_sb_qts);
	}
	if (!epoch) {
		st.unchecked++;
		return;
	}
	if (r1 >= cfg.nr_regions)
		die("origin write %" PRIu64 "+%u past the %" PRIu64 " regions of the format",
		    e->sector, e->nr, cfg.nr_regions);
	for (r = r0; r <= r1; r++) {
		uint64_t blk[3], req = NONE, lo;
		unsigned i, n = marks_of(r, blk);
		bool ok = false;

		/* A durable mark of this epoch covers every later write to r in it. */
		if (ok_epoch[r] == epoch)
			continue;
		/* Earliest incoming write in this epoch to r (or mark_ahead before it). */
		lo = r > cfg.mark_ahead ? r - cfg.mark_ahead : 0;
		for (uint64_t q = lo; q <= r; q++)
			if (ifirst[q] != NONE && ifirst[q] > epoch_start && ifirst[q] < req)
				req = ifirst[q];
		if (its != NONE && its < req)
			req = its;
		if (req == NONE || req < epoch_start)
			req = epoch_start;
		for (i = 0; i < n; i++) {
			/* A chunk mark follows the chunk's first need, not r's. */
			uint64_t after = req;

			/* With the contents: the superblocks that may be in force. */
			if (i > 0 && cfg.log) {
				ok |= i == 1 && sb_marks_now(r >> chunk_shift);
				continue;
			}

			if (i > 0) {
				uint64_t c = r >> chunk_shift;

				if (need[c] != NONE && need_epoch[c] == epoch && need[c] < after)
					after = need[c] < epoch_start ? epoch_start : need[c];
			}
			if ((blk[i] < meta_blocks && maxq[blk[i]] > after) ||
			    (blk[i] < meta_blocks && premark[blk[i]] > epoch_start))
				ok = true;
		}
		if (checked_epoch[r] != epoch) {
			checked_epoch[r] = (uint32_t)epoch;
			st.first_writes++;
			st.first_violations += !ok;
		}
		if (ok) {
			ok_epoch[r] = (uint32_t)epoch;
			cov = grow(cov, &covcap, ncov + 1, sizeof(*cov));
			cov[ncov++] = (struct covered){ r, e->ts, req };
		} else if (cfg.log)
			violation("origin write %" PRIu64 "+%u queued at #%" PRIu64
				  " (region %" PRIu64 ", epoch %" PRIu64 "): no durable write of"
				  " bitmap block %" PRIu64 " queued after #%" PRIu64 ", and a"
				  " superblock that may be in force (seq %" PRIu64 " durable) does"
				  " not mark chunk %" PRIu64, e->sector, e->nr, e->ts, r, epoch,
				  blk[0], req, sb_durable ? sb_durable->seq : 0, r >> chunk_shift);
		else
			violation("origin write %" PRIu64 "+%u queued at #%" PRIu64
				  " (region %" PRIu64 ", epoch %" PRIu64 "): no durable write of"
				  " metadata block %" PRIu64 " queued after #%" PRIu64,
				  e->sector, e->nr, e->ts, r, epoch, blk[0], req);
	}
}

/*
 * Format 2: a superblock commit that depends on earlier writes goes out with
 * PREFLUSH and REQ_META (the block layer drops PREFLUSH on a device without
 * a volatile cache, REQ_META it keeps); a chunk mark has neither.
 */
static bool flushed_sb(const struct ev *e)
{
	return e->preflush || e->meta;
}

/*
 * Format 2, a superblock write S queued at ts that may retire chunk marks:
 * every region covered before the pass began needs a completed write of
 * its bitmap block queued after its incoming write.
 */
static void retire_check(uint64_t ts)
{
	uint64_t from = pass_start == NONE ? ts : pass_start;

	st.retire_checks++;
	/* Chunks idle since two retires ago may be unmarked now. */
	for (uint64_t c = 0; c < nr_chunks; c++)
		if (last_in[c] == NONE || last_in[c] <= retire_prev[0])
			need[c] = NONE;	/* the next write needs a new mark */
	retire_prev[0] = retire_prev[1];
	retire_prev[1] = ts;
	for (size_t i = 0; i < ncov; i++) {
		uint64_t b = cfg.bitmap_start + cov[i].r / CHJ_REGIONS_PER_BLOCK;

		if (cov[i].ots >= from || (b < meta_blocks && doneq[b] > cov[i].req))
			continue;
		st.retire_violations++;
		violation("superblock write queued at #%" PRIu64 " may retire the chunk of region %"
			  PRIu64 " (origin write queued at #%" PRIu64 "), whose bitmap block %"
			  PRIu64 " has no completed write queued after #%" PRIu64,
			  ts, cov[i].r, cov[i].ots, b, cov[i].req);
	}
}

/*
 * With --log, superblock write e (contents now) queued: the chunks it
 * unmarks, against the superblock written before it, are retired when it
 * lands, so every region covered in the epoch in those chunks needs its
 * exact bit durable by then: a write of its bitmap block queued after its
 * incoming write, durable already, or completed before e's PREFLUSH.  The
 * superblock that ends an epoch is not a retire (the drain rule covers it).
 */
static void retire_check_content(const struct ev *e, const struct sb_content *now,
				 bool is_switch)
{
	const struct sb_content *prev = sb_prev;
	bool cleared = false;

	sb_prev = now;
	if (is_switch || !prev || !epoch)
		return;
	for (size_t k = 0; k < intent_bytes; k++)
		cleared |= (prev->bits[k] & ~now->bits[k]) != 0;
	if (!cleared)
		return;
	st.retire_checks++;
	for (size_t i = 0; i < ncov; i++) {
		uint64_t b = cfg.bitmap_start + cov[i].r / CHJ_REGIONS_PER_BLOCK;
		uint64_t c = cov[i].r >> chunk_shift;

		if (!sb_marks(prev, c) || sb_marks(now, c))
			continue;
		if (b < meta_blocks && (maxq[b] > cov[i].req || (flushed_sb(e) && doneq[b] > cov[i].req)))
			continue;
		st.retire_violations++;
		violation("superblock write queued at #%" PRIu64 " (seq %" PRIu64 ") retires chunk %"
			  PRIu64 " of region %" PRIu64 " (origin write queued at #%" PRIu64
			  "), whose bitmap block %" PRIu64 " has no write queued after #%" PRIu64
			  " durable by then", e->ts, now->seq, c, cov[i].r, cov[i].ots, b, cov[i].req);
	}
}

/*
 * The superblock write that ends the epoch: the last flushed one in each
 * checkpoint window (it follows the journal record's writes).
 */
static void find_switches(bool *is_switch)
{
	size_t i, last = SIZE_MAX;
	bool in = false;

	size_t rank[CHJ_SB_COPIES] = { 0 };
	uint64_t prev_epoch = sb_prev ? sb_prev->epoch : 0;

	for (i = 0; i < nevs; i++) {
		struct ev *e = &evs[i];

		if (e->kind == EV_MARK && !strcmp(e->mark, "checkpoint begin")) {
			if (in)
				die("checkpoint windows overlap at #%" PRIu64, e->ts);
			in = true;
			last = SIZE_MAX;
		} else if (e->kind == EV_MARK && !strcmp(e->mark, "checkpoint end")) {
			if (!in)
				die("checkpoint end without begin at #%" PRIu64, e->ts);
			if (last == SIZE_MAX)
				die("no superblock write in the checkpoint window ending at #%" PRIu64, e->ts);
			is_switch[last] = true;
			in = false;
		} else if (cfg.log && e->kind == EV_QUEUE && e->dev == cfg.meta && is_sb_write(e)) {
			/*
			 * With contents: the superblock whose epoch is one above
			 * the last one's (a clean pass may commit a flushed one
			 * after it in the window).  sb_match() checks the rest.
			 */
			unsigned slot = (unsigned)(e->sector / CHJ_BLOCK_SECTORS) & 1;
			const struct sb_content *c;

			if (rank[slot] >= nsbs[slot])
				continue;
			c = &sbs[slot][rank[slot]++];
			if (prev_epoch && c->epoch != prev_epoch) {
				if (!in || last != SIZE_MAX || c->epoch != prev_epoch + 1)
					die("superblock write queued at #%" PRIu64 " begins epoch %" PRIu64
					    " after %" PRIu64 ", not once in a checkpoint window", e->ts,
					    c->epoch, prev_epoch);
				last = i;
			}
			prev_epoch = c->epoch;
		} else if (!cfg.log && in && e->kind == EV_QUEUE && e->dev == cfg.meta &&
			   is_sb_write(e) && (cfg.version < 2 || flushed_sb(e))) {
			/* Format 2 marks chunks with FUA alone, after the switch too. */
			last = i;
		}
	}
	if (in)
		die("a checkpoint window never ends");
}

static void check_trace(void)
{
	bool *is_switch = calloc(nevs ? nevs : 1, sizeof(bool));
	bool in_ckpt = false;
	size_t i;

	if (!is_switch)
		die("out of memory");
	find_switches(is_switch);
	for (i = 0; i < nevs; i++) {
		struct ev *e = &evs[i];

		if (e->kind == EV_MARK) {
			if (!strcmp(e->mark, "premark begin"))
				premark_from = e->ts;
			else if (!strcmp(e->mark, "premark end"))
				premark_from = NONE;
			else if (!strcmp(e->mark, "checkpoint begin"))
				in_ckpt = true;
			else if (!strcmp(e->mark, "checkpoint end"))
				in_ckpt = false;
			continue;
		}
		if (e->dev == cfg.meta) {
			if (e->kind == EV_QUEUE) {
				const struct sb_content *sbc = NULL;

				if (e->op == OP_WRITE && e->nr)
					st.meta_writes++;
				if (cfg.version >= 2 && e->op == OP_WRITE && e->nr) {
					uint64_t b = e->sector / CHJ_BLOCK_SECTORS;

					if (is_sb_write(e) && cfg.log) {
						sbc = sb_match(e);
						retire_check_content(e, sbc, is_switch[i]);
						pass_start = NONE;
					} else if (is_sb_write(e)) {
						/* Inside a checkpoint: journal room or the switch. */
						if (flushed_sb(e) && !in_ckpt && epoch)
							retire_check(e->ts);
						pass_start = NONE;
					} else if (is_bitmap_block(b) && pass_start == NONE) {
						pass_start = e->ts;
					}
				}
				if (is_switch[i]) {
					/* Nothing may be in flight to the origin now. */
					for (size_t k = 0; k < origin_dm.n; k++) {
						struct tracked *t = &origin_dm.t[k];

						if (t->op == OP_READ || t->op == OP_FLUSH || !t->nr)
							continue;
						st.drain_violations++;
						violation("origin write %" PRIu64 "+%u queued at #%" PRIu64
							  " still in flight when the epoch switch began at #%" PRIu64,
							  t->sector, t->nr, t->qts, e->ts);
					}
					switch_sb_qts = e->ts;
					switching = true;
				}
				if (e->op != OP_READ)
					track(&meta_dm, e)->sbc = sbc;
			} else if (e->kind == EV_BIO_DONE && !meta_dm.rq_based) {
				bio_done(&meta_dm, e);
			} else if (e->kind == EV_RQ_ISSUE && meta_dm.rq_based) {
				rq_issue(&meta_dm, e);
			} else if (e->kind == EV_RQ_DONE && meta_dm.rq_based) {
				rq_done(&meta_dm, e);
			}
		} else if (e->dev == cfg.origin) {
			if (e->kind == EV_QUEUE) {
				if (data_op(e)) {
					origin_write(e);
					track(&origin_dm, e);
				}
			} else if (e->kind == EV_BIO_DONE && !origin_dm.rq_based) {
				bio_done(&origin_dm, e);
			} else if (e->kind == EV_RQ_DONE && origin_dm.rq_based) {
				rq_done(&origin_dm, e);
			}
		} else if (e->dev == cfg.chj && e->kind == EV_QUEUE && data_op(e)) {
			incoming(e);
		}
	}
	free(is_switch);
}

/* ----------------------------------------------------------------- main -- */

static void usage(void)
{
	fputs("usage: order-check --chj MAJ,MIN --origin MAJ,MIN --meta MAJ,MIN --metadata PATH\n"
	      "                   [--meta-write-through] [--origin-write-through]\n"
	      "                   [--mark-ahead N] [--fake-no-marks] [--max-report N]\n"
	      "                   [--log LOG [--log-mark LABEL] [--log-meta-sector N]] [TRACE]\n"
	      "--log: a dm-log-writes log of the metadata device, from the mark LABEL\n"
	      "(default order-start) written when the trace began: the superblock\n"
	      "writes' contents tell which chunks each one marks and retires.\n"
	      "Checks dm-chj's write-ahead order in a block trace (counter clock); see the\n"
	      "comment at the top of order-check.c and docs/testing.md.\n", stderr);
	exit(2);
}

/* A device's completions are request events if the trace has any for it. */
static bool rq_based(uint32_t dev)
{
	for (size_t i = 0; i < nevs; i++)
		if (evs[i].dev == dev && evs[i].kind == EV_BIO_DONE)
			return false;
	for (size_t i = 0; i < nevs; i++)
		if (evs[i].dev == dev && evs[i].kind == EV_RQ_DONE)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *metadata = NULL, *trace = NULL;
	bool have[3] = { false };
	struct chj_meta *m;
	struct chj_error err;
	struct chj_sb sb;
	FILE *f = stdin;
	uint64_t n;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--chj") && v) {
			if (parse_dev(v, &cfg.chj)) usage();
			have[0] = true; i++;
		} else if (!strcmp(a, "--origin") && v) {
			if (parse_dev(v, &cfg.origin)) usage();
			have[1] = true; i++;
		} else if (!strcmp(a, "--meta") && v) {
			if (parse_dev(v, &cfg.meta)) usage();
			have[2] = true; i++;
		} else if (!strcmp(a, "--metadata") && v) {
			metadata = v; i++;
		} else if (!strcmp(a, "--meta-write-through")) {
			meta_dm.write_through = true;
		} else if (!strcmp(a, "--origin-write-through")) {
			origin_dm.write_through = true;
		} else if (!strcmp(a, "--mark-ahead") && v) {
			if (chj_parse_u64(v, &n) || n > UINT32_MAX) usage();
			cfg.mark_ahead = (uint32_t)n; i++;
		} else if (!strcmp(a, "--max-report") && v) {
			if (chj_parse_u64(v, &n) || n > UINT_MAX) usage();
			cfg.max_report = (unsigned)n; i++;
		} else if (!strcmp(a, "--log") && v) {
			cfg.log = v; i++;
		} else if (!strcmp(a, "--log-mark") && v) {
			cfg.log_mark = v; i++;
		} else if (!strcmp(a, "--log-meta-sector") && v) {
			if (chj_parse_u64(v, &cfg.log_meta_sector) || cfg.log_meta_sector > UINT64_MAX / 2)
				usage();
			i++;
		} else if (!strcmp(a, "--fake-no-marks")) {
			cfg.fake_no_marks = true;
		} else if (a[0] == '-' && a[1]) {
			usage();
		} else if (!trace) {
			trace = a;
		} else {
			usage();
		}
	}
	if (!have[0] || !have[1] || !have[2] || !metadata)
		usage();
	if (chj_meta_open(&m, metadata, 0, &err) || chj_sb_read(m, &sb, &err))
		die("%s", err.msg);
	chj_meta_close(m);
	cfg.region_sectors = sb.region_sectors;
	cfg.nr_regions = sb.nr_regions;
	cfg.bitmap_start = sb.bitmap_start;
	cfg.bitmap_blocks = sb.bitmap_blocks;
	cfg.version = sb.version;
	chunk_shift = sb.version >= 2 ? sb.chunk_shift : 0;
	nr_chunks = sb.version >= 2 ? chj_chunks_for(sb.nr_regions, chunk_shift) : 0;
	meta_blocks = sb.metadata_blocks;
	if (cfg.log) {
		if (sb.version < 2)
			die("--log: format %u has no intent map to read", sb.version);
		if (!cfg.log_mark)
			cfg.log_mark = "order-start";
		load_log();
	}

	if (trace && !(f = fopen(trace, "r")))
		die("%s: %s", trace, strerror(errno));
	read_trace(f);
	if (f != stdin)
		fclose(f);
	meta_dm.rq_based = rq_based(cfg.meta);
	origin_dm.rq_based = rq_based(cfg.origin);

	ifirst = malloc(cfg.nr_regions * sizeof(*ifirst));
	checked_epoch = calloc(cfg.nr_regions, sizeof(*checked_epoch));
	ok_epoch = calloc(cfg.nr_regions, sizeof(*ok_epoch));
	maxq = calloc(meta_blocks, sizeof(*maxq));
	premark = calloc(meta_blocks, sizeof(*premark));
	doneq = calloc(meta_blocks, sizeof(*doneq));
	need = malloc((nr_chunks + 1) * sizeof(*need));
	last_in = malloc((nr_chunks + 1) * sizeof(*last_in));
	need_epoch = calloc(nr_chunks + 1, sizeof(*need_epoch));
	if (!ifirst || !checked_epoch || !ok_epoch || !maxq || !premark || !doneq ||
	    !need || !last_in || !need_epoch)
		die("out of memory");
	memset(need, 0xff, (nr_chunks + 1) * sizeof(*need));
	memset(last_in, 0xff, (nr_chunks + 1) * sizeof(*last_in));
	memset(ifirst, 0xff, cfg.nr_regions * sizeof(*ifirst));
	check_trace();

	printf("order-check: %zu events; metadata %s, %s; %" PRIu64 " bitmap/metadata writes"
	       " (%" PRIu64 " durable), %" PRIu64 " flushes; %" PRIu64 " timestamp ties\n", nevs,
	       meta_dm.rq_based ? "request events" : "bio events",
	       meta_dm.write_through ? "write-through" : "write-back",
	       st.meta_writes, st.durable, st.flushes, ties);
	printf("order-check: %" PRIu64 " origin writes (%" PRIu64 " before the first checkpoint,"
	       " not checked); %" PRIu64 " first writes checked in %" PRIu64 " epochs\n",
	       st.origin_writes, st.unchecked, st.first_writes, st.epochs);
	if (cfg.version >= 2)
		printf("order-check: format %u: %" PRIu64 " superblock writes that may retire"
		       " chunk marks checked\n", cfg.version, st.retire_checks);
	if (cfg.log)
		printf("order-check: superblock contents: %" PRIu64 " writes matched to the log"
		       " (%zu and %zu logged to blocks 0 and 1 since the mark)\n", sbs_matched,
		       nsbs[0], nsbs[1]);
	if (switching)
		die("the last epoch switch never became durable");
	if (!st.epochs || !st.first_writes)
		die("nothing to check: no checkpoint window or no first write after one");
	if (st.violations) {
		printf("order-check: %" PRIu64 " violations (%" PRIu64 " at first writes, %" PRIu64
		       " in flight at an epoch switch, %" PRIu64 " queued during one, %" PRIu64
		       " chunk marks retired early)\n",
		       st.violations, st.first_violations, st.drain_violations,
		       st.switch_violations, st.retire_violations);
		return 1;
	}
	printf("order-check: 0 violations\n");
	return 0;
}
