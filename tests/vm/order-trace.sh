#!/bin/bash
# dm-chj's write-ahead order, proven from block traces (tests/order/
# order-check): every first write to a region in an epoch is issued only
# after a write of its bitmap block was queued and became durable; raw fio
# and filesystem workloads, metadata on brd, dm-delay over brd and a
# file-backed virtio disk (a volatile write cache: real FUA and flushes).
# vm-disks: 64M 512M
# vm-timeout: 900
# vm-mem: 3072
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"
# shellcheck source=tests/vm/_chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_chj.sh"
# shellcheck source=tests/vm/_order.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_order.sh"

ORIG_MIB=384
TRACE=/tmp/order-trace.txt
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

# up META RS: a chj device c over /dev/ram0 with metadata META.
up() {
	dd if=/dev/zero of="$1" bs=1M count=4 oflag=direct status=none
	dm_create c "$(chj_table "$1" /dev/ram0 "$2")" >/dev/null
}
down() { dmsetup remove c; }

# raw_workloads: checkpoints between and under the jobs.
raw_workloads() {
	local pid
	order_ckpt c >/dev/null
	log "  QD1 psync random 4K"
	fio_c qd1 --rw=randwrite --bs=4k --ioengine=psync --number_ios=1500
	order_ckpt c >/dev/null
	log "  QD32 libaio random 4K, two checkpoints under it"
	fio_c qd32 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=32 --number_ios=4000 &
	pid=$!
	sleep 0.5; order_ckpt c >/dev/null
	sleep 0.5; order_ckpt c >/dev/null
	wait $pid || fail "fio qd32"
	order_ckpt c >/dev/null
	log "  sequential 4K QD8, 8 MiB"
	fio_c seq --rw=write --bs=4k --ioengine=libaio --iodepth=8 --offset=64M --io_size=8M
	log "  mixed sizes 512 B - 1 MiB, QD8"
	fio_c mixed --rw=randwrite --bssplit=512/20:4k/40:16k/20:64k/15:1m/5 --ioengine=libaio \
		--iodepth=8 --number_ios=800
	order_ckpt c >/dev/null
	log "  O_SYNC random 4K QD4"
	fio_c osync --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --sync=1 --number_ios=800
	log "  fsync every 8, QD1"
	fio_c fsync --rw=randwrite --bs=4k --ioengine=psync --fsync=8 --number_ios=800
	order_ckpt c >/dev/null
	log "  four jobs at once, QD4 each"
	fio_c jobs --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --numjobs=4 --number_ios=600
}

main() {
	brd_setup 2 $((ORIG_MIB * 1024))
	for spec in "brd /dev/ram1 8" "virtio /dev/vda 8"; do
		read -r what meta rs <<<"$spec"
		log "=== metadata on $what ($meta), region size $rs sectors"
		up "$meta" "$rs"
		order_start c
		raw_workloads
		order_stop $TRACE
		log "trace: $(wc -l <$TRACE) lines ($(elapsed))"
		order_check c "$meta" $TRACE || { cp $TRACE "$CHJ_OUT/trace-$what.txt"; fail "order violated ($what)"; }
		log "control: a checker that sees no marks must fail at every first write"
		out=$(order_check c "$meta" $TRACE --fake-no-marks --max-report 0) && fail "fake-no-marks passed"
		first=$(sed -n "s/.* \([0-9]*\) first writes checked.*/\1/p" <<<"$out")
		[ -n "$first" ] && grep -q "($first at first writes" <<<"$out" || fail "fake-no-marks: not every first write failed"
		printf '%s\n' "$out" | tail -n 2
		down
	done
	log "all done ($(elapsed))"
}
main; exit
