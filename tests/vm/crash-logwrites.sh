#!/bin/bash
# dm-chj's write-ahead rule, checked at every crash point of a dm-log-writes
# log (fio and ext4 workloads, checkpoints under load) by
# tests/logwrites/lw-replay; and the checker's controls: a tracker that
# reports nothing, and models that drop or ignore the target's marks, fail.
# Two configurations (region size 8, no delay; 128 with 1 ms metadata
# delay and torn writes); a short run (VM_SHORT=1) runs the second.
# The guest runs the workloads and saves each log to the results share;
# the replays and controls run on the host once the guest has passed
# (tests/logwrites/check-saved): lw-replay reads the log and nothing of
# the kernel, and natively its 20 s per configuration under TCG take 1.
# vm-host-check: tests/logwrites/check-saved
# vm-timeout: 900
# vm-mem: 3072
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/logwrites.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/logwrites.sh"

# The origin (256 MiB): [0, 96 MiB) for fio, the rest an ext4 ("fs" over c).
RAW_MIB=96
FS_S=$((LW_ORIG_S - (RAW_MIB << 11)))
MNT=/tmp/mnt

t_start=$SECONDS
elapsed() { echo "$((SECONDS - t_start)) s"; }

# fio_raw JOBNAME [fio options...]: fio on the chj device's raw area.
fio_raw() {
	local name=$1
	shift
	fio --name="$name" --filename=/dev/mapper/c --size=${RAW_MIB}M --direct=1 \
		--randrepeat=0 --eta=never --output=/dev/null "$@" ||
		fail "fio $name"
}

# mkfile FILE SIZE_KiB: a file of random content.
mkfile() { head -c "$(($2 * 1024))" /dev/urandom >"$1"; }

# ckpt [WHY]: end the chj epoch, log the new one.
ckpt() {
	local e
	e=$(dmsetup message c 0 checkpoint) || fail "checkpoint"
	log "checkpoint${1:+ $1}: epoch $e"
}

# baseline: content before the mark: raw data, an ext4 with files.
baseline() {
	fio_raw base --rw=write --bs=1M --ioengine=psync --io_size=32M --offset=16M
	dm_create fs "0 $FS_S linear /dev/mapper/c $((RAW_MIB << 11))" >/dev/null
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/fs
	mkdir -p $MNT
	mount -t ext4 /dev/mapper/fs $MNT
	mkdir $MNT/base
	for i in $(seq 1 30); do mkfile "$MNT/base/f$i" 300; done
	umount $MNT
}

# workload IOS: everything after the mark; checkpoints in the middle, three
# of them while fio is writing.
workload() {
	local ios=$1 pid i
	log "fio: random 4K, QD1, fsync every 16 ($ios writes)"
	fio_raw r1 --rw=randwrite --bs=4k --ioengine=psync --number_ios="$ios" --fsync=16
	log "fio: random 4K, QD8 libaio, O_SYNC (FUA) ($ios writes)"
	fio_raw r2 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --sync=1 \
		--number_ios="$ios"
	# Several writes in flight to each fresh region: a fast path that let
	# them through before the region's mark is durable would show here.
	log "fio: sequential 4K, QD8 libaio, O_SYNC (FUA), 4 MiB"
	fio_raw s0 --rw=write --bs=4k --ioengine=libaio --iodepth=8 --sync=1 \
		--offset=64M --io_size=4M
	ckpt
	log "fio: sequential 64K, QD4, 16 MiB, fsync at the end"
	fio_raw s1 --rw=write --bs=64k --ioengine=libaio --iodepth=4 --offset=40M \
		--io_size=16M --end_fsync=1
	log "fio: random 16K QD4 for 3 s, three checkpoints under it"
	fio_raw r3 --rw=randwrite --bs=16k --ioengine=libaio --iodepth=4 \
		--number_ios="$ios" --fsync=64 --rate_iops=$((ios / 3)) &
	pid=$!
	for i in 1 2 3; do
		sleep 0.7
		ckpt "under load"
	done
	wait $pid || fail "fio r3"

	log "ext4: create, overwrite, fsync, delete, fstrim, sync"
	mount -t ext4 /dev/mapper/fs $MNT
	mkdir -p $MNT/new
	for i in $(seq 1 24); do mkfile "$MNT/new/f$i" $((i * 37)); done
	for i in $(seq 1 8); do
		dd if=/dev/urandom of="$MNT/base/f$i" bs=4k count=2 seek=$((i * 3)) \
			conv=notrunc,fsync status=none
	done
	rm -f $MNT/base/f1[0-9]
	sync
	ckpt
	cp -r $MNT/new $MNT/copy
	rm -rf $MNT/new
	fstrim $MNT
	umount $MNT
	dmsetup remove fs
	log "fio: a last burst, no flush after it"
	fio_raw r4 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --number_ios=200
}

# The whole test is one function, parsed before it runs: editing this file
# while a run is in progress cannot break that run.
main() {
	# (The checker's self-test on synthetic logs, tests/logwrites/selftest.py,
	# needs no kernel: make check runs it on the host, unit:lw-replay.)
	# Region size, fio writes per job, metadata write delay (ms), extra checks.
	# Torn metadata writes triple the states to check: only in the second run.
	# A short run (make check's second kernel) checks the second only.
	specs=("8 1500 0" "128 600 1 --torn")
	! short || specs=("${specs[1]}")
	# Clean passes four times a second: with chunk marks carried over the
	# checkpoints and marked in groups, the passes' bitmap writes and
	# retire commits are most of the metadata writes, each a crash point.
	echo 250 >/sys/module/dm_chj/parameters/clean_interval_ms
	for spec in "${specs[@]}"; do
		read -r RS IOS DELAY EXTRA <<<"$spec"
		log "=== region size $RS sectors, metadata writes delayed $DELAY ms"
		lw_up "$RS" "$DELAY"
		baseline
		lw_mark
		log "baseline: epoch $E begins at log mark 'base' ($(elapsed))"
		workload "$IOS"
		log "chj status: $(dmsetup status c)"
		log "chj stats: $(dmsetup message c 0 stats)"
		log "log-writes status: $(dmsetup status lw)"
		lw_down
		log "workload done ($(elapsed))"

		# The replay reads the log, nothing of the kernel: the host runs it
		# (tests/logwrites/check-saved, this test's vm-host-check), natively.
		lw_save_log "$CHJ_OUT/lw-rs$RS.bin"
		echo "E=$E LW_META_S=$LW_META_S LW_ORIG_S=$LW_ORIG_S DELAY=$DELAY EXTRA='$EXTRA'" >"$CHJ_OUT/lw-rs$RS.txt"
		echo "$RS" >>"$CHJ_OUT/lw-logs"
	done
	log "all done ($(elapsed))"
}
main; exit
