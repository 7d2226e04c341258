#!/bin/bash
# Target benchmarks (run by scripts/bench, not by make check): fio jobs on
# dm-linear, dm-chj and dm-era over the same backing devices, targets
# interleaved A B C A B C ... for BENCH_REPS repetitions.  Writes fio's JSON
# and a manifest into $CHJ_OUT/bench for `chj-benchdb import`.
# vm-disks: 1G 64M
# vm-timeout: 7200
# vm-mem: 3072
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

# Parameters: scripts/bench writes build/bench/params.env before it boots
# the VM; the tests that source this script set them themselves (BENCH_SET=1):
# tests/vm/bench-smoke.sh, and the perf gate's tests/vm/lib/perf.sh.
if [ -z "${BENCH_SET:-}" ] && [ -f "$CHJ_ROOT/build/bench/params.env" ]; then
	# shellcheck source=/dev/null
	. "$CHJ_ROOT/build/bench/params.env"
fi
REPS=${BENCH_REPS:-5}
TARGETS=${BENCH_TARGETS:-linear chj chj64 era era64}
SIZE_MIB=${BENCH_SIZE_MIB:-1024}	# origin (data) size
META_MIB=${BENCH_META_MIB:-64}
NIOS=${BENCH_NIOS:-20000}		# I/Os per random job
CKPT_S=${BENCH_CKPT_SECONDS:-8}		# length of the checkpoint-under-load job
BACKING=${BENCH_BACKING:-brd}
# In this order: each *-first job starts a fresh epoch (dm-era: era) and
# writes NIOS distinct blocks, all first touches; seqwrite-1m starts one too
# and writes every block, so the *-steady jobs after it only write regions
# already marked in the current epoch.
JOBS=${BENCH_JOBS:-randwrite-qd1-first randwrite-qd32-first seqwrite-1m randwrite-qd1-steady randwrite-qd32-steady randread-qd1 randread-qd32 mix70-qd8 ckpt-under-load}

OUT=$CHJ_OUT/bench
mkdir -p "$OUT/fio"
: >"$OUT/manifest.tsv"
: >"$OUT/extra.tsv"

case $BACKING in
brd)
	brd_setup 2 $((SIZE_MIB > META_MIB ? SIZE_MIB << 10 : META_MIB << 10))
	ORIGIN=/dev/ram1 META_DISK=/dev/ram0
	;;
virtio)
	ORIGIN=/dev/vda META_DISK=/dev/vdb
	;;
*) fail "unknown BENCH_BACKING=$BACKING" ;;
esac
modprobe dm-era
# BENCH_TRACE=1: count the FUA and PREFLUSH bios queued on the metadata and
# origin devices (a hist trigger on block:block_bio_queue, read by the
# hook).  The block layer drops both flags before that tracepoint on a
# device without a volatile write cache, and brd has none (nor may it be
# set to "write back" since 6.0), so only the virtio backing (QEMU's
# default cache mode: a write-back cache, FUA emulated by a flush) shows
# them; dm-chj's own count of superblock writes (chj_sb_writes, every one
# FUA) is recorded on both.  Tracing costs every bio a little on every
# target: the ratio runs leave it off.
TRACE=${BENCH_TRACE:-0}
[ "$TRACE" != 1 ] || [ "$BACKING" = virtio ] || fail "BENCH_TRACE=1 needs the virtio backing"
S=$((SIZE_MIB << 11))
[ "$(sectors $ORIGIN)" -ge $S ] || fail "$ORIGIN is smaller than $SIZE_MIB MiB"
[ "$(sectors $META_DISK)" -ge $((META_MIB << 11)) ] || fail "$META_DISK is smaller than $META_MIB MiB"
# brd keeps no I/O statistics: the metadata device is a dm-linear over the
# disk (the same for dm-chj and dm-era), whose stat counts sectors written.
META=$(dm_create bmeta "0 $((META_MIB << 11)) linear $META_DISK 0")
META_STAT=/sys/dev/block/$(dmsetup info -c --noheadings -o major,minor bmeta | tr -d ' ')/stat
[ -f "$META_STAT" ] || fail "no $META_STAT"
if [ "$TRACE" = 1 ]; then
	T=/sys/kernel/tracing
	mountpoint -q $T || mount -t tracefs nodev $T
	kdev() { local d; read -ra d <<<"$(stat -L -c '%t %T' "$1")"; echo $(((16#${d[0]}) << 20 | 16#${d[1]})); }
	BENCH_META_KDEV=$(kdev "$META") BENCH_ORIGIN_KDEV=$(kdev "$ORIGIN")
	echo "hist:keys=dev,rwbs:vals=hitcount:size=256 if dev == $BENCH_META_KDEV || dev == $BENCH_ORIGIN_KDEV" \
		>$T/events/block/block_bio_queue/trigger || fail "cannot set the hist trigger"
	export BENCH_HIST=$T/events/block/block_bio_queue/hist BENCH_META_KDEV BENCH_ORIGIN_KDEV
	log "tracing FUA/PREFLUSH: meta $(<"${META_STAT%/stat}/queue/write_cache"), origin $(</sys/block/"$(basename "$ORIGIN")"/queue/write_cache)"
fi

# Allocate every page (brd) or block (virtio image file) once, so that no
# target pays for first allocation.
log "prefill $ORIGIN ($SIZE_MIB MiB) and $META ($META_MIB MiB)"
dd if=/dev/zero of=$ORIGIN bs=1M count="$SIZE_MIB" oflag=direct status=none
dd if=/dev/zero of="$META" bs=1M count="$META_MIB" oflag=direct status=none

params="reps=$REPS size_mib=$SIZE_MIB meta_mib=$META_MIB nios=$NIOS ckpt_s=$CKPT_S targets=${TARGETS// /,}"
[ "$TRACE" != 1 ] || params="$params trace=1"
[ -z "${BENCH_JOBS:-}" ] || params="$params jobs=${JOBS// /,}"
{
	printf 'kind\ttarget\n'
	printf 'kernel\t%s\n' "$(uname -r)"
	printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'backing\t%s\n' "$BACKING"
	printf 'params\t%s\n' "$params"
	printf 'guest\t%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr ' ' _)x$(nproc)"
} >"$OUT/run.tsv"

# Target "ref": dm-chj built from other sources (build/ref-dm-chj.ko, for
# example format 1's, the inline path) on the same table as "chj"; the
# module is swapped in for it and back after it (use_module, lib.sh).
# BENCH_MODULES="NAME=KO ...": more such targets, each on chj's table with
# its own build (the perf gate: base, slow, and this tree's again as "cur",
# so that every build compared is freshly loaded alike).
REF=$CHJ_ROOT/build/ref-dm-chj.ko
module_of() { # TARGET: the module it loads, or nothing (the loaded one)
	local m
	for m in ${BENCH_MODULES:-}; do
		[ "${m%%=*}" != "$1" ] || { echo "${m#*=}"; return; }
	done
	[ "$1" != ref ] || echo "$REF"
}
for target in $TARGETS; do
	ko=$(module_of "$target")
	[ -z "$ko" ] || [ -f "$ko" ] || fail "target $target: no $ko"
done

table() { # TARGET: the dm table for it
	case $1 in
	linear) echo "0 $S linear $ORIGIN 0" ;;
	chj) echo "0 $S chj $META $ORIGIN 8" ;;
	chj64) echo "0 $S chj $META $ORIGIN 128" ;;
	era) echo "0 $S era $META $ORIGIN 8" ;;
	era64) echo "0 $S era $META $ORIGIN 128" ;;
	*) [ -n "$(module_of "$1")" ] || fail "unknown target $1"
		echo "0 $S chj $META $ORIGIN 8" ;;
	esac
}

# The fio job definitions: rw bs engine iodepth seed [more fio options].
# Write jobs with the same seed write the same blocks: "steady" repeats
# "first" after it marked them.  Block size 4k everywhere except seqwrite.
jobdef() {
	case $1 in
	randwrite-qd1-first | randwrite-qd1-steady) echo "randwrite 4k psync 1 11" ;;
	randwrite-qd32-first | randwrite-qd32-steady) echo "randwrite 4k libaio 32 12" ;;
	seqwrite-1m) echo "write 1M libaio 8 13" ;;
	randread-qd1) echo "randread 4k psync 1 14" ;;
	randread-qd32) echo "randread 4k libaio 32 15" ;;
	mix70-qd8) echo "randrw 4k libaio 8 16 rwmixread=70" ;;
	ckpt-under-load) echo "randwrite 4k libaio 8 17 time_based=1 runtime=$CKPT_S" ;;
	*) fail "unknown job $1" ;;
	esac
}

# fio costs ~1.5 s to start under TCG (it links 64 libraries), so each
# target and repetition is one fio run of every job in turn (stonewall);
# `chj-benchguest hook` runs before each job (exec_prerun) and after the
# last to start epochs, read the metadata counters and time checkpoints
# under load.
jobfile() { # TARGET REP
	local job rw bs eng qd seed more o
	printf '[global]\nfilename=/dev/mapper/b\ndirect=1\nthread=1\nsize=%sM\n' "$SIZE_MIB"
	printf 'randrepeat=1\nallrandrepeat=1\nstonewall=1\n'
	for job in $JOBS; do
		read -r rw bs eng qd seed more <<<"$(jobdef "$job")"
		printf '\n[%s]\nrw=%s\nbs=%s\nioengine=%s\niodepth=%s\nrandseed=%s\n' \
			"$job" "$rw" "$bs" "$eng" "$qd" "$seed"
		[ "$job" = seqwrite-1m ] || [ "$job" = ckpt-under-load ] || printf 'number_ios=%s\n' "$NIOS"
		for o in $more; do printf '%s\n' "$o"; done
		printf 'exec_prerun=%s hook pre %s %s %s\n' "$GUEST" "$1" "$job" "$2"
	done
}

GUEST=$CHJ_ROOT/scripts/bench-db/chj-benchguest
[ -x "$GUEST" ] || fail "$GUEST is not built (make)"
export BENCH_OUT=$OUT BENCH_META_STAT=$META_STAT BENCH_CKPT_S=$CKPT_S
mkdir -p "$OUT/state"
seq_no=0
nfio=0

start=$SECONDS
log "backing $BACKING, $params"
# BENCH_ABBA=1: even repetitions run the targets in reverse order, so that
# whatever drifts over the boot (slab, page cache) falls on each alike.
for rep in $(seq "$REPS"); do
	order=$TARGETS
	if [ "${BENCH_ABBA:-0}" = 1 ] && [ $((rep % 2)) = 0 ]; then
		# shellcheck disable=SC2086 # one word per target
		order=$(printf '%s\n' $TARGETS | tac | tr '\n' ' ')
	fi
	for target in $order; do
		dd if=/dev/zero of="$META" bs=1M count=8 oflag=direct status=none
		ko=$(module_of "$target")
		[ -z "$ko" ] || use_module "$ko"
		dm_create b "$(table "$target")" >/dev/null
		file=fio/$(printf %03d $nfio)-$target-$rep.json
		jobfile "$target" "$rep" >"$OUT/state/job.fio"
		fio --eta=never --output-format=json --output="$OUT/$file" "$OUT/state/job.fio"
		"$GUEST" hook post "$target" - "$rep"
		nfio=$((nfio + 1))
		for job in $JOBS; do
			seq_no=$((seq_no + 1))
			printf '%s\t%s\t%s\t%s\tfio-json\t%s\n' "$seq_no" "$target" "$job" "$rep" "$file" >>"$OUT/manifest.tsv"
		done
		dmsetup remove b
		[ -z "$ko" ] || use_module "$CHJ_KO"
		log "rep $rep/$REPS $target done ($((SECONDS - start))s)"
	done
done
dmsetup remove bmeta
if [ -e "$OUT/state/errors" ]; then
	cat "$OUT/state/errors"
	fail "chj-benchguest hook reported errors ($(wc -l <"$OUT/state/errors") lines)"
fi
log "bench: $seq_no jobs in $nfio fio runs, $((SECONDS - start))s"
