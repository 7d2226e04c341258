#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# chj-resolve against ground truth on the host, with a loop device and no
# dm-chj: the change map is the difference between images of the device
# taken before and after the workload (a subset of what dm-chj would mark,
# which is all the resolver may rely on), passed through CHJ_RESOLVE_CHANGES.
# Two rounds of the workload (tests/resolve/workload.py), each checked
# against its own "checkpoint"; then both rounds against the first.
#
#   tests/resolve/host-check.sh ext4|xfs|xfs-normap|btrfs [MKFS_OPTION...]
# HOST_WRAP_FILES=N creates N files after the checkpoint, touches them all
# HOST_WRAP_ROUNDS (40) times with a sync each time, and deletes half:
# enough to wrap an XFS log of 64 MiB since the checkpoint.
# Then, with no MKFS_OPTION, tests/resolve/hostile.sh for the filesystem.
# Needs root and loop devices.  Work files go to $TMPDIR (default /tmp);
# KEEP=1 keeps them.  Prints "precision FS ROUND VALUE" lines.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# chj-resolve-test: chj-resolve with the test hooks (CHJ_RESOLVE_CHANGES).
RESOLVE=$root/userspace/chj-resolve-test
TRUTH=$here/fstruth.py
# shellcheck source=tests/resolve/workload.sh
. "$here/workload.sh"

fs=${1:?usage: $0 ext4|xfs|xfs-normap|btrfs [MKFS_OPTION...]}
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/chj-resolve-host.XXXXXX")
mnt=$work/mnt
img=$work/dev.img
loop=
cleanup() {
	set +e
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

truncate -s "${HOST_DEV_MB:-640}M" "$img"
loop=$(losetup -f --show "$img")
case $fs in
ext4) mkfs.ext4 -q "$@" "$loop" ;;
xfs) mkfs.xfs -q -f -m rmapbt=1,reflink=1 "$@" "$loop"; export WL_NEED_CLONE=1 ;;
xfs-normap) mkfs.xfs -q -f -m rmapbt=0,reflink=1 "$@" "$loop"; export WL_NEED_CLONE=1 ;;
btrfs) mkfs.btrfs -q -f "$@" "$loop"; export WL_NEED_CLONE=1 ;;
*) echo "unknown filesystem $fs" >&2; exit 2 ;;
esac
mkdir -p "$mnt"
# btrfs as usually mounted (atime updates would COW metadata on every read).
opts=
[ "$fs" = btrfs ] && opts="-o noatime"
# shellcheck disable=SC2086
mount $opts "$loop" "$mnt"

# image NAME: a consistent image of the device (the "checkpoint").
image() {
	sync
	fsfreeze -f "$mnt"
	cp --sparse=always "$img" "$work/$1.img"
	fsfreeze -u "$mnt"
}

# changes FROM TO: the change map between two images.
changes() {
	# btrfs writes tree blocks (16 KiB) whole: mark whole nodes.
	local unit=4096
	[ "$fs" = btrfs ] && unit=16384
	python3 "$TRUTH" diffimg "$work/$1.img" "$work/$2.img" $unit >"$work/changes-$1-$2"
	echo "changed ranges $1 -> $2: $(wc -l <"$work/changes-$1-$2")"
}

# check NAME CHANGES BEFORE AFTER WRITES: resolve with the map CHANGES and
# compare with the ground truth between snapshots BEFORE and AFTER.
check() {
	local n=$1 ch=$work/$2 rc=0
	echo "--- resolve $n"
	CHJ_RESOLVE_CHANGES=$ch "$RESOLVE" --stats --json "$loop" >"$work/$n.json" 2>"$work/$n.stats" || rc=$?
	cat "$work/$n.stats"
	CHJ_RESOLVE_CHANGES=$ch "$RESOLVE" -0 "$loop" >"$work/$n.out0" || rc=$?
	CHJ_RESOLVE_CHANGES=$ch "$RESOLVE" "$loop" >"$work/$n.txt" || rc=$?
	[ $rc = 0 ] || { echo "chj-resolve exited $rc"; exit 1; }
	# The cache (used above where it applies) gives what a walk gives.
	CHJ_RESOLVE_CACHE=off CHJ_RESOLVE_CHANGES=$ch "$RESOLVE" -0 "$loop" >"$work/$n.out0-walk"
	cmp "$work/$n.out0" "$work/$n.out0-walk" || { echo "name cache and walk disagree"; exit 1; }
	if ! python3 "$TRUTH" check "$work/$3.json" "$work/$4.json" "$work/$n.out0" "$work/$n.json" \
		--mount "$mnt" --writes "$work/$5" | tee "$work/$n.check"; then
		echo "FAIL: $n misses changes or ranges"
		exit 1
	fi
	sed -n "s/^check $n.json: .* precision /precision $fs $n /p" "$work/$n.check"
	# The escaped line output names the same paths as -0.
	n0=$(tr -cd '\0' <"$work/$n.out0" | wc -c)
	nl=$(wc -l <"$work/$n.txt")
	[ "$n0" = "$nl" ] || { echo "line output has $nl paths, -0 has $n0"; exit 1; }
	grep -q '^\\.*new\\nline$' "$work/$n.txt" || { echo "escaped newline name missing"; exit 1; }
}

echo "--- populate"
wl_populate "$mnt"
sync
# Read every file as the snapshot does: its atime updates are written now.
find "$mnt" -xdev -type f -exec head -qc1 {} + >/dev/null
# A last small change before the checkpoint, so that the populate is not
# what the transaction spanning the checkpoint holds (see resolve.md).
echo settle >"$mnt/.settle"
# (btrfs: see extra_settle in tests/vm/resolve-btrfs.sh)
[ "$fs" = btrfs ] && btrfs -q subvolume create "$mnt/settled" && echo s >"$mnt/settled/s"
sync
python3 "$TRUTH" snap "$mnt" "$work/before.json"
image c1
# A first run (no change) builds the name cache as the tree is now.
export CHJ_RESOLVE_CACHE_DIR=$work/cache
mkdir -m 700 "$CHJ_RESOLVE_CACHE_DIR"
: >"$work/nochange"
CHJ_RESOLVE_CHANGES=$work/nochange "$RESOLVE" "$loop" >/dev/null

echo "--- modify, round 1"
if [ -n "${HOST_WRAP_FILES:-}" ]; then
	# Enough metadata traffic to wrap the log since the "checkpoint":
	# every round relogs every inode.
	mkdir "$mnt/wrap"
	(cd "$mnt/wrap" && seq -f w%g "$HOST_WRAP_FILES" | xargs touch)
	for ((i = 0; i < ${HOST_WRAP_ROUNDS:-40}; i++)); do
		(cd "$mnt/wrap" && ls | xargs touch)
		sync
	done
	(cd "$mnt/wrap" && ls | sed -n 'p;n' | xargs rm)
fi
wl_modify "$mnt" "$work/writes1" 1
if [[ " $* " == *inline_data* ]]; then
	# The small files are inline (lsattr's N).
	lsattr "$mnt/small/f1" | grep -q '^[^ ]*N' || { echo "FAIL: small files are not inline"; exit 1; }
fi
# (The snapshot reads what round 1 changed: its atime updates belong
# there, not to round 2.)
python3 "$TRUTH" snap "$mnt" "$work/after1.json"
image c2
changes c1 c2
check round1 changes-c1-c2 before after1 writes1

echo "--- modify, round 2 (after a second checkpoint)"
wl_modify "$mnt" "$work/writes2" 2
python3 "$TRUTH" snap "$mnt" "$work/after2.json"
image c3
changes c2 c3
changes c1 c3
check round2 changes-c2-c3 after1 after2 writes2
cat "$work/writes1" "$work/writes2" >"$work/writes12"
check rounds12 changes-c1-c3 before after2 writes12
# The hostile-filesystem checks (hostile.sh: deep and long paths, many
# links, a planted cache, unowned and out-of-range changes, growfs), once
# per filesystem: with the default mkfs options only.
if [ $# = 0 ] && [ -z "${HOST_WRAP_FILES:-}" ]; then
	umount "$mnt"
	"$here/hostile.sh" "$fs"
fi
echo "PASS host-check $fs $*"
