#!/bin/bash
# chj-resolve after a crash: ext4, XFS and btrfs over the real target,
# changed after a checkpoint and synced (so the changes sit in the journal
# or log, and recovery writes them home on the next mount), plus changes
# never synced; the guest is reset.  After the reboot every file and
# directory that truly changed (ground truth: the snapshot before the
# checkpoint against the tree as recovered) is listed, and the --json
# ranges cover every synced in-place write.
# vm-disks: 64M 1G 64M 1G 64M 1G
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

# A smaller workload: three filesystems in one test.
export WL_SMALL=300 WL_IMAGE_MB=32
FSES="ext4 xfs btrfs"
base=$CHJ_OUT
# The name cache and the state store on the results share, which survives
# the reset: the store (ext4, XFS) made by a backup right after the checkpoint
# answers after the crash.
export CHJ_RESOLVE_CACHE_DIR=$base/resolve-cache
mkdir -p -m 700 "$CHJ_RESOLVE_CACHE_DIR"

# fs_setup FS: the chj device c-FS (its disks), mounted on /tmp/FS.
fs_setup() {
	local fs=$1 meta origin
	case $fs in
	ext4) meta=/dev/vda origin=/dev/vdb ;;
	xfs) meta=/dev/vdc origin=/dev/vdd ;;
	btrfs) meta=/dev/vde origin=/dev/vdf ;;
	esac
	"$CHJ" create "c-$fs" $meta $origin
	mkdir -p "/tmp/$fs"
}

mount_fs() {
	local opts=
	[ "$1" = btrfs ] && opts=noatime
	mount ${opts:+-o "$opts"} "/dev/mapper/c-$1" "/tmp/$1"
}

case $CHJ_BOOT in
1)
	for fs in $FSES; do
		log "$fs: populate, checkpoint, change, sync"
		CHJ_OUT=$base/$fs
		mkdir -p "$CHJ_OUT"
		fs_setup "$fs"
		case $fs in
		ext4) mkfs.ext4 -q /dev/mapper/c-ext4 ;;
		xfs) mkfs.xfs -q -f -m rmapbt=1,reflink=1 /dev/mapper/c-xfs ;;
		btrfs) mkfs.btrfs -q -f /dev/mapper/c-btrfs ;;
		esac
		mount_fs "$fs"
		m=/tmp/$fs
		wl_populate "$m"
		sync
		find "$m" -xdev -type f -exec head -qc1 {} + >/dev/null
		echo settle >"$m/.settle"
		[ "$fs" = btrfs ] && btrfs -q subvolume create "$m/settled"
		sync
		python3 -S "$TRUTH" snap "$m" "$CHJ_OUT/before.json"
		"$CHJ" checkpoint "c-$fs" >"$CHJ_OUT/epoch"
		# The backup right after the checkpoint: the state store of
		# this epoch's start.
		"$RESOLVE" --since "$(cat "$CHJ_OUT/epoch")" "c-$fs" >/dev/null
		wl_modify "$m" "$CHJ_OUT/writes" 1
		sync
	done
	CHJ_OUT=$base
	log "changes never synced, then the crash"
	for fs in $FSES; do
		head -c 300000 /dev/urandom >"/tmp/$fs/unsynced"
		echo more >>"/tmp/$fs/d/append"
		mv "/tmp/$fs/d/ren-b" "/tmp/$fs/d/ren-c"
	done
	vm_crash
	;;
2)
	for fs in $FSES; do
		log "$fs: after the crash"
		CHJ_OUT=$base/$fs
		fs_setup "$fs"
		mount_fs "$fs"
		mnt_=/tmp/$fs
		: >"$CHJ_OUT/precision"
		e=$(cat "$CHJ_OUT/epoch")
		resolve_json "$CHJ_OUT/out.json" --since "$e" "c-$fs"
		"$RESOLVE" --since "$e" -0 "c-$fs" >"$CHJ_OUT/out0"
		check_truth --snap before after writes "$CHJ_OUT/out0" "$CHJ_OUT/out.json"
		cat "$CHJ_OUT/precision"
		if [ "$fs" != btrfs ]; then
			grep -q "state store: state of epoch $e used" "$CHJ_OUT/out.json.stats" ||
				fail "$fs: the state store of epoch $e was not used after the crash"
		fi
		umount "/tmp/$fs"
		"$CHJ" remove "c-$fs"
	done
	CHJ_OUT=$base
	log "ok"
	;;
esac
