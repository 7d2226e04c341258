#!/bin/bash
# The journal of closed epochs on a deliberately small metadata device:
# records span several blocks, the log wraps, the oldest epochs are dropped
# (oldest_epoch rises, `chj changes` exits 3 for them), an epoch too large
# for the whole journal drops all history, and every epoch still retained
# answers with no missed change (ground truth: origin copies taken right
# after each checkpoint).
# vm-timeout: 400
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover

brd_setup 2 65536
# 64 MiB origin = 16384 regions = 1 bitmap block; 2 + 1 + 10 journal blocks.
dmsetup create md --table "0 $((13 * 8)) linear /dev/ram0 0"
dev=$(dm_create t "$(chj_table "$(dm_node md)" /dev/ram1 8)")
assert_eq 10 "$(st t jblocks)" "journal blocks"

# runs N SKIP_KiB OFFSET_MiB: N separate 4 KiB writes with SKIP KiB holes.
runs() {
	fio --name=r --filename="$dev" --rw=write:"$2"k --bs=4k --direct=1 \
		--offset="$3"M --number_ios="$1" --size=$((64 - $3))M \
		--ioengine=psync --eta=never --output=/dev/null
}

declare -A snap_ok
snapshot() {	# after checkpoint E: copy the origin as a backup then sees it
	dd if="$dev" of="/tmp/snap.$1" bs=1M iflag=direct status=none
	snap_ok[$1]=1
}

e=$(dmsetup message t 0 checkpoint); snapshot "$e"
for i in 1 2 3 4 5 6; do
	runs 600 4 $((i * 4))	# 600 runs: 3 journal blocks per epoch
	e=$(dmsetup message t 0 checkpoint); snapshot "$e"
	log "epoch $e: oldest $(st t old), journal $(st t jused)/10"
done
old=$(st t old)
[ "$old" -gt 2 ] || fail "journal never wrapped (oldest $old)"
[ "$(st t jused)" -le 10 ] || fail "journal over capacity"

log "dropped epochs are refused with exit 3, retained ones are complete"
dd if="$dev" of=/tmp/final.img bs=1M iflag=direct status=none
for e in "${!snap_ok[@]}"; do
	rc=0
	$CHJ changes --since "$e" t >/tmp/changes 2>/tmp/err || rc=$?
	if [ "$e" -lt "$old" ]; then
		assert_eq 3 "$rc" "exit status for dropped epoch $e"
		[ ! -s /tmp/changes ] || fail "dropped epoch $e printed ranges"
	else
		assert_eq 0 "$rc" "exit status for retained epoch $e"
		out=$($COVER "/tmp/snap.$e" /tmp/final.img 8 /tmp/changes) || { echo "$out"; fail "epoch $e missed changes"; }
		log "since $e: $out"
	fi
done
grep -qi "full backup" /tmp/err || grep -qi "full backup" <<<"$($CHJ changes --since 1 t 2>&1)" || fail "no full-backup message"

log "an epoch larger than the whole journal drops all history"
runs 3000 4 0	# 3000 runs: 12 blocks > 10
cur=$(st t cur)
e=$(dmsetup message t 0 checkpoint)
assert_eq "$e $e 0" "$(st t old) $(st t cur) $(st t jused)" "after oversize epoch"
rc=0; $CHJ changes --since "$cur" t >/dev/null 2>&1 || rc=$?
assert_eq 3 "$rc" "epoch $cur no longer answerable"

log "history survives a reload"
runs 100 4 0
e2=$(dmsetup message t 0 checkpoint)
dmsetup remove t
dev=$(dm_create t "$(chj_table /dev/mapper/md /dev/ram1 8)")
assert_eq "$e $e2" "$(st t old) $(st t cur)" "epochs after reload"
assert_eq 100 "$($CHJ changes --since "$e" t | wc -l)" "100 runs from the journal"
dmsetup remove t md
log "ok"
