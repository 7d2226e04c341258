#!/bin/bash
# First touch against dm-linear on a write-back virtio disk (issue 37's
# shape): 1 GiB file-backed virtio origin, metadata on a second one (QEMU's
# default cache mode: each FUA costs the host an fdatasync), 4 KiB random
# O_DIRECT writes spread over the whole device, QD1 (psync, FT_NIOS1 writes)
# and QD32 (libaio, FT_NIOS32).  Five cases, interleaved in each of FT_REPS
# rounds (the module's parameters at their defaults unless said):
#   linear      dm-linear (the device's blocks written before: no host
#               allocation on any case's first write)
#   fresh       dm-chj on freshly formatted metadata
#   fresh-nogroup  the same with mark_group=1 (a mark per chunk)
#   ckpt        dm-chj right after a checkpoint that ended an epoch of the
#               same random writes (carry_marks=Y)
#   ckpt-nocarry  the same with carry_marks=N
# Prints "RESULT rep=R case=C qd=Q iops=N" and, at the end, each case's
# median over the rounds as a ratio to linear's; then how long the chunks a
# checkpoint carried stay marked when nothing writes to them (the window
# in which a crash counts them whole in the new epoch: "CARRIED ...").  Not part of make check
# (timings under TCG are noisy, so only ratios from one interleaved run):
#   scripts/vm-test bench-firsttouch   (FT_REPS=5 by default: read in the
#   guest, which does not see the host's environment; edit to change)
# vm-disks: 1G 64M
# vm-timeout: 5400
# vm-mem: 2048
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
REPS=${FT_REPS:-5}
NIOS1=${FT_NIOS1:-3072}
NIOS32=${FT_NIOS32:-6144}
ORIGIN=/dev/vda
META=/dev/vdb
S=$(sectors $ORIGIN)
P=/sys/module/dm_chj/parameters/carry_marks
G=/sys/module/dm_chj/parameters/mark_group
{ [ -w $P ] && [ -w $G ]; } || fail "dm_chj has no carry_marks or mark_group parameter"

# Allocate every block of both backing files on the host first.
dd if=/dev/zero of=$ORIGIN bs=1M oflag=direct status=none || true
dd if=/dev/zero of=$META bs=1M oflag=direct status=none || true

# fio_iops QD NIOS SEED: random 4 KiB writes on /dev/mapper/b; prints IOPS.
fio_iops() {
	local engine=psync
	[ "$1" -gt 1 ] && engine=libaio
	fio --name=b --filename=/dev/mapper/b --rw=randwrite --bs=4k --direct=1 \
		--ioengine=$engine --iodepth="$1" --number_ios="$2" --randrepeat=0 \
		--randseed="$3" --size=$((S / 2048))M --output-format=terse \
		--terse-version=3 --eta=never | cut -d';' -f49
}

# up CASE: the device b for the case, ready for the measured job.
up() {
	case $1 in
	linear) dmsetup create b --table "0 $S linear $ORIGIN 0" ;;
	*)
		dd if=/dev/zero of=$META bs=1M count=4 oflag=direct status=none
		dmsetup create b --table "0 $S chj $META $ORIGIN 8"
		;;
	esac
	dmsetup mknodes b
	case $1 in
	fresh-nogroup) echo 1 >$G ;;
	ckpt | ckpt-nocarry)
		[ "$1" = ckpt ] && echo Y >$P || echo N >$P
		# An epoch of the same writes, then the checkpoint that ends it.
		fio_iops 32 "$NIOS32" $((RANDOM + 1)) >/dev/null
		dmsetup message b 0 checkpoint >/dev/null
		;;
	esac
}

declare -A all
for rep in $(seq "$REPS"); do
	for qd in 1 32; do
		n=$NIOS1
		[ $qd = 1 ] || n=$NIOS32
		for case in linear fresh fresh-nogroup ckpt ckpt-nocarry; do
			up $case
			iops=$(fio_iops $qd "$n" $((rep * 100 + qd)))
			[ -n "$iops" ] || fail "no IOPS from fio ($case qd$qd)"
			stats=
			[ $case = linear ] || stats=" $(dmsetup message b 0 stats | tr ' ' '\n' | grep -E '^(commits|chunk_marks|deferred_bios)=' | tr '\n' ' ')"
			echo "RESULT rep=$rep case=$case qd=$qd iops=$iops$stats"
			all[$case.$qd]="${all[$case.$qd]:-} $iops"
			dmsetup remove b
			echo Y >$P
			echo 8 >$G
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for qd in 1 32; do
	lin=$(median <<<"${all[linear.$qd]}")
	for case in fresh fresh-nogroup ckpt ckpt-nocarry; do
		m=$(median <<<"${all[$case.$qd]}")
		echo "MEDIAN qd=$qd case=$case iops=$m linear=$lin ratio=$(awk -v a="$m" -v b="$lin" 'BEGIN { printf "%.3f", a / b }')"
	done
done

# The carried chunks' lifetime when idle: an epoch of random writes over
# the device, the checkpoint carries its chunks, then no write; polled
# every 50 ms until the cleaner has retired them all.
up ckpt
n0=$(dmsetup message b 0 stats | tr ' ' '\n' | sed -n 's/^marked_chunks=//p')
t0=$(date +%s%N)
while [ "$(dmsetup message b 0 stats | tr ' ' '\n' | sed -n 's/^marked_chunks=//p')" != 0 ]; do
	[ $(($(date +%s%N) - t0)) -lt 30000000000 ] || fail "carried chunks still marked after 30 s"
	sleep 0.05
done
echo "CARRIED chunks=$n0 retired_after_ms=$((($(date +%s%N) - t0) / 1000000)) clean_interval_ms=$(cat /sys/module/dm_chj/parameters/clean_interval_ms)"
dmsetup remove b
