#!/bin/bash
# dm-chj lifecycle: marks survive suspend/resume, reload while live, remove/
# create and a guest crash (reset without sync); growing the origin; a
# write racing the table swap is never issued unmarked.
# vm-disks: 64M 256M
# vm-timeout: 400
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"

META=/dev/vda ORIGIN=/dev/vdb
LEN=$((100 << 11))	# 100 MiB: 25600 regions, one bitmap block

# A marked region written again adds no mark; an unmarked one adds one.
# expect_marked NAME OFFSETS_KiB...: every offset must already be marked.
expect_marked() {
	local name=$1 before
	shift
	before=$(st "$name" marked)
	for off in "$@"; do wr "/dev/mapper/$name" "$off" 4; done
	assert_eq "$before" "$(st "$name" marked)" "regions still marked"
}

A="0 4 4096 65536 99996"		# KiB offsets written in epoch 1
B="8 12 8192 50000 77776"		# written in epoch 2

case $CHJ_BOOT in
1)
	dev=$(dm_create t "$(chj_table $META $ORIGIN 8 $LEN)")
	for off in $A; do wr "$dev" "$off" 4; done
	assert_eq 5 "$(st t marked)" "epoch 1 marks"
	assert_eq 2 "$(dmsetup message t 0 checkpoint)" "checkpoint"
	for off in $B; do wr "$dev" "$off" 4; done
	assert_eq 5 "$(st t marked)" "epoch 2 marks"

	log "suspend and resume keep marks"
	dmsetup suspend t
	if dmsetup message t 0 checkpoint 2>/dev/null; then fail "checkpoint while suspended"; fi
	dmsetup resume t
	expect_marked t $B

	log "reload while live, with writes running, keeps marks"
	fio --name=load --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--size=16M --offset=32M --time_based --runtime=4 --ioengine=psync \
		--randseed=7 --eta=never --output=/dev/null &
	fio_pid=$!
	dmsetup load t --table "$(chj_table $META $ORIGIN 8 $LEN)"
	dmsetup resume t
	wait $fio_pid
	expect_marked t $B
	marked=$(st t marked)
	[ "$marked" -gt 5 ] || fail "fio writes were not marked"

	log "remove and create keep marks"
	dmsetup remove t
	dev=$(dm_create t "$(chj_table $META $ORIGIN 8 $LEN)")
	assert_eq "2 $marked" "$(st t cur) $(st t marked)" "after re-create"
	expect_marked t $B

	log "write more, then crash with no sync"
	C="20000 30000 40004"
	for off in $C; do wr "$dev" "$off" 4; done
	st t marked >"$CHJ_OUT/marked"
	vm_crash
	;;
2)
	log "after the crash: every mark is back"
	dev=$(dm_create t "$(chj_table $META $ORIGIN 8 $LEN)")
	# Format 2: the chunks marked at the crash count whole (a coarse epoch).
	assert_eq "2 1" "$(st t cur) $(st t old)" "epochs after crash"
	[ "$(st t marked)" -ge "$(cat "$CHJ_OUT/marked")" ] ||
		fail "after crash: $(st t marked) regions marked, $(cat "$CHJ_OUT/marked") before"
	# More than before means whole chunks were recovered: the epoch says so.
	if [ "$(st t marked)" -gt "$(cat "$CHJ_OUT/marked")" ]; then
		dmsetup message t 0 stats | grep -q ' coarse=1' || fail "after crash: the epoch is not flagged coarse"
	fi
	expect_marked t $B 20000 30000 40004

	log "grow within the same bitmap block: new space is marked, history kept"
	marked=$(st t marked)
	LEN2=$((120 << 11))
	dmsetup load t --table "$(chj_table $META $ORIGIN 8 $LEN2)"
	dmsetup resume t
	assert_eq "$((LEN2 / 8))" "$(st t nr)" "regions after grow"
	assert_eq "$((marked + (LEN2 - LEN) / 8))" "$(st t marked)" "new space marked"
	assert_eq 1 "$(st t old)" "history kept"

	log "grow past the bitmap block: history is dropped, never shortened"
	S=$(sectors $ORIGIN)
	dmsetup load t --table "$(chj_table $META $ORIGIN 8 "$S")"
	dmsetup resume t
	assert_eq "$((S / 8))" "$(st t nr)" "regions after second grow"
	assert_eq "2 2" "$(st t cur) $(st t old)" "oldest epoch after growth"
	expect_marked t $B 120000 200000
	assert_eq 3 "$(dmsetup message t 0 checkpoint)" "checkpoint after grow"

	log "shrink is refused and the live table stays"
	if dmsetup load t --table "$(chj_table $META $ORIGIN 8 $LEN)" 2>/dev/null; then
		fail "shrink accepted"
	fi
	assert_eq 3 "$(st t cur)" "live table unchanged"
	dmsetup remove t
	log "ok"
	;;
esac
