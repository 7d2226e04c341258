// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * chj-benchguest: the benchmark VM's helpers, in C because every process
 * started under TCG costs a lot (fio, linked to 64 libraries, takes ~1.5 s;
 * dmsetup ~0.2-0.5 s on a busy host) and that would swamp what is measured.
 *
 *   chj-benchguest hook pre|post TARGET JOB REP
 *	fio's exec_prerun in bench/vm/bench.sh, on the dm device $BENCH_DM
 *	(default "b").  pre: finishes the previous job (as post does), then a
 *	checkpoint (new epoch / era) before *-first and seqwrite jobs, and
 *	snapshots of the metadata device's sectors written ($BENCH_META_STAT,
 *	a /sys/.../stat file) and of dm-chj's stats; for ckpt-under-load it
 *	forks a loop that sends "checkpoint" every $BENCH_CKPT_EVERY s (0.5), timing each
 *	DM_TARGET_MSG ioctl.  post (after fio): finishes the last job.
 *	Finishing appends the deltas and latencies to $BENCH_OUT/extra.tsv as
 *	"target job rep metric value".  $BENCH_CKPT_S is the job's length.
 *   chj-benchguest msg NAME MESSAGE
 *	send a target message, print the answer and the ioctl's latency.
 *   chj-benchguest cputime FILE COMMAND [ARG...]
 *	run COMMAND, write the CPU time it used (user + system, all its
 *	threads, in µs: the scheduler's exact runtime, not ticks) to FILE,
 *	exit with its status.  Under VM_ICOUNT=1 that is instructions, and
 *	unlike elapsed time it leaves out the idle waits (a page read over
 *	9p), which -icount lets pass in host time.
 *   chj-benchguest tree-create DIR NFILES [FILE_SIZE [SEED]]
 *	NFILES files of FILE_SIZE (4096) pseudo-random bytes, 1000 a directory.
 *   chj-benchguest tree-change DIR NFILES PCT SEED LIST
 *	overwrite in place the first block of PCT % of the files (a seeded
 *	choice); their paths go to LIST.
 *   chj-benchguest fiemap-walk DIR CHANGES
 *	the FIEMAP baseline of the resolver benchmark: walk every file under
 *	DIR, FIEMAP it, and print the files with an extent inside a changed
 *	range (CHANGES: "START LENGTH" lines in bytes, `chj changes --bytes`).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <linux/dm-ioctl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *errfile;	/* hook failures are appended here */

static void die(const char *fmt, ...)
{
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	fprintf(stderr, "chj-benchguest: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (errfile && (f = fopen(errfile, "a"))) {
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		fputc('\n', f);
		va_end(ap);
		fclose(f);
	}
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- device-mapper target messages ------------------------------------ */

static int dm_fd = -1;

/* Send MSG to sector 0 of dm device NAME; the answer (if any) into OUT. */
static int dm_message(const char *name, const char *msg, char *out, size_t outlen, double *secs)
{
	static union {
		struct dm_ioctl io;
		char buf[16384];
	} u;
	struct dm_target_msg *tm;
	double t0;
	int rc;

	if (dm_fd < 0) {
		dm_fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
		if (dm_fd < 0)
			die("/dev/mapper/control: %s", strerror(errno));
	}
	memset(&u, 0, sizeof(u));
	u.io.version[0] = DM_VERSION_MAJOR;
	u.io.data_size = sizeof(u);
	u.io.data_start = sizeof(u.io);
	snprintf(u.io.name, sizeof(u.io.name), "%s", name);
	tm = (struct dm_target_msg *)(u.buf + u.io.data_start);
	tm->sector = 0;
	snprintf(tm->message, sizeof(u) - u.io.data_start - sizeof(*tm), "%s", msg);
	t0 = now_s();
	rc = ioctl(dm_fd, DM_TARGET_MSG, &u.io);
	if (secs)
		*secs = now_s() - t0;
	if (rc)
		return -errno;
	if (out && outlen) {
		out[0] = 0;
		if (u.io.flags & DM_DATA_OUT_FLAG)
			snprintf(out, outlen, "%s", u.buf + u.io.data_start);
	}
	return 0;
}

static int cmd_msg(const char *name, const char *msg)
{
	char out[4096];
	double t;
	int rc = dm_message(name, msg, out, sizeof(out), &t);

	if (rc)
		die("%s: message '%s': %s", name, msg, strerror(-rc));
	printf("%s\n", out);
	fprintf(stderr, "%.3f ms\n", t * 1e3);
	return 0;
}

/* ---- the fio hook ----------------------------------------------------- */

struct snap {
	unsigned long long meta_bytes, commits, deferred, blocks;
	/* the guest's CPU (USER_HZ ticks), the dm device's I/Os, and the
	 * FUA and PREFLUSH bios queued on the metadata and origin devices */
	unsigned long long cpu_busy, dm_reads, dm_writes;
	unsigned long long meta_fua, meta_flush, orig_fua, orig_flush;
	/* dm-chj's superblock writes (each FUA), chunk marks and retires */
	unsigned long long sb_writes, marks, retires;
};
#define SNAP_FMT "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu"
#define SNAP_ARGS(s) (s).meta_bytes, (s).commits, (s).deferred, (s).blocks, (s).cpu_busy, \
	(s).dm_reads, (s).dm_writes, (s).meta_fua, (s).meta_flush, (s).orig_fua, (s).orig_flush, \
	(s).sb_writes, (s).marks, (s).retires
#define SNAP_N 14

static unsigned long long meta_written(const char *statfile)
{
	unsigned long long f[7];
	FILE *fp = fopen(statfile, "r");

	if (!fp)
		die("%s: %s", statfile, strerror(errno));
	if (fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4],
		   &f[5], &f[6]) != 7)
		die("%s: unreadable", statfile);
	fclose(fp);
	return f[6] * 512;
}

static const char *envor(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

/* CPU time the guest spent busy (not idle, not waiting for I/O), in ticks. */
static unsigned long long cpu_busy(void)
{
	unsigned long long v[8] = { 0 };
	FILE *fp = fopen("/proc/stat", "r");

	if (!fp)
		die("/proc/stat: %s", strerror(errno));
	if (fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) != 8)
		die("/proc/stat: unreadable");
	fclose(fp);
	/* user nice system idle iowait irq softirq steal */
	return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

/* Reads and writes completed on dm device NAME (its /sys/dev/block stat). */
static void dm_ios(const char *name, struct snap *s)
{
	unsigned long long f[5];
	char path[4200];
	struct stat st;
	FILE *fp;

	snprintf(path, sizeof(path), "/dev/mapper/%s", name);
	if (stat(path, &st))
		die("%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(st.st_rdev), minor(st.st_rdev));
	fp = fopen(path, "r");
	if (!fp)
		die("%s: %s", path, strerror(errno));
	if (fscanf(fp, "%llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3], &f[4]) != 5)
		die("%s: unreadable", path);
	fclose(fp);
	s->dm_reads = f[0];
	s->dm_writes = f[4];
}

/*
 * FUA and PREFLUSH bios queued on the metadata and origin devices, from the
 * hist trigger bench/vm/bench.sh puts on block:block_bio_queue when
 * BENCH_TRACE=1 ($BENCH_HIST, keys dev and rwbs; $BENCH_META_KDEV and
 * $BENCH_ORIGIN_KDEV are the devices' kernel dev_t).  rwbs is
 * [F]op[F]...: a leading F is PREFLUSH, an F after the op is FUA.
 */
static void bio_flags(struct snap *s)
{
	const char *hist = getenv("BENCH_HIST");
	unsigned long long meta, orig;
	char line[512];
	FILE *fp;

	if (!hist || !*hist)
		return;
	meta = strtoull(envor("BENCH_META_KDEV", "0"), NULL, 10);
	orig = strtoull(envor("BENCH_ORIGIN_KDEV", "0"), NULL, 10);
	fp = fopen(hist, "r");
	if (!fp)
		die("%s: %s", hist, strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		char *d = strstr(line, "dev:"), *r = strstr(line, "rwbs:"), *h = strstr(line, "hitcount:");
		unsigned long long dev, n;
		int flush = 0, fua = 0;

		if (line[0] != '{' || !d || !r || !h)
			continue;
		dev = strtoull(d + 4, NULL, 10);
		n = strtoull(h + 9, NULL, 10);
		for (r += 5; *r == ' '; r++)
			;
		if (*r == 'F') {
			flush = 1;
			r++;
		}
		if (*r && *r != ' ' && *r != '}')
			fua = r[1] == 'F';
		if (dev == meta) {
			s->meta_fua += fua ? n : 0;
			s->meta_flush += flush ? n : 0;
		} else if (dev == orig) {
			s->orig_fua += fua ? n : 0;
			s->orig_flush += flush ? n : 0;
		}
	}
	fclose(fp);
}

static void snap_io(const char *dm, struct snap *s)
{
	dm_ios(dm, s);
	bio_flags(s);
	s->cpu_busy = cpu_busy();	/* last: the least of the hook's own time */
}

static void chj_stats(const char *dm, struct snap *s)
{
	char out[1024], *tok, *save = NULL;
	int rc = dm_message(dm, "stats", out, sizeof(out), NULL);

	if (rc)
		die("%s: stats message: %s", dm, strerror(-rc));
	s->commits = s->deferred = s->blocks = 0;
	for (tok = strtok_r(out, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		char *eq = strchr(tok, '=');
		unsigned long long v;
		size_t kl;

		if (!eq)
			continue;
		v = strtoull(eq + 1, NULL, 10);
		kl = eq - tok;
		if (kl == 7 && !strncmp(tok, "commits", 7))
			s->commits = v;
		else if (kl == 13 && !strncmp(tok, "deferred_bios", 13))
			s->deferred = v;
		else if (kl > 7 && !strncmp(eq - 7, "_writes", 7))
			s->blocks += v;
		if (kl == 17 && !strncmp(tok, "superblock_writes", 17))
			s->sb_writes = v;
		else if (kl == 11 && !strncmp(tok, "chunk_marks", 11))
			s->marks = v;
		else if (kl == 13 && !strncmp(tok, "chunk_retires", 13))
			s->retires = v;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The checkpoint loop of ckpt-under-load: runs detached from fio, a
 * checkpoint every $BENCH_CKPT_EVERY seconds (0.5), the first after one
 * interval, none in the job's last two.
 */
static void ckpt_loop(const char *dm, const char *latfile, double seconds)
{
	double every = atof(envor("BENCH_CKPT_EVERY", "0.5"));
	double end = now_s() + seconds - 2 * every, t;
	FILE *f = fopen(latfile, "w");
	int rc, n = 0;

	if (!f)
		die("%s: %s", latfile, strerror(errno));
	sleep_s(every);
	do {
		rc = dm_message(dm, "checkpoint", NULL, 0, &t);
		if (rc) {
			fprintf(f, "error %s\n", strerror(-rc));
			break;
		}
		fprintf(f, "%.6f\n", t * 1e3);
		fflush(f);
		n++;
		sleep_s(every);
	} while (now_s() < end);
	fprintf(f, "done\n");
	fclose(f);
}

struct hookctx {
	const char *out, *metastat, *dm;
	double ckpt_s;
};

/* After JOB: append its metadata deltas and checkpoint latencies. */
static void hook_post(const struct hookctx *c, const char *target, const char *job, const char *rep)
{
	int linear = !strcmp(target, "linear"), chj = !strncmp(target, "chj", 3);
	char state[4096], latfile[4200], path[4200];
	struct snap s0 = { 0 }, s1 = { 0 }, io = { 0 };
	unsigned long long ios, writes;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;

	snap_io(c->dm, &io);
	snprintf(state, sizeof(state), "%s/state/%s-%s-%s", c->out, target, job, rep);
	snprintf(latfile, sizeof(latfile), "%s.lat", state);
	f = fopen(state, "r");
	if (!f || fscanf(f, SNAP_FMT, &s0.meta_bytes, &s0.commits, &s0.deferred, &s0.blocks,
			 &s0.cpu_busy, &s0.dm_reads, &s0.dm_writes, &s0.meta_fua, &s0.meta_flush,
			 &s0.orig_fua, &s0.orig_flush, &s0.sb_writes, &s0.marks, &s0.retires) != SNAP_N)
		die("%s: no pre-run state", state);
	fclose(f);
	snprintf(path, sizeof(path), "%s/extra.tsv", c->out);
	f = fopen(path, "a");
	if (!f)
		die("%s: %s", path, strerror(errno));
	if (!linear)
		fprintf(f, "%s\t%s\t%s\tmeta_bytes\t%llu\n", target, job, rep, meta_written(c->metastat) - s0.meta_bytes);
	/* Per I/O of the job as the dm device counted them (reads too). */
	ios = io.dm_reads - s0.dm_reads + io.dm_writes - s0.dm_writes;
	writes = io.dm_writes - s0.dm_writes;
	fprintf(f, "%s\t%s\t%s\tdm_ios\t%llu\n", target, job, rep, ios);
	fprintf(f, "%s\t%s\t%s\tcpu_busy_ms\t%.1f\n", target, job, rep,
		(io.cpu_busy - s0.cpu_busy) * 1e3 / hz);
	if (ios)
		fprintf(f, "%s\t%s\t%s\tcpu_us_per_io\t%.3f\n", target, job, rep,
			(io.cpu_busy - s0.cpu_busy) * 1e6 / hz / ios);
	if (getenv("BENCH_HIST") && *getenv("BENCH_HIST")) {
		fprintf(f, "%s\t%s\t%s\tmeta_fua\t%llu\n", target, job, rep, io.meta_fua - s0.meta_fua);
		fprintf(f, "%s\t%s\t%s\tmeta_flush\t%llu\n", target, job, rep, io.meta_flush - s0.meta_flush);
		fprintf(f, "%s\t%s\t%s\torigin_fua\t%llu\n", target, job, rep, io.orig_fua - s0.orig_fua);
		fprintf(f, "%s\t%s\t%s\torigin_flush\t%llu\n", target, job, rep, io.orig_flush - s0.orig_flush);
		if (writes) {
			fprintf(f, "%s\t%s\t%s\tfua_per_kwrite\t%.3f\n", target, job, rep,
				(io.meta_fua - s0.meta_fua + io.orig_fua - s0.orig_fua) * 1e3 / writes);
			fprintf(f, "%s\t%s\t%s\tflush_per_kwrite\t%.3f\n", target, job, rep,
				(io.meta_flush - s0.meta_flush + io.orig_flush - s0.orig_flush) * 1e3 / writes);
		}
	}
	if (chj) {
		chj_stats(c->dm, &s1);
		fprintf(f, "%s\t%s\t%s\tchj_commits\t%llu\n", target, job, rep, s1.commits - s0.commits);
		fprintf(f, "%s\t%s\t%s\tchj_deferred_bios\t%llu\n", target, job, rep, s1.deferred - s0.deferred);
		fprintf(f, "%s\t%s\t%s\tchj_meta_blocks\t%llu\n", target, job, rep, s1.blocks - s0.blocks);
		fprintf(f, "%s\t%s\t%s\tchj_sb_writes\t%llu\n", target, job, rep, s1.sb_writes - s0.sb_writes);
		fprintf(f, "%s\t%s\t%s\tchj_chunk_marks\t%llu\n", target, job, rep, s1.marks - s0.marks);
		fprintf(f, "%s\t%s\t%s\tchj_chunk_retires\t%llu\n", target, job, rep, s1.retires - s0.retires);
		if (writes)
			fprintf(f, "%s\t%s\t%s\tchj_sb_writes_per_kwrite\t%.3f\n", target, job, rep,
				(s1.sb_writes - s0.sb_writes) * 1e3 / writes);
	}
	if (!strcmp(job, "ckpt-under-load") && !linear) {
		double lat[4096], sum = 0, deadline = now_s() + 30;
		char line[256];
		size_t n = 0, i;
		int done = 0;
		FILE *lf;

		/* The loop stops a second before fio does; wait for its "done". */
		while (!done) {
			n = 0;
			lf = fopen(latfile, "r");
			while (lf && fgets(line, sizeof(line), lf)) {
				if (!strncmp(line, "done", 4))
					done = 1;
				else if (!strncmp(line, "error", 5))
					die("%s %s %s: checkpoint under load: %s", target, job, rep, line);
				else if (n < sizeof(lat) / sizeof(lat[0]))
					lat[n++] = atof(line);
			}
			if (lf)
				fclose(lf);
			if (!done && now_s() > deadline)
				die("%s %s %s: the checkpoint loop did not finish", target, job, rep);
			if (!done)
				sleep_s(0.1);
		}
		if (!n)
			die("%s %s %s: no checkpoint was taken", target, job, rep);
		for (i = 0; i < n; i++)
			sum += lat[i];
		qsort(lat, n, sizeof(lat[0]), cmp_double);
		fprintf(f, "%s\t%s\t%s\tckpt_count\t%zu\n", target, job, rep, n);
		fprintf(f, "%s\t%s\t%s\tckpt_lat_mean_ms\t%.6f\n", target, job, rep, sum / n);
		fprintf(f, "%s\t%s\t%s\tckpt_lat_p50_ms\t%.6f\n", target, job, rep,
			n % 2 ? lat[n / 2] : (lat[n / 2 - 1] + lat[n / 2]) / 2);
		fprintf(f, "%s\t%s\t%s\tckpt_lat_max_ms\t%.6f\n", target, job, rep, lat[n - 1]);
	}
	if (fclose(f))
		die("%s: write error", path);
}

/*
 * Every process costs under TCG, so fio runs only a "pre" hook: it first
 * finishes the previous job of this target and repetition (named in the
 * state file "cur-TARGET-REP"), then prepares JOB.  "post" after fio exits
 * finishes the last job.
 */
static int cmd_hook(const char *phase, const char *target, const char *job, const char *rep)
{
	struct hookctx c = { getenv("BENCH_OUT"), getenv("BENCH_META_STAT"), envor("BENCH_DM", "b"),
			     atof(envor("BENCH_CKPT_S", "8")) };
	int linear = !strcmp(target, "linear"), chj = !strncmp(target, "chj", 3);
	size_t jl = strlen(job);
	char state[4096], latfile[4200], path[4200], cur[4200], prev[256];
	struct snap s0 = { 0 };
	FILE *f;

	if (!c.out || !c.metastat)
		die("hook: BENCH_OUT and BENCH_META_STAT must be set");
	snprintf(path, sizeof(path), "%s/state/errors", c.out);
	errfile = strdup(path);
	snprintf(cur, sizeof(cur), "%s/state/cur-%s-%s", c.out, target, rep);
	f = fopen(cur, "r");
	if (f) {
		if (!fgets(prev, sizeof(prev), f))
			die("%s: empty", cur);
		fclose(f);
		prev[strcspn(prev, "\n")] = 0;
		hook_post(&c, target, prev, rep);
		unlink(cur);
	} else if (!strcmp(phase, "post")) {
		die("hook post %s %s %s: no job to finish", target, job, rep);
	}
	if (!strcmp(phase, "post"))
		return 0;
	if (strcmp(phase, "pre"))
		die("hook: phase must be pre or post");

	snprintf(state, sizeof(state), "%s/state/%s-%s-%s", c.out, target, job, rep);
	snprintf(latfile, sizeof(latfile), "%s.lat", state);
	if (!linear && ((jl > 6 && !strcmp(job + jl - 6, "-first")) || !strcmp(job, "seqwrite-1m"))) {
		int rc = dm_message(c.dm, "checkpoint", NULL, 0, NULL);

		if (rc)
			die("%s %s %s: checkpoint: %s", target, job, rep, strerror(-rc));
	}
	if (!linear)
		s0.meta_bytes = meta_written(c.metastat);
	if (chj)
		chj_stats(c.dm, &s0);
	snap_io(c.dm, &s0);
	f = fopen(state, "w");
	if (!f)
		die("%s: %s", state, strerror(errno));
	fprintf(f, SNAP_FMT "\n", SNAP_ARGS(s0));
	fclose(f);
	f = fopen(cur, "w");
	if (!f)
		die("%s: %s", cur, strerror(errno));
	fprintf(f, "%s\n", job);
	fclose(f);
	if (!strcmp(job, "ckpt-under-load") && !linear) {
		pid_t pid;

		unlink(latfile);
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			/* Detach: fio's system() returns at once. */
			if (fork())
				_exit(0);
			setsid();
			ckpt_loop(c.dm, latfile, c.ckpt_s);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	return 0;
}

/* ---- resolver benchmark trees ----------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)	/* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static void fill(char *buf, size_t n)
{
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t r = rng();

		memcpy(buf + i, &r, 8);
	}
	for (; i < n; i++)
		buf[i] = (char)rng();
}

#define PER_DIR 1000

static void file_path(char *p, size_t len, const char *dir, long i)
{
	snprintf(p, len, "%s/d%05ld/f%07ld", dir, i / PER_DIR, i);
}

static long parse_long(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < 0)
		die("bad %s '%s'", what, s);
	return v;
}

static int cmd_tree_create(const char *dir, long nfiles, long size, uint64_t seed)
{
	char path[4096], *buf = malloc(size ? size : 1);
	long i;
	int fd;

	if (!buf)
		die("out of memory");
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	if (mkdir(dir, 0755) && errno != EEXIST)
		die("%s: %s", dir, strerror(errno));
	for (i = 0; i < nfiles; i++) {
		if (i % PER_DIR == 0) {
			snprintf(path, sizeof(path), "%s/d%05ld", dir, i / PER_DIR);
			if (mkdir(path, 0755) && errno != EEXIST)
				die("%s: %s", path, strerror(errno));
		}
		file_path(path, sizeof(path), dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("%s: %s", path, strerror(errno));
		fill(buf, size);
		if (write(fd, buf, size) != size)
			die("%s: short write", path);
		close(fd);
	}
	free(buf);
	return 0;
}

static int cmd_tree_change(const char *dir, long nfiles, double pct, uint64_t seed, const char *list)
{
	long k = llround(nfiles * pct / 100.0), i;
	uint32_t *idx;
	char path[4096], buf[4096];
	FILE *out = fopen(list, "w");
	struct stat st;
	int fd;

	if (!out)
		die("%s: %s", list, strerror(errno));
	if (pct > 0 && k == 0)
		k = 1;
	if (k > nfiles)
		k = nfiles;
	idx = malloc(nfiles * sizeof(*idx) + 1);
	if (!idx)
		die("out of memory");
	for (i = 0; i < nfiles; i++)
		idx[i] = i;
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 7;
	for (i = 0; i < k; i++) {	/* partial Fisher-Yates */
		long j = i + (long)(rng() % (uint64_t)(nfiles - i));
		uint32_t t = idx[i];
		ssize_t n;

		idx[i] = idx[j];
		idx[j] = t;
		file_path(path, sizeof(path), dir, idx[i]);
		fd = open(path, O_WRONLY);
		if (fd < 0 || fstat(fd, &st))
			die("%s: %s", path, strerror(errno));
		n = st.st_size < (off_t)sizeof(buf) ? st.st_size : (ssize_t)sizeof(buf);
		fill(buf, n ? n : 1);
		if (pwrite(fd, buf, n ? n : 1, 0) != (n ? n : 1))
			die("%s: short write", path);
		close(fd);
		fprintf(out, "%s\n", path);
	}
	if (fclose(out))
		die("%s: write error", list);
	free(idx);
	return 0;
}

struct range {
	uint64_t start, end;
};

static struct range *ranges;
static size_t nranges;
static long walked, listed;

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Does [start, end) overlap a changed range? */
static int changed(uint64_t start, uint64_t end)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {	/* first range ending after start */
		size_t mid = (lo + hi) / 2;

		if (ranges[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nranges && ranges[lo].start < end;
}

static int walk_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	union {
		struct fiemap fm;
		char buf[sizeof(struct fiemap) + 64 * sizeof(struct fiemap_extent)];
	} u;
	uint64_t next = 0;
	int fd, hit = 0, last = 0;
	unsigned int i;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	walked++;
	fd = open(path, O_RDONLY | O_NOATIME);
	if (fd < 0)
		fd = open(path, O_RDONLY);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	while (!hit && !last) {
		memset(&u.fm, 0, sizeof(u.fm));
		u.fm.fm_start = next;
		u.fm.fm_length = FIEMAP_MAX_OFFSET - next;
		u.fm.fm_extent_count = 64;
		if (ioctl(fd, FS_IOC_FIEMAP, &u.fm))
			die("%s: FIEMAP: %s", path, strerror(errno));
		if (!u.fm.fm_mapped_extents)
			break;
		for (i = 0; i < u.fm.fm_mapped_extents; i++) {
			struct fiemap_extent *e = &u.fm.fm_extents[i];

			/* Inline or unknown placement: conservatively changed. */
			if (e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE |
					   FIEMAP_EXTENT_NOT_ALIGNED)) {
				hit = 1;
				break;
			}
			if (changed(e->fe_physical, e->fe_physical + e->fe_length)) {
				hit = 1;
				break;
			}
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
			next = e->fe_logical + e->fe_length;
		}
	}
	close(fd);
	if (hit) {
		listed++;
		printf("%s\n", path);
	}
	return 0;
}

static int cmd_fiemap_walk(const char *dir, const char *changes)
{
	FILE *f = fopen(changes, "r");
	unsigned long long s, l;
	size_t cap = 0, i, j;

	if (!f)
		die("%s: %s", changes, strerror(errno));
	while (fscanf(f, "%llu %llu", &s, &l) == 2) {
		if (nranges == cap) {
			cap = cap ? cap * 2 : 1024;
			ranges = realloc(ranges, cap * sizeof(*ranges));
			if (!ranges)
				die("out of memory");
		}
		ranges[nranges].start = s;
		ranges[nranges].end = s + l;
		nranges++;
	}
	fclose(f);
	qsort(ranges, nranges, sizeof(*ranges), cmp_range);
	for (i = 0, j = 0; i < nranges; i++) {	/* merge overlaps */
		if (j && ranges[i].start <= ranges[j - 1].end) {
			if (ranges[i].end > ranges[j - 1].end)
				ranges[j - 1].end = ranges[i].end;
		} else {
			ranges[j++] = ranges[i];
		}
	}
	nranges = j;
	if (nftw(dir, walk_one, 64, FTW_PHYS | FTW_MOUNT))
		die("%s: walk failed: %s", dir, strerror(errno));
	fprintf(stderr, "fiemap-walk: %ld files walked, %ld listed, %zu changed ranges\n", walked,
		listed, nranges);
	return fflush(stdout) ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: chj-benchguest hook pre|post TARGET JOB REP\n"
		"       chj-benchguest msg NAME MESSAGE\n"
		"       chj-benchguest cputime FILE COMMAND [ARG...]\n"
		"       chj-benchguest tree-create DIR NFILES [FILE_SIZE [SEED]]\n"
		"       chj-benchguest tree-change DIR NFILES PCT SEED LIST\n"
		"       chj-benchguest fiemap-walk DIR CHANGES\n");
	exit(2);
}

static int cmd_cputime(const char *file, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();
	FILE *f;

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "chj-benchguest: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		die("waitpid: %s", strerror(errno));
	if (getrusage(RUSAGE_CHILDREN, &ru))
		die("getrusage: %s", strerror(errno));
	f = fopen(file, "w");
	if (!f || fprintf(f, "%lld\n", (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
			  ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) < 0 || fclose(f))
		die("%s: cannot write", file);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "hook") && argc == 6)
		return cmd_hook(argv[2], argv[3], argv[4], argv[5]);
	if (!strcmp(argv[1], "msg") && argc == 4)
		return cmd_msg(argv[2], argv[3]);
	if (!strcmp(argv[1], "tree-create") && argc >= 4 && argc <= 6)
		return cmd_tree_create(argv[2], parse_long(argv[3], "NFILES"),
				       argc > 4 ? parse_long(argv[4], "FILE_SIZE") : 4096,
				       argc > 5 ? (uint64_t)parse_long(argv[5], "SEED") : 1);
	if (!strcmp(argv[1], "tree-change") && argc == 7)
		return cmd_tree_change(argv[2], parse_long(argv[3], "NFILES"), atof(argv[4]),
				       (uint64_t)parse_long(argv[5], "SEED"), argv[6]);
	if (!strcmp(argv[1], "cputime") && argc >= 4)
		return cmd_cputime(argv[2], argv + 3);
	if (!strcmp(argv[1], "fiemap-walk") && argc == 4)
		return cmd_fiemap_walk(argv[2], argv[3]);
	usage();
	return 2;
}
