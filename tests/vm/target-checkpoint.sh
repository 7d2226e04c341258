#!/bin/bash
# Checkpoints under concurrent fio, with the metadata device slowed by
# dm-delay to widen races.  Ground truth by content: right after each
# checkpoint returns epoch E, the origin is copied (as a backup taken then
# would see it); at the end every region that differs from that copy must be
# in `chj changes --since E`.  Then a live reload under the same load.
# vm-timeout: 600
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"
# shellcheck source=tests/vm/_chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover

brd_setup 2 65536
MS=$(sectors /dev/ram0)
dmsetup create md --table "0 $MS delay /dev/ram0 0 0 /dev/ram0 0 3"
dev=$(dm_create t "$(chj_table "$(dm_node md)" /dev/ram1 8)")
head -c 64M /dev/urandom | dd of="$dev" bs=1M oflag=direct status=none

run_fio() {	# SECONDS SEED
	fio --name=rw --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=8 --numjobs=2 --rate_iops=60 \
		--time_based --runtime="$1" \
		--randseed="$2" --eta=never --output=/dev/null &
	fio_pid=$!
}

log "checkpoints while fio writes"
run_fio 20 11
epochs=()
while kill -0 $fio_pid 2>/dev/null && [ ${#epochs[@]} -lt 6 ]; do
	e=$(dmsetup message t 0 checkpoint)
	dd if="$dev" of="/tmp/snap.$e" bs=1M iflag=direct status=none
	epochs+=("$e")
	log "epoch $e copied"
done
wait $fio_pid
[ ${#epochs[@]} -ge 2 ] || fail "only ${#epochs[@]} checkpoints during the run"

log "every region changed after a checkpoint is reported since that epoch"
dd if="$dev" of=/tmp/final bs=1M iflag=direct status=none
for e in "${epochs[@]}"; do
	$CHJ changes --since "$e" t >/tmp/changes
	out=$($COVER "/tmp/snap.$e" /tmp/final 8 /tmp/changes) || { echo "$out"; fail "epoch $e: missed changes"; }
	log "since $e: $out"
	rm -f "/tmp/snap.$e"
done

log "reload under load keeps every mark"
e=$(dmsetup message t 0 checkpoint)
dd if="$dev" of=/tmp/snap bs=1M iflag=direct status=none
run_fio 10 12
for _ in 1 2 3; do
	dmsetup load t --table "$(chj_table /dev/mapper/md /dev/ram1 8)"
	dmsetup resume t
done
wait $fio_pid
dd if="$dev" of=/tmp/final bs=1M iflag=direct status=none
$CHJ changes --since "$e" t >/tmp/changes
out=$($COVER /tmp/snap /tmp/final 8 /tmp/changes) || { echo "$out"; fail "reload: missed changes"; }
log "since $e across reloads: $out"
dmsetup remove t md
log "ok"
