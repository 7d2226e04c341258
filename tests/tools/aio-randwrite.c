// SPDX-License-Identifier: GPL-2.0
/*
 * aio-randwrite DEV SIZE_KIB QD JOBS SECONDS STARTED_AFTER
 *
 * Random 4 KiB O_DIRECT writes of fresh random data over the first SIZE_KIB
 * of DEV, through Linux native AIO (io_submit, what fio's libaio engine
 * uses) with QD writes in flight, from JOBS processes at once, for SECONDS
 * (or until killed).  Once the first job has seen STARTED_AFTER writes
 * complete it prints "started" on stdout: the caller can time a reset from
 * the moment writes reach the device without polling.  A guest-reset test
 * starts this at every boot, where fio takes about a second just to load
 * its libraries under TCG.
 *
 * Exits 0 after SECONDS, 1 on an I/O error (printed), 2 on usage errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BS 4096

static uint64_t rng;

static uint64_t next(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static double now(void);

/* Fresh data per run and per job (fio --randrepeat=0). */
static void seed(void)
{
	rng = ((uint64_t)time(NULL) << 20) ^ ((uint64_t)getpid() << 1) ^ (uint64_t)(now() * 1e9) ^ 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill(struct iocb *cb, int fd, char *buf, uint64_t blocks)
{
	for (size_t i = 0; i < BS / 8; i++)
		((uint64_t *)buf)[i] = next();
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_lio_opcode = IOCB_CMD_PWRITE;
	cb->aio_buf = (uintptr_t)buf;
	cb->aio_nbytes = BS;
	cb->aio_offset = (int64_t)(next() % blocks) * BS;
	cb->aio_data = (uintptr_t)cb;
}

static int job(const char *dev, uint64_t blocks, int qd, double seconds, long started_after)
{
	aio_context_t ctx = 0;
	struct iocb *cbs = calloc(qd, sizeof(*cbs)), **list = calloc(qd, sizeof(*list));
	struct io_event *ev = calloc(qd, sizeof(*ev));
	char *bufs;
	long done = 0;
	double end = now() + seconds;
	int fd = open(dev, O_WRONLY | O_DIRECT);

	if (fd < 0) {
		fprintf(stderr, "aio-randwrite: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	if (!cbs || !list || !ev || posix_memalign((void **)&bufs, BS, (size_t)qd * BS)) {
		fprintf(stderr, "aio-randwrite: out of memory\n");
		return 1;
	}
	if (syscall(SYS_io_setup, qd, &ctx) < 0) {
		fprintf(stderr, "aio-randwrite: io_setup: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < qd; i++) {
		fill(&cbs[i], fd, bufs + (size_t)i * BS, blocks);
		list[i] = &cbs[i];
	}
	if (syscall(SYS_io_submit, ctx, qd, list) != qd) {
		fprintf(stderr, "aio-randwrite: io_submit: %s\n", strerror(errno));
		return 1;
	}
	while (now() < end) {
		long n = syscall(SYS_io_getevents, ctx, 1, qd, ev, NULL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "aio-randwrite: io_getevents: %s\n", strerror(errno));
			return 1;
		}
		for (long i = 0; i < n; i++) {
			struct iocb *cb = (struct iocb *)(uintptr_t)ev[i].data;

			if (ev[i].res != BS) {
				fprintf(stderr, "aio-randwrite: write at %" PRId64 ": %s\n",
					(int64_t)cb->aio_offset,
					(int64_t)ev[i].res < 0 ? strerror(-(int64_t)ev[i].res) : "short");
				return 1;
			}
			if (++done == started_after) {
				printf("started\n");
				fflush(stdout);
			}
			fill(cb, fd, (char *)(uintptr_t)cb->aio_buf, blocks);
			list[i] = cb;
		}
		if (syscall(SYS_io_submit, ctx, n, list) != n) {
			fprintf(stderr, "aio-randwrite: io_submit: %s\n", strerror(errno));
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t size_kib;
	int qd, jobs, rc = 0;
	double seconds;
	long started_after;

	if (argc != 7 || !(size_kib = strtoull(argv[2], NULL, 10)) || size_kib < 4 ||
	    (qd = atoi(argv[3])) < 1 || qd > 1024 || (jobs = atoi(argv[4])) < 1 || jobs > 64 ||
	    (seconds = atof(argv[5])) <= 0 || (started_after = atol(argv[6])) < 1) {
		fprintf(stderr, "usage: aio-randwrite DEV SIZE_KIB QD JOBS SECONDS STARTED_AFTER\n");
		return 2;
	}
	/* Jobs 1.. are children; job 0, which says "started", is this process. */
	for (int j = 1; j < jobs; j++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("aio-randwrite: fork");
			return 1;
		}
		if (!pid) {
			seed();
			_exit(job(argv[1], size_kib / 4, qd, seconds, -1));
		}
	}
	seed();
	rc = job(argv[1], size_kib / 4, qd, seconds, started_after);
	for (int j = 1; j < jobs; j++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
	}
	return rc;
}
