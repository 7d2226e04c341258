#!/bin/bash
# Guest resets (sysrq b: no sync, like a power cut) at random points during
# checkpoints under load, origin growth under load, table reloads under load
# and bursts of first-touch writes; after each reset, every region whose
# content differs from the copy taken at the start of the epoch is reported
# by `chj changes --since` that epoch.  One reset per boot, at a random
# point after the scenario's writes begin; VM_MAX_BOOTS=N runs N - 1 resets
# (make check: 50, as the fault matrix asks, make check-long: 200).
#
# Each boot is kept short, so that many resets fit: the origin (32 MiB,
# 8192 regions, growing to at most 64 MiB) is compared with its copy in
# place (changes-cover reads both devices: nothing is copied to tmpfs), and
# the load is tests/tools/aio-randwrite (random 4 KiB O_DIRECT writes, native
# AIO at QD32, as fio's libaio engine; fio needs about a second under TCG
# just to start), which says when its first writes have completed.
# About 6.5 s per reset on an idle machine, twice that with the cores shared.
# 1024 MiB, not the default 3072: nothing here lives in guest memory, and a
# boot with 3072 MiB takes 0.8-0.9 s longer (the kernel frees every page
# into its allocator, emulated), 51 times.
# vm-mem: 1024
# vm-disks: 64M 64M 64M
# vm-timeout: 1200
# vm-boots: 51
# vm-long-boots: 201
# vm-long-timeout: 3600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover
AIO=$CHJ_ROOT/tests/tools/aio-randwrite
META=/dev/vda ORIG=/dev/vdb BASE=/dev/vdc
FULL_S=$(</sys/block/vdb/size)
START_S=$((FULL_S / 2))
STEP_S=2048		# growth step: 1 MiB
# Kept across resets: epoch E and origin length L, and the reset point.
# $CHJ_OUT is a 9p share written straight to the host: no sync needed.
# The state is appended to, one line per write(2), and the last line read
# wins: rewriting it with > would truncate first, and a reset between the
# truncation and the write (growth saves it under load) left it empty.
STATE=$CHJ_OUT/state
SCENARIOS=(checkpoints growth reloads burst)

# Every process costs a tenth of a second or more under TCG: this test
# starts few.

# up LEN: origin og (LEN sectors of vdb) and chj device c over it.
up() {
	dm_create og "0 $1 linear $ORIG 0" >/dev/null
	dm_create c "$(chj_table $META /dev/mapper/og 8 "$1")" >/dev/null
}

save_state() {
	echo "E=$E L=$L" >>"$STATE"
}

# load QD JOBS: random 4 KiB writes over the first L sectors of c, in the
# background, for at most 30 s; returns once the first 20 have completed
# (they reached the origin: the reset point counts from there).
load() {
	local line
	coproc AIO_JOB { exec "$AIO" /dev/mapper/c $((L / 2)) "$1" "$2" 30 20; }
	read -r -t 60 -u "${AIO_JOB[0]}" line || fail "aio-randwrite did not start writing"
	assert_eq started "$line" "aio-randwrite"
}

# grow_to LEN: origin and chj device to LEN sectors, live.
grow_to() {
	L=$1
	save_state	# before: after a reset the device comes back at least this long
	dmsetup load og --table "0 $L linear $ORIG 0"
	dmsetup resume og
	dmsetup load c --table "$(chj_table $META /dev/mapper/og 8 "$L")"
	dmsetup resume c
}

if [ "$CHJ_BOOT" = 1 ]; then
	log "boot 1: format, fill, first epoch"
	L=$START_S
	: >"$STATE"
	up $L
	head -c $((L * 512)) /dev/urandom | dd of=/dev/mapper/c bs=1M oflag=direct status=none
else
	E='' L=''
	# shellcheck disable=SC1090
	. "$STATE"
	if [ -z "$E" ] || [ -z "$L" ]; then
		fail "$STATE holds no epoch and length: '$(<"$STATE")'"
	fi
	up "$L"
	read -ra status <<<"$(dmsetup status c)"
	log "after reset $((CHJ_BOOT - 1)): epoch ${status[4]}, changes since $E must cover the copy's differences"
	$CHJ changes --since "$E" c >/tmp/changes || fail "chj changes --since $E failed after the reset"
	out=$($COVER $BASE /dev/mapper/og 8 /tmp/changes "$L") || {
		echo "$out"
		fail "a change was missed across reset $((CHJ_BOOT - 1))"
	}
	log "reset $((CHJ_BOOT - 1)) verified: $out"
	echo "reset=$((CHJ_BOOT - 1)) $(<"$CHJ_OUT/point") $out" >>"$CHJ_OUT/numbers.txt"
	if [ "$CHJ_BOOT" -ge "$CHJ_MAX_BOOTS" ]; then
		log "$((CHJ_BOOT - 1)) resets, every one verified"
		exit 0
	fi
fi

scenario=${SCENARIOS[$((CHJ_BOOT % ${#SCENARIOS[@]}))]}
# Shrinking is refused: when the origin has grown too far for another
# growth scenario, start over on fresh metadata at the first length, with
# the whole origin copied, so that what lies past L stays equal to the copy.
if [ "$scenario" = growth ] && [ $((L + 16 * STEP_S)) -gt "$FULL_S" ]; then
	log "origin at $L sectors: fresh metadata, back to $START_S"
	dmsetup remove c
	dmsetup remove og
	L=$START_S
	$CHJ format $META --origin-size $((L * 512)) --force >/dev/null
	dd if=$ORIG of=$BASE bs=1M iflag=direct oflag=direct conv=fsync status=none
	up $L
fi

# The next epoch: checkpoint, then copy the origin (the backup's view).
E=$(dmsetup message c 0 checkpoint)
dd if=/dev/mapper/og of=$BASE bs=1M iflag=direct oflag=direct conv=fsync status=none
save_state
delay=$((RANDOM % 1200 + 20))
echo "scenario=$scenario delay_ms=$delay" >"$CHJ_OUT/point"
log "epoch $E copied; $scenario, reset $delay ms after writes begin"
case $scenario in
checkpoints)
	( while :; do dmsetup message c 0 checkpoint >/dev/null; done ) &
	load 32 1 ;;
growth)
	(
		l=$L
		while [ $((l + STEP_S)) -le "$FULL_S" ]; do
			l=$((l + STEP_S))
			grow_to $l
		done
	) &
	load 32 1 ;;
reloads)
	( while :; do
		dmsetup load c --table "$(chj_table $META /dev/mapper/og 8 "$L")"
		dmsetup resume c
	done ) &
	load 32 1 ;;
burst)
	load 32 2 ;;
esac
# Wait on the writer's output, which says nothing more: a sleep without a
# process, and a writer that stops (an I/O error) ends the wait with EOF.
rc=0
printf -v secs '%d.%03d' $((delay / 1000)) $((delay % 1000))
read -r -t "$secs" -u "${AIO_JOB[0]}" line || rc=$?
[ $rc -gt 128 ] || fail "aio-randwrite stopped before the reset point (read: $rc, '${line:-}')"
vm_crash
