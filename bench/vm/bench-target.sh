#!/bin/bash
# Quick interleaved comparison of dm-linear, dm-chj and dm-era on brd RAM
# disks: 4 KiB random O_DIRECT writes, first touch and steady state, QD1 and
# QD32.  Not part of make check (timings under TCG are noisy): run with
# scripts/vm-test bench-target and read the ratios.
# vm-timeout: 1500
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
REPS=${REPS:-1}
SIZE_MIB=512
brd_setup 2 $((SIZE_MIB << 10))
S=$(sectors /dev/ram1)
MS=$(sectors /dev/ram0)

mk() {	# TARGET RS
	dd if=/dev/zero of=/dev/ram0 bs=1M count=8 oflag=direct status=none
	case $1 in
	linear) dmsetup create b --table "0 $S linear /dev/ram1 0" ;;
	chj) dmsetup create b --table "0 $S chj /dev/ram0 /dev/ram1 $2" ;;
	era) dmsetup create b --table "0 $S era /dev/ram0 /dev/ram1 $2" ;;
	esac
	dmsetup mknodes b
}

iops() {	# QD NIOS
	local engine=psync
	[ "$1" -gt 1 ] && engine=libaio
	fio --name=b --filename=/dev/mapper/b --rw=randwrite --bs=4k --direct=1 \
		--ioengine=$engine --iodepth="$1" --number_ios="$2" --randrepeat=1 \
		--randseed=42 --size=${SIZE_MIB}M --output-format=terse --terse-version=3 \
		--eta=never | cut -d';' -f49
}

for rep in $(seq "$REPS"); do
	for cfg in "linear 8" "chj 8" "chj 128" "era 128"; do
		set -- $cfg
		for qd in 1 32; do
			mk "$1" "$2"
			[ "$1" = era ] && dmsetup message b 0 checkpoint >/dev/null
			first=$(iops "$qd" 8000)
			steady=$(iops "$qd" 8000)
			echo "RESULT rep=$rep target=$1 rs=$2 qd=$qd first_touch=$first steady=$steady"
			[ "$1" = chj ] && echo "STATS $(dmsetup message b 0 stats)"
			dmsetup remove b
		done
	done
done
