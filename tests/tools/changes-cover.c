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
#include <sys/mman.h>
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

/*
 * Word by word, not memcmp: under TCG, glibc's vector memcmp (helpers for
 * every AVX instruction) took longer than the reads.
 */
static int same(const char *x, const char *y, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t u, v;

		memcpy(&u, x + i, 8);
		memcpy(&v, y + i, 8);
		if (u != v)
			return 0;
	}
	for (; i < n; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

static uint64_t size_of(int fd, const char *path)
{
	off_t n = lseek(fd, 0, SEEK_END);	/* files and block devices alike */

	if (n < 0) {
		fprintf(stderr, "changes-cover: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return n;
}

/*
 * Bytes [pos, pos + n) of fd, mapped and read in (MAP_POPULATE): under TCG
 * a read() copies byte by byte (rep movsb), and this is about three times
 * faster.  The page cache behind it is the one read() uses.
 */
static const char *map_window(int fd, uint64_t pos, size_t n, void **base, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t at = pos / page * page;

	*len = n + (pos - at);
	*base = mmap(NULL, *len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, at);
	if (*base == MAP_FAILED) {
		perror("changes-cover: mmap");
		exit(2);
	}
	return (const char *)*base + (pos - at);
}

int main(int argc, char **argv)
{
	uint64_t rs, region = 0, differ = 0, cov = 0, reported = 0, limit = UINT64_MAX;
	uint64_t sa, sb, total;
	char *end;
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
	/* Many regions per window: one mapping per 4 KiB region would cost seconds. */
	chunk = rs * 512 > (16 << 20) ? rs * 512 : (16 << 20) / (rs * 512) * (rs * 512);
	sa = size_of(fa, argv[1]);
	sb = size_of(fb, argv[2]);
	if (limit != UINT64_MAX) {
		if (sa < limit * 512 || sb < limit * 512) {
			fprintf(stderr, "changes-cover: an image is shorter than %" PRIu64 " sectors\n",
				limit);
			return 2;
		}
		total = limit * 512;
	} else if (sa != sb) {
		fprintf(stderr, "changes-cover: images differ in size\n");
		return 2;
	} else {
		total = sa;
	}
	for (uint64_t pos = 0; pos < total; pos += chunk) {	/* pos: bytes compared so far */
		size_t na = total - pos < chunk ? total - pos : chunk, la, lb;
		void *ba, *bb;
		const char *a = map_window(fa, pos, na, &ba, &la);
		const char *b = map_window(fb, pos, na, &bb, &lb);

		for (size_t off = 0; off < na; off += rs * 512, region++) {
			size_t n = na - off < rs * 512 ? na - off : rs * 512;

			if (same(a + off, b + off, n))
				continue;
			differ++;
			if (covered(region * rs, n / 512))
				cov++;
			else
				printf("MISSED region %" PRIu64 " (sectors %" PRIu64 "+%zu)\n",
				       region, region * rs, n / 512);
		}
		munmap(ba, la);
		munmap(bb, lb);
	}
	printf("differ %" PRIu64 " covered %" PRIu64 " reported %" PRIu64 " sectors\n",
	       differ, cov, reported);
	return differ == cov ? 0 : 1;
}
