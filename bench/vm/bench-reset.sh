#!/bin/bash
# Over-report after a guest reset (scripts/bench reset; a benchmark, not a
# test of make check): a workload runs on dm-chj (format 2, 4 KiB regions,
# 4 MiB chunks) over a file-backed virtio origin, the guest is reset
# (sysrq b: no sync, like a power cut) DELAY ms after its first writes
# completed, and the next boot compares what `chj changes --since E`
# reports with what truly changed: the regions whose content differs from
# the copy of the origin taken at the checkpoint that began epoch E
# (tests/tools/changes-cover).  A missed region fails the run; the
# over-report is reported / changed regions.  One reset per boot; the
# workloads in turn, BENCH_RESET_REPS times each:
#
#   qd1   random 4 KiB O_DIRECT writes, one at a time (tests/tools/aio-randwrite)
#   qd32  the same, 32 in flight
#   seq   1 MiB sequential O_DIRECT writes, 8 in flight, at 64 MiB/s (fio,
#         fresh data)
#   ext4  fio on ext4 (mounted noatime): 8 files of 4 MiB laid out, then
#         random 4 KiB buffered writes with an fsync every 16
#
# Writes carry fresh random data, so a written region differs from the copy
# unless the reset lost it; "changed" is a lower bound of "written" (a write
# in flight at the reset may have reached the disk or not).  Results go to
# $CHJ_OUT/bench for chj-benchdb import (kind "reset").
# vm-disks: 64M 1G 1G
# vm-timeout: 1800
# vm-boots: 40
# vm-mem: 3072
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
if [ -f "$CHJ_ROOT/build/bench/reset-params.env" ]; then
	# shellcheck source=/dev/null
	. "$CHJ_ROOT/build/bench/reset-params.env"
fi
REPS=${BENCH_RESET_REPS:-3}
read -ra WORKLOADS <<<"${BENCH_RESET_WORKLOADS:-qd1 qd32 seq ext4}"
SIZE_MIB=${BENCH_RESET_SIZE_MIB:-1024}	# origin length used
DELAY_MS=${BENCH_RESET_DELAY_MS:-2000}	# reset this long after the first writes
# seq's rate: unlimited, it writes the whole GiB before the reset point
# (about 1.4 GiB/s here), and every region is then truly changed.
SEQ_RATE=${BENCH_RESET_SEQ_RATE:-64m}
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover
AIO=$CHJ_ROOT/tests/tools/aio-randwrite
META=/dev/vda ORIG=/dev/vdb BASE=/dev/vdc
L=$((SIZE_MIB << 11))
OUT=$CHJ_OUT/bench
STATE=$CHJ_OUT/state
NRUNS=$((REPS * ${#WORKLOADS[@]}))
[ "$(sectors $ORIG)" -ge $L ] || fail "$ORIG is smaller than $SIZE_MIB MiB"

up() {
	dm_create og "0 $L linear $ORIG 0" >/dev/null
	dm_create c "$(chj_table $META /dev/mapper/og 8 $L)" >/dev/null
}

if [ "$CHJ_BOOT" = 1 ]; then
	mkdir -p "$OUT/out"
	: >"$OUT/manifest.tsv"
	: >"$OUT/extra.tsv"
	{
		printf 'kind\treset\n'
		printf 'kernel\t%s\n' "$(uname -r)"
		printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		printf 'backing\tvirtio\n'
		printf 'params\treps=%s size_mib=%s delay_ms=%s workloads=%s seq_rate=%s region=4k chunk=4M\n' \
			"$REPS" "$SIZE_MIB" "$DELAY_MS" "$(IFS=,; echo "${WORKLOADS[*]}")" "$SEQ_RATE"
		printf 'guest\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr ' ' _)x$(nproc)"
	} >"$OUT/run.tsv"
	log "boot 1: format, $SIZE_MIB MiB origin"
	$CHJ format $META --origin-size $((L * 512)) --force >/dev/null
	up
else
	# shellcheck disable=SC1090
	. "$STATE"	# I (run index), W (workload), E (epoch), REP, WRITES
	up
	n=$((CHJ_BOOT - 1))
	$CHJ changes --since "$E" c >/tmp/changes || fail "chj changes --since $E failed after the reset"
	stats=$(dmsetup message c 0 stats)
	cst=$($CHJ status c 2>&1 | tr '\n' ' ' || true)
	out=$($COVER $BASE /dev/mapper/og 8 /tmp/changes $L) || {
		echo "$out"
		fail "a change was missed across reset $n ($W)"
	}
	# "differ N covered N reported N sectors" (regions, regions, sectors)
	read -r _ differ _ _ _ rep_s _ <<<"$out"
	reported=$((rep_s / 8))
	ratio=$(awk -v r="$reported" -v d="$differ" 'BEGIN { if (d > 0) printf "%.3f", r / d; else print "nan" }')
	log "reset $n ($W, rep $REP): changed $differ regions, reported $reported: over-report $ratio"
	f=out/$(printf %02d "$n")-$W-$REP.txt
	{
		echo "workload=$W rep=$REP epoch=$E delay_ms=$DELAY_MS writes_before_reset_point=$WRITES"
		echo "changes-cover: $out"
		echo "stats after reload: $stats"
		echo "chj status: $cst"
		echo "changes:"
		cat /tmp/changes
	} >"$OUT/$f"
	printf '%s\tchj\treset-%s\t%s\ttext\t%s\n' "$n" "$W" "$REP" "$f" >>"$OUT/manifest.tsv"
	{
		printf 'chj\treset-%s\t%s\tchanged_regions\t%s\n' "$W" "$REP" "$differ"
		printf 'chj\treset-%s\t%s\treported_regions\t%s\n' "$W" "$REP" "$reported"
		[ "$differ" = 0 ] || printf 'chj\treset-%s\t%s\tover_report\t%s\n' "$W" "$REP" "$ratio"
		printf 'chj\treset-%s\t%s\treset_delay_ms\t%s\n' "$W" "$REP" "$DELAY_MS"
		printf 'chj\treset-%s\t%s\tmarked_chunks\t%s\n' "$W" "$REP" \
			"$(sed -n 's/.*marked_chunks=\([0-9]*\).*/\1/p' <<<"$stats")"
	} >>"$OUT/extra.tsv"
	if [ "$n" -ge "$NRUNS" ]; then
		log "$n resets, every one verified"
		dmsetup remove c
		dmsetup remove og
		exit 0
	fi
fi

I=$((CHJ_BOOT - 1))
W=${WORKLOADS[$((I % ${#WORKLOADS[@]}))]}
REP=$((I / ${#WORKLOADS[@]} + 1))
if [ "$W" = ext4 ]; then
	# A filesystem made and filled before the epoch, unmounted for the copy.
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/c
	mkdir -p /tmp/t
	mount -o noatime /dev/mapper/c /tmp/t
	cp -a "$CHJ_ROOT/docs" /tmp/t/docs
	umount /tmp/t
fi
# The next epoch: checkpoint, then copy the origin (the backup's view).
E=$(dmsetup message c 0 checkpoint)
dd if=/dev/mapper/og of=$BASE bs=1M count="$SIZE_MIB" iflag=direct oflag=direct conv=fsync status=none
seed=$((CHJ_BOOT * 7919 + 13))
case $W in
qd1 | qd32)
	coproc JOB { exec "$AIO" /dev/mapper/c $((L / 2)) "${W#qd}" 1 60 20; }
	read -r -t 60 -u "${JOB[0]}" line || fail "aio-randwrite did not start writing"
	assert_eq started "$line" "aio-randwrite"
	;;
seq | ext4)
	if [ "$W" = seq ]; then
		fio --name=seq --filename=/dev/mapper/c --rw=write --bs=1M --ioengine=libaio \
			--iodepth=8 --direct=1 --refill_buffers=1 --randseed=$seed --size="${SIZE_MIB}M" \
			--rate="$SEQ_RATE" \
			--eta=never --output=/dev/null &
	else
		mount -o noatime /dev/mapper/c /tmp/t
		fio --name=fs --directory=/tmp/t --nrfiles=8 --filesize=4M --size=32M \
			--rw=randwrite --bs=4k --ioengine=psync --fsync=16 --refill_buffers=1 \
			--randseed=$seed --runtime=60 --time_based=1 --eta=never --output=/dev/null &
	fi
	# Wait for the first 20 writes to complete (fio takes a second or
	# more to start under TCG).
	for _ in $(seq 600); do
		dm_writes c
		[ "$DM_WRITES" -lt 20 ] || break
		sleep 0.1
	done
	[ "$DM_WRITES" -ge 20 ] || fail "$W: no writes after 60 s"
	;;
esac
dm_writes c
WRITES=$DM_WRITES
echo "I=$I W=$W E=$E REP=$REP WRITES=$WRITES" >"$STATE"
log "run $((I + 1))/$NRUNS: $W (rep $REP), epoch $E copied; reset $DELAY_MS ms after writes began"
printf -v secs '%d.%03d' $((DELAY_MS / 1000)) $((DELAY_MS % 1000))
sleep "$secs"
vm_crash
