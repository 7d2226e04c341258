#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# chj-resolve against ground truth on the host, with a loop device and no
# dm-chj: the change map is the difference between images of the device
# taken before and after the workload (a subset of what dm-chj would mark,
# which is all the resolver may rely on), passed through CHJ_RESOLVE_CHANGES.
#
#   tests/resolve/host-check.sh ext4|xfs|xfs-normap|btrfs [MKFS_OPTION...]
# HOST_WRAP_FILES=N creates N files after the checkpoint, touches them all
# HOST_WRAP_ROUNDS (40) times with a sync each time, and deletes half:
# enough to wrap an XFS log of 64 MiB since the checkpoint.
# Needs root and loop devices.  Work files go to $TMPDIR (default /tmp).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RESOLVE=$root/userspace/chj-resolve
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
xfs) mkfs.xfs -q -f -m rmapbt=1 "$@" "$loop" ;;
xfs-normap) mkfs.xfs -q -f -m rmapbt=0 "$@" "$loop" ;;
btrfs) mkfs.btrfs -q -f "$@" "$loop" ;;
*) echo "unknown filesystem $fs" >&2; exit 2 ;;
esac
mkdir -p "$mnt"
# btrfs as usually mounted (atime updates would COW metadata on every read).
opts=
[ "$fs" = btrfs ] && opts="-o noatime"
# shellcheck disable=SC2086
mount $opts "$loop" "$mnt"

echo "--- populate"
wl_populate "$mnt"
sync
python3 "$TRUTH" snap "$mnt" "$work/before.json"
# A last small change before the checkpoint, so that the populate is not
# what the transaction spanning the checkpoint holds (see resolve.md).
echo settle >"$mnt/.settle"
# (btrfs: see extra_settle in tests/vm/resolve-btrfs.sh)
[ "$fs" = btrfs ] && btrfs -q subvolume create "$mnt/settled" && echo s >"$mnt/settled/s"
sync
python3 "$TRUTH" snap "$mnt" "$work/before.json"
# The "checkpoint": a consistent image of the device.
fsfreeze -f "$mnt"
cp --sparse=always "$img" "$work/before.img"
fsfreeze -u "$mnt"
# A first run (no change) builds the name cache as the tree is now.
export CHJ_RESOLVE_CACHE_DIR=$work/cache
mkdir -m 700 "$CHJ_RESOLVE_CACHE_DIR"
: >"$work/nochange"
CHJ_RESOLVE_CHANGES=$work/nochange "$RESOLVE" "$loop" >/dev/null

echo "--- modify"
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
wl_modify "$mnt" "$work/writes"
sync
cp --sparse=always "$img" "$work/after.img"
# btrfs writes tree blocks (16 KiB) whole: mark whole nodes.
unit=4096
[ "$fs" = btrfs ] && unit=16384
python3 "$TRUTH" diffimg "$work/before.img" "$work/after.img" $unit >"$work/changes"
echo "changed ranges: $(wc -l <"$work/changes")"

echo "--- resolve"
rc=0
CHJ_RESOLVE_CHANGES=$work/changes "$RESOLVE" --stats --json "$loop" >"$work/out.json" 2>"$work/stats" || rc=$?
cat "$work/stats"
CHJ_RESOLVE_CHANGES=$work/changes "$RESOLVE" -0 "$loop" >"$work/out0" || rc=$?
CHJ_RESOLVE_CHANGES=$work/changes "$RESOLVE" "$loop" >"$work/out.txt" || rc=$?
[ $rc = 0 ] || { echo "chj-resolve exited $rc"; exit 1; }
grep "name cache" "$work/stats" || true
# The cache (used above where it applies) gives what a walk gives.
CHJ_RESOLVE_CACHE=off CHJ_RESOLVE_CHANGES=$work/changes "$RESOLVE" -0 "$loop" >"$work/out0-walk"
cmp "$work/out0" "$work/out0-walk" || { echo "name cache and walk disagree"; exit 1; }
python3 "$TRUTH" snap "$mnt" "$work/after.json"
python3 "$TRUTH" check "$work/before.json" "$work/after.json" "$work/out0" --mount "$mnt"
python3 "$TRUTH" check "$work/before.json" "$work/after.json" "$work/out.json" --mount "$mnt" \
	--json --writes "$work/writes"
# The escaped line output names the same paths as -0.
n0=$(tr -cd '\0' <"$work/out0" | wc -c)
nl=$(wc -l <"$work/out.txt")
[ "$n0" = "$nl" ] || { echo "line output has $nl paths, -0 has $n0"; exit 1; }
grep -q '^\\.*new\\nline$' "$work/out.txt" || { echo "escaped newline name missing"; exit 1; }
echo "PASS host-check $fs"
