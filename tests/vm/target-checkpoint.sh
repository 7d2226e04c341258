#!/bin/bash
# Checkpoints under concurrent fio, twice: with the metadata device slowed by
# dm-delay to widen races, and on a RAM disk with fio unthrottled at QD32.
# Ground truth by content: right after each checkpoint returns epoch E, the origin is
# copied (as a backup taken then would see it); at the end every region that
# differs from that copy must be in `chj changes --since E`.  Then live
# reloads under the same load.  A short run (VM_SHORT=1) does the dm-delay
# pass only.
# vm-timeout: 600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover

# run_fio SECONDS SEED: fio in the background; returns once its writes have
# begun to complete (fio takes about a second to start under TCG), so that
# what follows really runs under load.
run_fio() {
	local w0
	dm_writes t
	w0=$DM_WRITES
	# shellcheck disable=SC2086
	fio --name=rw --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio $FIO_LOAD --numjobs=2 --time_based --runtime="$1" \
		--randseed="$2" --eta=never --output=/dev/null &
	fio_pid=$!
	until dm_writes t; [ "$DM_WRITES" -gt $((w0 + 20)) ]; do
		kill -0 $fio_pid 2>/dev/null || fail "fio stopped before writing"
		sleep 0.05
	done
}

# pass NAME MD_TABLE FIO_LOAD
pass() {
	log "=== $1"
	FIO_LOAD=$3
	brd_setup 2 65536
	MS=$(sectors /dev/ram0)
	dmsetup create md --table "0 $MS $2"
	dev=$(dm_create t "$(chj_table "$(dm_node md)" /dev/ram1 8)")
	head -c 64M /dev/urandom | dd of="$dev" bs=1M oflag=direct status=none

	# fio runs long enough for the six checkpoints and copies below (about
	# 0.7 s each), not much longer: the writes after the last one are more
	# of the same.
	log "checkpoints while fio writes"
	run_fio 10 11
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
	dd if="$dev" of=/tmp/final.img bs=1M iflag=direct status=none
	for e in "${epochs[@]}"; do
		$CHJ changes --since "$e" t >/tmp/changes
		out=$($COVER "/tmp/snap.$e" /tmp/final.img 8 /tmp/changes) || { echo "$out"; fail "epoch $e: missed changes"; }
		log "since $e: $out"
		rm -f "/tmp/snap.$e"
	done

	# Chunk marks are counted over the checkpoints under load (the
	# counters restart at a reload; after the reloads below fio finds
	# every chunk already marked).
	log "stats of the table under checkpoints: $(dmsetup message t 0 stats)"
	MARKS=$(chj_stat t chunk_marks)

	log "reload under load keeps every mark"
	e=$(dmsetup message t 0 checkpoint)
	dd if="$dev" of=/tmp/snap bs=1M iflag=direct status=none
	run_fio 4 12
	for _ in 1 2 3; do
		dmsetup load t --table "$(chj_table /dev/mapper/md /dev/ram1 8)"
		dmsetup resume t
	done
	wait $fio_pid
	dd if="$dev" of=/tmp/final.img bs=1M iflag=direct status=none
	$CHJ changes --since "$e" t >/tmp/changes
	out=$($COVER /tmp/snap /tmp/final.img 8 /tmp/changes) || { echo "$out"; fail "reload: missed changes"; }
	log "since $e across reloads: $out"
	log "stats since the last reload: $(dmsetup message t 0 stats)"
	dmsetup remove t md
}

# dm-delay's reads take 50 ms: on 6.12 (unlike 6.1) dm-delay runs
# tables whose longest delay is under 50 ms in a kthread that polls without
# sleeping and submits to the RAM disk itself, which completes there: the
# commit would look as if completed in its submitter.  At 50 ms it uses a
# timer and a workqueue, as 6.1 always does.  (The metadata is read here only
# by table loads and chj changes: the journal never fills.)
pass "metadata writes delayed 3 ms, fio at 60 IOPS per job" \
	"delay /dev/ram0 0 50 /dev/ram0 0 3" "--iodepth=8 --rate_iops=60"
[ "$MARKS" -gt 0 ] || fail "no chunk was marked"
if short; then log "ok (short run: the dm-delay pass only)"; exit 0; fi
pass "RAM-disk metadata, fio unthrottled at QD32" \
	"linear /dev/ram0 0" "--iodepth=32"
[ "$MARKS" -gt 0 ] || fail "no chunk was marked under QD32"
log "ok"
