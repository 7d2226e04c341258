// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * vm-reseed HEX: mix HEX into the kernel's entropy pool and reseed its
 * random number generator at once (RNDRESEEDCRNG).  In the test VM's
 * initramfs (scripts/lib/mkinitramfs), for vm-init: a guest resumed from
 * the boot snapshot starts with the snapshot's generator state, and the
 * kernel would reseed it only later; without this, every boot of one
 * configuration would draw the same bytes at first (two mkfs.xfs in two
 * boots, the same UUID).
 */
#include <fcntl.h>
#include <linux/random.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: vm-reseed HEX\n");
		return 2;
	}
	fd = open("/dev/urandom", O_WRONLY);
	if (fd < 0 || write(fd, argv[1], strlen(argv[1])) < 0 ||
	    ioctl(fd, RNDRESEEDCRNG) < 0) {
		perror("vm-reseed: /dev/urandom");
		return 1;
	}
	return 0;
}
