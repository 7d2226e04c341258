#!/bin/bash
# dm-chj's write-ahead order, proven from block traces (tests/order/
# order-check): every first write to a region in an epoch is issued only
# after a write of its chunk's mark (format 2: a superblock write) was
# queued and became durable, and no chunk mark is retired before the exact
# bits of the regions written under it are; raw fio and filesystem
# workloads, metadata on brd, dm-delay over brd and a file-backed virtio
# disk (a volatile write cache: real FUA and flushes).
# vm-disks: 64M 256M
# The block events on from boot (tests/vm/lib/order.sh, order_start):
# vm-append: trace_event=block:block_bio_queue,block:block_bio_complete,block:block_rq_issue,block:block_rq_complete
# vm-timeout: 900
# vm-mem: 3072
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/order.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/order.sh"

ORIG_MIB=384
TRACE=/tmp/order-trace.txt
# Clean passes every 100 ms instead of 1 s: chunks go idle and are retired
# (and marked again) inside the workloads, so the traces hold retires.
echo 100 >/sys/module/dm_chj/parameters/clean_interval_ms
MNT=/tmp/mnt
t_start=$SECONDS
elapsed() { echo "$((SECONDS - t_start)) s"; }

# fio_c JOBNAME [fio options...]: fio on the chj device, first 128 MiB.
fio_c() {
	local name=$1
	shift
	fio --name="$name" --filename=/dev/mapper/c --size=128M --direct=1 \
		--randrepeat=0 --eta=never --output=/dev/null "$@" || fail "fio $name"
}

# up META ORIGIN RS: a chj device c over dm-log-writes on META (its log on
# /dev/ram2: the superblock writes' contents, order-check --log); clears the
# metadata's first 4 MiB so that it is formatted afresh; then the trace
# begins, before anything writes to c.
up() {
	dd if=/dev/zero of="$1" bs=1M count=4 oflag=direct status=none
	order_log_up "$1" /dev/ram2
	dm_create c "$(chj_table "$ORDER_LW" "$2" "$3")" >/dev/null
	order_start c
}
# down: the trace stopped, c and the log removed (the log complete).
down() {
	order_stop $TRACE
	dmsetup remove c
	order_log_down
}

# n COUNT: COUNT scaled by $SCALE percent (slow metadata runs fewer writes).
n() { echo $(($1 * SCALE / 100)); }

# raw_workloads: checkpoints between and under the jobs.
raw_workloads() {
	local pid
	order_ckpt c >/dev/null
	log "  QD1 psync random 4K"
	fio_c qd1 --rw=randwrite --bs=4k --ioengine=psync --number_ios="$(n 1500)"
	order_ckpt c >/dev/null
	log "  QD32 libaio random 4K, two checkpoints under it"
	fio_c qd32 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=32 --number_ios="$(n 4000)" &
	pid=$!
	sleep 0.5; order_ckpt c >/dev/null
	sleep 0.5; order_ckpt c >/dev/null
	wait $pid || fail "fio qd32"
	order_ckpt c >/dev/null
	log "  sequential 4K QD8, 8 MiB"
	fio_c seq --rw=write --bs=4k --ioengine=libaio --iodepth=8 --offset=64M --io_size=8M
	log "  mixed sizes 512 B - 1 MiB, QD8"
	fio_c mixed --rw=randwrite --bssplit=512/20:4k/40:16k/20:64k/15:1m/5 --ioengine=libaio \
		--iodepth=8 --number_ios="$(n 800)"
	order_ckpt c >/dev/null
	log "  O_SYNC random 4K QD4"
	fio_c osync --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --sync=1 --number_ios="$(n 800)"
	log "  fsync every 8, QD1"
	fio_c fsync --rw=randwrite --bs=4k --ioengine=psync --fsync=8 --number_ios="$(n 800)"
	order_ckpt c >/dev/null
	log "  four jobs at once, QD4 each"
	fio_c jobs --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --numjobs=4 --number_ios="$(n 600)"
	if [ "$(cat "/sys/block/$(basename "$(readlink -f "$ORIGIN")")/queue/discard_max_bytes")" != 0 ]; then
		order_ckpt c >/dev/null
		log "  discards mixed with writes, QD4"
		fio_c trim --rw=randtrim --bs=64k --ioengine=libaio --iodepth=4 --number_ios="$(n 300)"
		fio_c trimw --rw=randrw --rwmixread=0 --bs=4k --ioengine=libaio --iodepth=4 --number_ios="$(n 300)"
		DISCARDS=$((DISCARDS + 1))
	fi
}

# fs_workload DIR: file churn, fsync-heavy writes and a sqlite database
# (tests/order/fs-workload.py), two checkpoints while it runs.
fs_workload() {
	local pid
	order_ckpt c >/dev/null
	python3 "$CHJ_ROOT/tests/order/fs-workload.py" "$1" "$RANDOM" &
	pid=$!
	sleep 1; order_ckpt c >/dev/null
	sleep 1; order_ckpt c >/dev/null
	wait $pid || fail "the filesystem workload failed"
	order_ckpt c >/dev/null
	fstrim "$1" 2>/dev/null || true
}

# check_trace WHAT META: the checker on the trace, and the no-marks control.
check_trace() {
	local what=$1 meta=$2 out first
	log "trace: $(wc -l <$TRACE) lines ($(elapsed))"
	out=$(order_check c "$meta" $TRACE) || {
		printf '%s\n' "$out"
		cp $TRACE "$CHJ_OUT/trace-$what.txt"
		fail "write-ahead order violated ($what); trace in \$CHJ_OUT"
	}
	printf '%s\n' "$out"
	first=$(sed -n "s/.* \([0-9]*\) first writes checked.*/\1/p" <<<"$out")
	[ -n "$first" ] || fail "no first-write count"
	FIRST=$((FIRST + first))
	RETIRES=$((RETIRES + $(sed -n "s/.* \([0-9]*\) superblock writes that may retire.*/\1/p" <<<"$out")))
	echo "$what first_writes=$first" >>"$CHJ_OUT/numbers.txt"
	# The checker against a tracker that marks nothing: every first write fails.
	out=$(order_check c "$meta" $TRACE --fake-no-marks --max-report 0) &&
		fail "$what: the checker passed a trace with its marks ignored"
	grep -q "($first at first writes" <<<"$out" ||
		fail "$what: with marks ignored, not every first write failed: $(tail -n 1 <<<"$out")"
}

main() {
	FIRST=0 DISCARDS=0 RETIRES=0
	brd_setup 3 $((ORIG_MIB * 1024))	# ram2: the log
	dm_create md1 "0 $(sectors /dev/ram1) delay /dev/ram1 0 0 /dev/ram1 0 1" >/dev/null
	dm_create md5 "0 $(sectors /dev/ram1) delay /dev/ram1 0 0 /dev/ram1 0 5" >/dev/null
	# Raw workloads: metadata on a RAM disk, behind 5 ms of write delay
	# (dm-delay 1 ms carries btrfs below), and on a file-backed virtio disk (the origin there too, for
	# real discards).
	for spec in "brd /dev/ram1 /dev/ram0 8 60" "delay5 /dev/mapper/md5 /dev/ram0 128 10" \
		"virtio /dev/vda /dev/vdb 8 60"; do
		read -r what meta ORIGIN rs SCALE <<<"$spec"
		log "=== raw: metadata on $what ($meta), origin $ORIGIN, region size $rs sectors"
		up "$meta" "$ORIGIN" "$rs"
		raw_workloads
		down
		check_trace "raw-$what" "$meta"
	done
	[ $DISCARDS -gt 0 ] || fail "no origin took discards: the discard workload never ran"
	# Filesystems: ext4 on both kinds of metadata, XFS and btrfs on brd.
	mkdir -p $MNT
	for spec in "ext4 brd /dev/ram1" "ext4 virtio /dev/vda" "xfs brd /dev/ram1" "btrfs delay1 /dev/mapper/md1"; do
		read -r fs what meta <<<"$spec"
		log "=== $fs: metadata on $what ($meta)"
		up "$meta" /dev/ram0 8
		case $fs in
		ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/c ;;
		xfs) mkfs.xfs -q -f /dev/mapper/c ;;
		btrfs) mkfs.btrfs -q -f /dev/mapper/c ;;
		esac
		mount -t "$fs" /dev/mapper/c $MNT
		fs_workload $MNT
		umount $MNT
		down
		check_trace "$fs-$what" "$meta"
	done
	log "$FIRST first writes checked in all, $RETIRES retire points, 0 violations ($(elapsed))"
	[ "$RETIRES" -gt 0 ] || fail "no trace held a chunk mark retire"
	echo "total first_writes=$FIRST" >>"$CHJ_OUT/numbers.txt"
}
main; exit
