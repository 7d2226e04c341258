#!/bin/bash
# Guest resets (sysrq b: no sync, like a power cut) at random points during
# checkpoints under load, origin growth under load, table reloads under load
# and bursts of first-touch writes; after each reset, every region whose
# content differs from the copy taken at the start of the epoch is reported
# by `chj changes --since` that epoch.  One reset per boot, at a random
# point after the scenario's writes begin; VM_MAX_BOOTS=N runs N - 1 resets
# (make check-long: 51).
# vm-disks: 64M 64M 64M
# vm-timeout: 1200
# vm-boots: 14
# vm-long-boots: 51
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"
# shellcheck source=tests/vm/_chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover
META=/dev/vda ORIG=/dev/vdb BASE=/dev/vdc
FULL_S=$(sectors $ORIG)
STATE=$CHJ_OUT/state	# epoch E, origin length L: kept across resets
SCENARIOS=(checkpoints growth reloads burst)

# up LEN: origin og (LEN sectors of vdb) and chj device c over it.
up() {
	dm_create og "0 $1 linear $ORIG 0" >/dev/null
	dm_create c "$(chj_table $META /dev/mapper/og 8)" >/dev/null
}

save_state() {
	echo "E=$E L=$L" >"$STATE"
	sync -f "$STATE"
}

fio_bg() {
	fio --name=bg --filename=/dev/mapper/c --size="$((L / 2048))M" --rw=randwrite \
		--bs=4k --direct=1 --ioengine=libaio --iodepth=32 --time_based --runtime=30 \
		--randrepeat=0 --eta=never --output=/dev/null &
}

# grow_to LEN: origin and chj device to LEN sectors, live.
grow_to() {
	L=$1
	save_state	# before: after a reset the device comes back at least this long
	dmsetup load og --table "0 $L linear $ORIG 0"
	dmsetup resume og
	dmsetup load c --table "$(chj_table $META /dev/mapper/og 8)"
	dmsetup resume c
}

if [ "$CHJ_BOOT" = 1 ]; then
	log "boot 1: format, fill, first epoch"
	L=$((FULL_S / 2))
	up $L
	head -c $((L * 512)) /dev/urandom | dd of=/dev/mapper/c bs=1M oflag=direct status=none
else
	# shellcheck disable=SC1090
	. "$STATE"
	up "$L"
	log "after reset $((CHJ_BOOT - 1)): epoch $(st c cur), changes since $E must cover the copy's differences"
	dd if=/dev/mapper/og of=/tmp/now bs=1M iflag=direct status=none
	$CHJ changes --since "$E" c >/tmp/changes || fail "chj changes --since $E failed after the reset"
	head -c $((L * 512)) $BASE >/tmp/base
	out=$($COVER /tmp/base /tmp/now 8 /tmp/changes) || {
		echo "$out"
		fail "a change was missed across reset $((CHJ_BOOT - 1))"
	}
	log "reset $((CHJ_BOOT - 1)) verified: $out"
	echo "reset=$((CHJ_BOOT - 1)) $(cat "$CHJ_OUT/point") $out" >>"$CHJ_OUT/numbers.txt"
	rm -f /tmp/now /tmp/base
	if [ "$CHJ_BOOT" -ge "$CHJ_MAX_BOOTS" ]; then
		log "$((CHJ_BOOT - 1)) resets, every one verified"
		exit 0
	fi
fi

# The next epoch: checkpoint, then copy the origin (the backup's view).
E=$(dmsetup message c 0 checkpoint)
dd if=/dev/mapper/og of=$BASE bs=1M iflag=direct oflag=direct conv=fsync status=none
save_state
scenario=${SCENARIOS[$((CHJ_BOOT % ${#SCENARIOS[@]}))]}
delay=$((RANDOM % 1200 + 20))
echo "scenario=$scenario delay_ms=$delay" >"$CHJ_OUT/point"
sync -f "$CHJ_OUT/point"
log "epoch $E copied; $scenario, reset $delay ms after writes begin"
case $scenario in
checkpoints)
	fio_bg
	( while :; do dmsetup message c 0 checkpoint >/dev/null; done ) & ;;
growth)
	fio_bg
	(
		l=$L
		while [ $((l + 2048)) -le "$FULL_S" ]; do
			l=$((l + 2048))
			grow_to $l
		done
	) & ;;
reloads)
	fio_bg
	( while :; do
		dmsetup load c --table "$(chj_table $META /dev/mapper/og 8)"
		dmsetup resume c
	done ) & ;;
burst)
	fio --name=burst --filename=/dev/mapper/c --size="$((L / 2048))M" --rw=randwrite \
		--bs=4k --direct=1 --ioengine=libaio --iodepth=32 --numjobs=2 --time_based \
		--runtime=30 --randrepeat=0 --eta=never --output=/dev/null & ;;
esac
# The reset point counts from the moment writes reach the origin (fio takes
# a while to start under TCG): poll its completed-write counter.
ostat=/sys/block/$(dmsetup info -c --noheadings -o blkdevname og)/stat
w0=$(awk '{ print $5 }' "$ostat")
until [ "$(awk '{ print $5 }' "$ostat")" -gt $((w0 + 20)) ]; do sleep 0.05; done
sleep "$((delay / 1000)).$(printf %03d $((delay % 1000)))"
vm_crash
