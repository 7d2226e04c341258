// SPDX-License-Identifier: GPL-2.0
/*
 * changes-cover BEFORE AFTER REGION_SECTORS CHANGES [SECTORS]
 *
 * Ground truth for the no-missed-change promise: compares two images of an
 * origin (files or block devices) region by region and checks that every
 * region whose content differs lies inside the ranges in CHANGES (the
 * output of `chj changes`: "START LENGTH" lines in 512-byte sectors).
 * With SECTORS, only the first SECTORS of each image are compared (both must
 * be at least that long): a device can then be compared with a copy on a
 * larger one, without copying either.
 * Prints "differ N covered N reported N" and exits 0 when every differing
 * region is covered, 1 when one is missed (each miss is printed), 2 on
 * usage or I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct range { uint64_t start, len; };

static struct range *ranges;
static size_t nranges;

static int load_ranges(const char *path)
{
	FILE *f = fopen(path, "r");
	uint64_t s, l;
	size_t cap = 0;

	if (!f)
		return -1;
	while (fscanf(f, "%" SCNu64 " %" SCNu64, &s, &l) == 2) {
		if (nranges == cap) {
			cap = cap ? cap * 2 : 256;
			ranges = realloc(ranges, cap * sizeof(*ranges));
			if (!ranges)
				exit(2);
		}
		ranges[nranges++] = (struct range){ s, l };
	}
	if (!feof(f)) {
		fprintf(stderr, "changes-cover: %s: not START LENGTH lines\n", path);
		exit(2);
	}
	fclose(f);
	return 0;
}

/* Is [s, s + n) inside the union of the ranges?  Ranges are sorted, merged. */
static int covered(uint64_t s, uint64_t n)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ranges[mid].start + ranges[mid].len <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nranges && ranges[lo].start <= s &&
	       ranges[lo].start + ranges[lo].len >= s + n;
}

static ssize_t read_full(int fd, char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = read(fd, buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		done += r;
	}
	return done;
}

int main(int argc, char **argv)
{
	uint64_t rs, region = 0, differ = 0, cov = 0, reported = 0, limit = UINT64_MAX;
	char *a, *b, *end;
	size_t chunk;
	int fa, fb;

	if ((argc != 5 && argc != 6) || !(rs = strtoull(argv[3], NULL, 10)) ||
	    (argc == 6 && (!(limit = strtoull(argv[5], &end, 10)) || *end))) {
		fprintf(stderr, "usage: changes-cover BEFORE AFTER REGION_SECTORS CHANGES [SECTORS]\n");
		return 2;
	}
	fa = open(argv[1], O_RDONLY);
	fb = open(argv[2], O_RDONLY);
	if (fa < 0 || fb < 0 || load_ranges(argv[4])) {
		perror("changes-cover");
		return 2;
	}
	for (size_t i = 0; i < nranges; i++)
		reported += ranges[i].len;
	/* Read many regions per call: a read per 4 KiB region costs seconds under TCG. */
	chunk = rs * 512 > (1 << 20) ? rs * 512 : (1 << 20) / (rs * 512) * (rs * 512);
	a = malloc(chunk);
	b = malloc(chunk);
	if (!a || !b)
		return 2;
	for (uint64_t pos = 0;;) {	/* pos: bytes compared so far */
		size_t want = chunk;
		ssize_t na, nb;

		if (limit != UINT64_MAX) {
			if (pos >= limit * 512)
				break;
			if (limit * 512 - pos < want)
				want = limit * 512 - pos;
		}
		na = read_full(fa, a, want);
		nb = read_full(fb, b, want);
		if (na < 0 || nb < 0) {
			perror("changes-cover: read");
			return 2;
		}
		if (limit != UINT64_MAX && ((size_t)na != want || (size_t)nb != want)) {
			fprintf(stderr, "changes-cover: an image is shorter than %" PRIu64 " sectors\n",
				limit);
			return 2;
		}
		if (na != nb) {
			fprintf(stderr, "changes-cover: images differ in size\n");
			return 2;
		}
		if (!na)
			break;
		for (size_t off = 0; off < (size_t)na; off += rs * 512, region++) {
			size_t n = (size_t)na - off < rs * 512 ? (size_t)na - off : rs * 512;

			if (!memcmp(a + off, b + off, n))
				continue;
			differ++;
			if (covered(region * rs, n / 512))
				cov++;
			else
				printf("MISSED region %" PRIu64 " (sectors %" PRIu64 "+%zu)\n",
				       region, region * rs, n / 512);
		}
		pos += na;
	}
	printf("differ %" PRIu64 " covered %" PRIu64 " reported %" PRIu64 " sectors\n",
	       differ, cov, reported);
	return differ == cov ? 0 : 1;
}
