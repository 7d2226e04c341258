#!/bin/bash
# dm-chj's write-ahead rule, checked at every crash point of a dm-log-writes
# log (fio and ext4 workloads, checkpoints under load) by
# tests/logwrites/lw-replay; and the checker's controls: a tracker that
# reports nothing, and models that drop or ignore the target's marks, fail.
# vm-timeout: 900
# vm-mem: 3072
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"
# shellcheck source=tests/vm/_chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_chj.sh"

LW=$CHJ_ROOT/tests/logwrites/lw-replay
CHJ=$CHJ_ROOT/userspace/chj
[ -x "$LW" ] || fail "$LW is not built: run make"

# One device under log-writes, split by dm-linear: metadata, then origin.
META_S=$((8 << 11))		# 8 MiB
ORIG_S=$((256 << 11))		# 256 MiB
DEV_S=$((META_S + ORIG_S))
RAW_MIB=96			# origin [0, 96 MiB): fio; the rest: ext4
FS_S=$((ORIG_S - (RAW_MIB << 11)))
MNT=/tmp/mnt

t_start=$SECONDS
elapsed() { echo "$((SECONDS - t_start)) s"; }

# fio on the chj device's raw area.  fio JOBNAME [fio options...]
fio_raw() {
	local name=$1
	shift
	fio --name="$name" --filename=/dev/mapper/c --size=${RAW_MIB}M --direct=1 \
		--randrepeat=0 --eta=never --output=/dev/null "$@" ||
		fail "fio $name"
}

# mkfile FILE SIZE_KiB: a file of random content.
mkfile() { head -c "$(($2 * 1024))" /dev/urandom >"$1"; }

# ckpt: end the chj epoch, log the new one.
ckpt() {
	local e
	e=$(dmsetup message c 0 checkpoint) || fail "checkpoint"
	log "checkpoint${1:+ $1}: epoch $e"
}

# The workload after the baseline mark; checkpoints in the middle, one of
# them while fio is writing.
workload() {
	local rs=$1 ios=$2
	log "fio: random 4K, QD1, fsync every 16 ($ios writes)"
	fio_raw r1 --rw=randwrite --bs=4k --ioengine=psync --number_ios="$ios" --fsync=16
	log "fio: random 4K, QD8 libaio, O_SYNC (FUA) ($ios writes)"
	fio_raw r2 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --sync=1 \
		--number_ios="$ios"
	ckpt
	log "fio: sequential 64K, QD4, 16 MiB, fsync at the end"
	fio_raw s1 --rw=write --bs=64k --ioengine=libaio --iodepth=4 --offset=40M \
		--io_size=16M --end_fsync=1
	log "fio: random 16K QD4 for 3 s, three checkpoints under it"
	fio_raw r3 --rw=randwrite --bs=16k --ioengine=libaio --iodepth=4 \
		--number_ios="$ios" --fsync=64 --rate_iops=$((ios / 3)) &
	local pid=$! i
	for i in 1 2 3; do
		sleep 0.7
		ckpt "under load"
	done
	wait $pid || fail "fio r3"

	log "ext4: create, overwrite, fsync, delete, fstrim, sync"
	mount -t ext4 /dev/mapper/fs $MNT
	mkdir -p $MNT/new
	for i in $(seq 1 24); do mkfile $MNT/new/f$i $((i * 37)); done
	for i in $(seq 1 8); do
		dd if=/dev/urandom of=$MNT/base/f$i bs=4k count=2 seek=$((i * 3)) \
			conv=notrunc,fsync status=none
	done
	rm -f $MNT/base/f1[0-9]
	sync
	ckpt
	cp -r $MNT/new $MNT/copy
	rm -rf $MNT/new
	fstrim $MNT
	umount $MNT
	log "fio: a last burst, no flush after it"
	fio_raw r4 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --number_ios=200
}

# run_one RS IOS DELAY_MS: the whole experiment at region size RS sectors,
# metadata writes delayed DELAY_MS by dm-delay (0: none); sets E.
run_one() {
	local rs=$1 ios=$2 delay=$3 meta=/dev/mapper/lwm
	brd_setup 2 $((1024 * 1024))	# fresh, all-zero: ram0 device, ram1 log
	dm_create lw "0 $DEV_S log-writes /dev/ram0 /dev/ram1" >/dev/null
	dm_create lwm "0 $META_S linear /dev/mapper/lw 0" >/dev/null
	dm_create lwo "0 $ORIG_S linear /dev/mapper/lw $META_S" >/dev/null
	if [ "$delay" != 0 ]; then
		# Metadata writes complete late: a data write issued before its
		# mark completed would overtake it in the log.
		meta=$(dm_create lwd "0 $META_S delay /dev/mapper/lwm 0 0 /dev/mapper/lwm 0 $delay")
	fi
	# chj formats its metadata here: that is in the log too.
	dm_create c "$(chj_table $meta /dev/mapper/lwo "$rs")" >/dev/null
	dm_create fs "0 $FS_S linear /dev/mapper/c $((RAW_MIB << 11))" >/dev/null

	log "baseline content (region size $rs, metadata delay $delay ms): raw data, an ext4 with files"
	fio_raw base --rw=write --bs=1M --ioengine=psync --io_size=32M --offset=16M
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/fs
	mkdir -p $MNT
	mount -t ext4 /dev/mapper/fs $MNT
	mkdir $MNT/base
	for i in $(seq 1 30); do mkfile $MNT/base/f$i 300; done
	umount $MNT
	E=$(dmsetup message c 0 checkpoint)
	dmsetup message lw 0 mark base
	log "baseline: epoch $E begins at log mark 'base' ($(elapsed))"

	workload "$rs" "$ios"

	log "status: $(dmsetup status c)"
	local lws
	lws=$(dmsetup status lw)
	log "log-writes: $lws"
	[[ $lws != *logging_disabled* ]] || fail "log-writes stopped logging (log device full?)"
	dmsetup remove fs
	dmsetup remove c
	[ "$delay" = 0 ] || dmsetup remove lwd
	dmsetup remove lwm
	dmsetup remove lwo
	dmsetup remove lw		# the log ends with mark dm-log-writes-end
	log "workload done ($(elapsed))"
}

# replay RS [lw-replay options...]: run the checker on the log; prints its
# output, returns its status.
replay() {
	local rs=$1
	shift
	"$LW" --metadata-sectors $META_S --device-sectors $DEV_S --since "$E" \
		--mark base --region-sectors "$rs" --chj "$CHJ" "$@" /dev/ram1
}

# expect_fail WHAT RS [options]: the checker must find a violation (exit 1).
expect_fail() {
	local what=$1 rc=0 out
	shift
	out=$(replay "$@" 2>&1) || rc=$?
	printf '%s\n' "$out" | sed 's/^/    /' | head -n 14
	[ $rc = 1 ] || fail "control '$what': lw-replay exited $rc, expected 1 (violation)"
	grep -q 'VIOLATION at crash point' <<<"$out" ||
		fail "control '$what': no violation reported"
	log "control '$what' failed as it must ($(elapsed))"
}

log "the checker's self-test on synthetic logs"
out=$(python3 "$CHJ_ROOT/tests/logwrites/selftest.py" --lw-replay "$LW" --chj "$CHJ") || {
	printf '%s\n' "$out"
	fail "lw-replay selftest"
}
tail -n 1 <<<"$out"
log "self-test done ($(elapsed))"

for spec in "8 1500 0" "128 600 1"; do
	read -r RS IOS DELAY <<<"$spec"
	run_one "$RS" "$IOS" "$DELAY"

	log "replay, region size $RS: the real target (libchj every point, chj command every 500th)"
	t0=$SECONDS
	out=$(replay "$RS" --cli-every 500 --meta-file /tmp/crash-meta.img 2>&1) || {
		printf '%s\n' "$out"
		cp /tmp/crash-meta.img "$CHJ_OUT/crash-meta-rs$RS.img" 2>/dev/null || true
		cp /dev/ram1 "$CHJ_OUT/log-rs$RS.bin" 2>/dev/null || true
		fail "dm-chj missed a change at a crash point (region size $RS): see above"
	}
	printf '%s\n' "$out"
	points=$(sed -n 's/^crash points checked: \([0-9]*\) (passed.*/\1/p' <<<"$out")
	[ -n "$points" ] && [ "$points" -ge 1000 ] ||
		fail "too few crash points checked: '$points'"
	echo "rs=$RS points=$points replay_s=$((SECONDS - t0))" >>"$CHJ_OUT/numbers.txt"
	log "real target passed $points crash points in $((SECONDS - t0)) s ($(elapsed))"

	log "control: a model keeping every metadata write (weaker) must pass too"
	replay "$RS" --model all | tail -n 1

	log "control: a tracker that reports nothing must fail at every point with a change"
	out=$(replay "$RS" --fake-empty --keep-going 2>&1) && fail "fake-empty tracker passed"
	line=$(grep '^violations at' <<<"$out") || fail "fake-empty: no violation count: $out"
	echo "    $line"
	[[ $line =~ ^violations\ at\ ([0-9]+)\ of\ ([0-9]+)\ crash\ points\ \(([0-9]+)\ with ]] ||
		fail "fake-empty: cannot parse '$line'"
	[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[3]}" ] && [ "${BASH_REMATCH[1]}" -gt 0 ] ||
		fail "fake-empty: violations at ${BASH_REMATCH[1]} points, but ${BASH_REMATCH[3]} had changed data"
	echo "rs=$RS fake_empty_violations=${BASH_REMATCH[1]} of=${BASH_REMATCH[2]}" >>"$CHJ_OUT/numbers.txt"

	expect_fail "no metadata writes after the mark" "$RS" --model none
	expect_fail "FUA on bitmap writes ignored" "$RS" --model nofua
done
log "all done ($(elapsed))"
