#!/bin/bash
# Sequential 4 KiB O_DIRECT writes on a fresh epoch: dm-linear vs dm-chj
# without and with mark_ahead, interleaved.  Not part of make check.
# vm-timeout: 900
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
brd_setup 2 $((256 << 10))
S=$(sectors /dev/ram1)
seqw() {
	fio --name=s --filename=/dev/mapper/b --rw=write --bs=4k --direct=1 --size=64M \
		--ioengine=psync --output-format=terse --terse-version=3 --eta=never | cut -d';' -f49
}
for rep in 1 2 3; do
	for t in "linear" "chj" "chj 2 mark_ahead 256"; do
		dd if=/dev/zero of=/dev/ram0 bs=1M count=4 oflag=direct status=none
		case $t in
		linear) dmsetup create b --table "0 $S linear /dev/ram1 0" ;;
		*) dmsetup create b --table "0 $S chj /dev/ram0 /dev/ram1 8${t#chj}" ;;
		esac
		dmsetup mknodes b
		echo "RESULT rep=$rep target='$t' seq4k_iops=$(seqw) $(dmsetup message b 0 stats 2>/dev/null || true)"
		dmsetup remove b
	done
done
