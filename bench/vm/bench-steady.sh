#!/bin/bash
# Steady state only, more precisely than scripts/bench's short jobs:
# dm-linear and dm-chj (every region marked with mark_all, so no write is a
# first touch) alternate on the same brd RAM disks, 24 repetitions of
# 100000 random 4 KiB O_DIRECT writes at QD1 and at QD32 each (about
# 20 s a repetition under TCG; 8 gave a standard error of about 0.025 per
# ratio, too wide to place a 0.98 target).  If
# build/ref-dm-chj.ko exists (another build of the module, for example
# the previous commit's), it runs as a third target "ref".  Not part of
# make check: run with scripts/vm-test bench-steady and compare the
# per-repetition ratios printed at the end.  The variables below are read
# in the guest (scripts/vm-test does not pass the host's environment:
# edit their defaults to change them).  STEADY_JOBS=2 runs each job
# as two fio jobs at once (one per vCPU of the guest's two, each its own
# half of the device; IOPS summed): the fast path's shared lines, if any,
# show there.  STEADY_REPS, STEADY_NIOS: fewer repetitions, I/Os per job.
# vm-timeout: 3600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
SIZE_MIB=1024
NIOS=${STEADY_NIOS:-100000}
JOBS=${STEADY_JOBS:-1}
REPS=${STEADY_REPS:-24}
REF=$CHJ_ROOT/build/ref-dm-chj.ko
brd_setup 2 $((SIZE_MIB << 10))
dd if=/dev/zero of=/dev/ram1 bs=1M count=$SIZE_MIB oflag=direct status=none
S=$(sectors /dev/ram1)
cfgs="linear chj"
[ -f "$REF" ] && cfgs="linear chj ref"

iops() {	# QD
	local engine=psync
	[ "$1" -gt 1 ] && engine=libaio
	fio --name=b --filename=/dev/mapper/b --rw=randwrite --bs=4k --direct=1 \
		--ioengine=$engine --iodepth="$1" --number_ios="$NIOS" --randrepeat=0 \
		--norandommap --size=$((SIZE_MIB / JOBS))M --offset_increment=$((SIZE_MIB / JOBS))M \
		--numjobs="$JOBS" --group_reporting --output-format=terse --terse-version=3 \
		--eta=never | cut -d';' -f49
}

: >/tmp/results
for rep in $(seq "$REPS"); do
	for cfg in $cfgs; do
		dd if=/dev/zero of=/dev/ram0 bs=1M count=8 oflag=direct status=none
		case $cfg in
		linear) dmsetup create b --table "0 $S linear /dev/ram1 0" ;;
		*)
			if [ "$cfg" = ref ]; then use_module "$REF"; else use_module "$CHJ_KO"; fi
			dmsetup create b --table "0 $S chj /dev/ram0 /dev/ram1 8"
			dmsetup message b 0 mark_all
			;;
		esac
		dmsetup mknodes b
		echo "$rep $cfg $(iops 1) $(iops 32)" | tee -a /tmp/results
		dmsetup remove b
	done
done
# Per-repetition ratio against dm-linear: mean, sd, min, max.
for cfg in $cfgs; do
	[ "$cfg" = linear ] && continue
	for col in 3 4; do
		awk -v cfg="$cfg" -v col="$col" '
			$2 == "linear" { lin[$1] = $col }
			$2 == cfg { r = $col / lin[$1]; n++; s += r; ss += r * r
				if (n == 1 || r < lo) lo = r; if (n == 1 || r > hi) hi = r }
			END { m = s / n; sd = sqrt((ss - n * m * m) / (n - 1))
				printf "RATIO %s/linear %s n=%d mean %.3f sd %.3f min %.3f max %.3f\n",
					cfg, (col == 3 ? "QD1" : "QD32"), n, m, sd, lo, hi }' /tmp/results
	done
done
