// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * fmt1 METADATA: rewrite both superblock copies of format-2 chj metadata
 * as format 1 (version 1, no intent map), both from the copy in force, for
 * the upgrade test (tests/vm/format-upgrade.sh).  Refuses metadata whose
 * intent map in force marks a chunk: format 1 could not say so.
 * Everything else (bitmap, journal) is the same in both formats.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libchj.h"

int main(int argc, char **argv)
{
	size_t len = CHJ_SB_COPIES * CHJ_BLOCK_SIZE;
	unsigned char *b;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: fmt1 METADATA\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0 || posix_memalign((void **)&b, CHJ_BLOCK_SIZE, len) ||
	    pread(fd, b, len, 0) != (ssize_t)len) {
		perror(argv[1]);
		return 1;
	}
	{
		struct chj_superblock *c0 = (void *)b, *c1 = (void *)(b + CHJ_BLOCK_SIZE);
		struct chj_superblock *in_force = chj_le64(c1->seq) > chj_le64(c0->seq) ? c1 : c0;
		struct chj_intent *in = (void *)((unsigned char *)in_force + CHJ_INTENT_OFFSET);
		uint64_t seq = chj_le64(in_force->seq);
		unsigned char one[CHJ_SB_BYTES];

		if (chj_le32(in_force->magic) != CHJ_SB_MAGIC || chj_le32(in_force->version) != 2 ||
		    seq < 1) {
			fprintf(stderr, "fmt1: %s: no format-2 superblock in force\n", argv[1]);
			return 1;
		}
		for (size_t k = 0; k < sizeof(in->bits); k++)
			if (in->bits[k]) {
				fprintf(stderr, "fmt1: %s: the superblock in force marks chunks\n", argv[1]);
				return 1;
			}
		/* Both copies from the one in force: seq in its slot, seq - 1 in the other. */
		memcpy(one, in_force, sizeof(one));
		memset(b, 0, len);
		for (unsigned k = 0; k < 2; k++) {
			uint64_t q = seq - k;
			struct chj_superblock *sb = (void *)(b + (q % CHJ_SB_COPIES) * CHJ_BLOCK_SIZE);

			memcpy(sb, one, sizeof(one));
			sb->version = chj_cpu32(1);
			sb->seq = chj_cpu64(q);
			sb->csum = chj_cpu32(chj_block_csum(sb, CHJ_SB_BYTES));
		}
	}
	if (pwrite(fd, b, len, 0) != (ssize_t)len || fsync(fd)) {
		perror(argv[1]);
		return 1;
	}
	close(fd);
	free(b);
	return 0;
}
