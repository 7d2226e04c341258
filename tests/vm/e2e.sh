#!/bin/bash
# End to end on real software: the incremental backup chj drives equals the
# source.  ext4, XFS and btrfs over dm-chj, each seeded and copied in full by
# examples/rsync-backup.sh (checkpoint, rsync -aHAX); then cycles of a real
# workload (git, SQLite in WAL mode, dpkg; tests/e2e/workloads.sh) with a
# user's edits (xattrs, ACLs, hard links, a same-size rewrite with the mtime
# put back, a punched hole), each followed by the example's incremental
# (chj-resolve -0 --since E | rsync --files-from) and checked by peer tools:
# rsync -n -a -c -H -A -X --delete -i of source against backup prints
# nothing, the link counts agree, git fsck --full, SQLite's
# integrity_check, dpkg --verify on the backup, the filesystem's checker
# on the origin.  Crash cycles reset the guest at a random point of a
# workload; the next boot recovers the filesystem by mounting it, takes the
# incremental and checks the same way (the backup must answer as the
# recovered source does).  make check: a clean cycle per filesystem and two
# crash points (vm-boots 3); make check-long: a clean and a crash cycle per
# boot over every workload and filesystem, 22 crash points.  Per cycle a
# report line (tests/e2e/report.py) in $CHJ_OUT/report: docs/testing.md.
# vm-disks: 48M 1G 1G 1G 2G
# vm-timeout: 600
# vm-boots: 3
# vm-long-boots: 23
# vm-long-timeout: 5400
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/e2e/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/e2e/lib.sh"
# shellcheck source=tests/e2e/workloads.sh disable=SC1091
. "$CHJ_ROOT/tests/e2e/workloads.sh"

# Over 3 boots (make check) the short plan; more boots: the whole family.
E2E_LONG=0
[ "$CHJ_MAX_BOOTS" -le 3 ] || E2E_LONG=1
PENDING=$CHJ_OUT/pending
if long; then
	WLS=(pg image fsown git sqlite dpkg)
else
	# The clean cycle of each filesystem, then the crash cycles.
	CLEAN=("ext4 git" "xfs sqlite" "btrfs dpkg")
	CRASH=("ext4 git" "xfs sqlite")
fi

# pair K: the K-th (filesystem, workload) pair of the long plan: each run
# of NF * NW pairs has every workload on every filesystem once.
pair() {
	local nf=${#E2E_FSES[@]} nw=${#WLS[@]} p
	p=$(($1 % (nf * nw)))
	echo "${E2E_FSES[$((p % nf))]} ${WLS[$(((p / nf + p % nf) % nw))]}"
}

# clean FS WL N: workload and edits to the end, the incremental, checks.
clean() {
	local fs=$1 wl=$2 n=$3
	E2E_FS=$fs
	log "$fs: $wl, cycle $n, clean"
	wl_edits "/tmp/m/$fs" "$n"
	"wl_$wl" "/tmp/m/$fs" "$n" >/dev/null
	e2e_incremental "$fs" "$wl" clean
	"chk_$wl" "/tmp/bk/$fs" ""
	e2e_fsck "$fs"
}

# crash FS WL N: the workload in the background, the reset at a random
# point after its first write (0-6 s later), recorded for the next boot.
crash() {
	local fs=$1 wl=$2 n=$3 line delay=$((RANDOM % 7))
	log "$fs: $wl, cycle $n, reset $delay s after it started"
	echo "$fs $wl $n $delay" >>"$PENDING"
	wl_edits "/tmp/m/$fs" "$n"
	coproc WL { "wl_$wl" "/tmp/m/$fs" "$n"; }
	read -r -t 120 -u "${WL[0]}" line || fail "$wl did not start"
	assert_eq started "$line" "$wl"
	sleep "$delay"
	vm_crash
}

# after_crash: the filesystem the last boot reset, recovered by mounting:
# the incremental and the checks.
after_crash() {
	local fs wl n delay
	read -r fs wl n delay < <(tail -n 1 "$PENDING")
	E2E_FS=$fs
	log "$fs: after the reset in $wl (cycle $n, $delay s in)"
	e2e_incremental "$fs" "$wl" "crash+${delay}s"
	"chk_$wl" "/tmp/bk/$fs" "/tmp/m/$fs"
	e2e_fsck "$fs"
}

if [ "$CHJ_BOOT" = 1 ]; then
	FIRST=1 e2e_devices
	: >"$REPORT"
	for fs in "${E2E_FSES[@]}"; do
		log "$fs: mkfs, seed, full backup"
		e2e_mkfs "$fs"
		e2e_mount "$fs"
		wl_seed "/tmp/m/$fs"
		sync -f "/tmp/m/$fs"
		e2e_backup "$fs"
		[ ! -f "$E2E_RUN/list" ] || fail "$fs: the first backup was not a full copy"
		e2e_diff "$fs" "/tmp/full-$fs"
		[ ! -s "/tmp/full-$fs" ] || { head "/tmp/full-$fs"; fail "$fs: the full copy differs"; }
		e2e_holes "$fs" || fail "$fs: sparse files filled in the full copy"
	done
	if ! long; then
		for c in "${CLEAN[@]}"; do
			# shellcheck disable=SC2086 # "FS WL"
			clean $c 1
		done
	fi
else
	e2e_devices
	for fs in "${E2E_FSES[@]}"; do e2e_mount "$fs"; done
	after_crash
fi

k=$((CHJ_BOOT - 1))
if long; then
	# shellcheck disable=SC2046 # "FS WL"
	clean $(pair "$k") $((CHJ_BOOT * 2))
fi
if [ "$CHJ_BOOT" -lt "$CHJ_MAX_BOOTS" ]; then
	if long; then
		# shellcheck disable=SC2046
		crash $(pair $((k + 1))) $((CHJ_BOOT * 2 + 1))
	else
		# shellcheck disable=SC2086
		crash ${CRASH[$k]} $((CHJ_BOOT + 1))
	fi
fi
for fs in "${E2E_FSES[@]}"; do umount "/tmp/m/$fs"; "$CHJ" remove "c-$fs"; done
cat "$REPORT"
log "ok"
