#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The state store on XFS uses no clock: a change whose times are not newer
# than before is still listed.  XFS's store keeps directory entry sets
# (docs/resolve.md, "What is compared (XFS)"); what could fool it is a
# directory whose entries changed while its times say nothing happened
# (mtime and ctime as they were at the checkpoint, or years older: a clock
# stepped back), and files whose every time was put back.  On a loop device
# (no dm-chj: the change map and the marks come from images, as in
# host-check.sh), after a run that built the store (epoch 2), each change
# made through the kernel, then, unmounted, its inode's times put back
# with xfs_db (the raw bigtime value, CRC recomputed), as a clock set back
# to the checkpoint's time would leave them, or set to 2001:
#   back      d/f10: chmod; mtime, ctime and atime put back: listed;
#   stepped   d/f20: chown; mtime and ctime set to 2001: listed;
#   data      d/f40: same-size overwrite in place, every time put back:
#             listed;
#   created   d/n1: new; d's mtime and ctime put back: listed, d too;
#   exchanged d/f50 <-> d/f51 (RENAME_EXCHANGE writes neither inode); d's
#             times put back: both listed (their entries differ from the
#             store's);
#   renamed   d/f60 -> d/r60; its ctime and d's times put back: r60 listed;
#   e/        e/a <-> e/b exchanged, e's mtime and ctime set to 2001:
#             e/a and e/b listed;
# and unchanged entries of d (f11..f13, f21, f22) are not listed: the
# store was used (and `state of epoch 2 used`).  Every truly changed path
# must be listed (fstruth.py check).  The clock itself is not stepped: it
# is the machine's (a time namespace moves only the monotonic and boot
# clocks), so the times are written where a stepped clock would put them.
#   tests/resolve/store-clock-xfs.sh [MKFS_XFS_OPTION...]
#       (root, loop devices; default -m rmapbt=1; KEEP=1 keeps files)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WL_PY=$here/workload.py
# shellcheck source=tests/resolve/scratch.sh
. "$here/scratch.sh" store-clock-xfs
# shellcheck source=tests/resolve/store-run.sh
. "$here/store-run.sh"

[ $# -gt 0 ] || set -- -m rmapbt=1
truncate -s 320M "$img"
loop=$(losetup -f --show "$img")
mkfs.xfs -q -f "$@" "$loop"
grep -q 'bigtime=1' <<<"$(xfs_info "$loop")" || fail "this test writes bigtime timestamps (mkfs.xfs -m bigtime=1)"
mkdir -p "$mnt"
mount -o noatime "$loop" "$mnt"
mkdir "$mnt/d" "$mnt/e"
for i in $(seq 0 63); do echo "file $i" >"$mnt/d/f$i"; done
for f in a b c d; do echo "e $f" >"$mnt/e/$f"; done
sync
python3 "$TRUTH" snap "$mnt" "$work/before.json"
# The times at the checkpoint, in nanoseconds: PATH ATIME MTIME CTIME.
for p in d/f10 d/f40 d/f60 d e; do
	echo "$p $(python3 -c 'import os, sys
s = os.lstat(sys.argv[1]); print(s.st_atime_ns, s.st_mtime_ns, s.st_ctime_ns)' "$mnt/$p")"
done >"$work/times"
declare -A ino
for p in d/f10 d/f20 d/f40 d/f60 d e; do ino[$p]=$(stat -c %i "$mnt/$p"); done
fsfreeze -f "$mnt"
cp --sparse=always "$img" "$work/c1.img"
fsfreeze -u "$mnt"
export CHJ_RESOLVE_CACHE_DIR=$work/cache
mkdir -m 700 "$CHJ_RESOLVE_CACHE_DIR"
: >"$work/none"
CHJ_RESOLVE_EPOCH=2 CHJ_RESOLVE_EPOCH_IMAGE=$work/c1.img CHJ_RESOLVE_CHANGES=$work/none \
	"$RESOLVE" --since 2 "$loop" >/dev/null 2>"$work/first.err" ||
	{ cat "$work/first.err"; fail "the first run failed"; }
[ -f "$CHJ_RESOLVE_CACHE_DIR/00000000-0000-0000-0000-000000000000.state" ] || fail "no state store was built"

# The changes, through the kernel (so logged as any change is).
chmod 0600 "$mnt/d/f10"
chown 1234:5678 "$mnt/d/f20"
printf 'FILE 40\n' | dd of="$mnt/d/f40" conv=notrunc status=none
echo new >"$mnt/d/n1"
python3 "$WL_PY" exchange "$mnt/d/f50" "$mnt/d/f51"
mv "$mnt/d/f60" "$mnt/d/r60"
python3 "$WL_PY" exchange "$mnt/e/a" "$mnt/e/b"
umount "$mnt"

# settime INODE FIELD NS: write an XFS bigtime timestamp (nanoseconds since
# 1970; on disk: nanoseconds since 1901-12-13T20:45:52Z).
settime() {
	xfs_db -x -c "inode $1" -c "write core.$2 $(($3 + 2147483648 * 1000000000))" "$loop" >/dev/null ||
		fail "xfs_db: cannot write core.$2 of inode $1"
}
y2001=$((1000000000 * 1000000000))
while read -r p a m c; do
	case $p in
	d/f10 | d/f40) settime "${ino[$p]}" atime "$a"; settime "${ino[$p]}" mtime "$m"; settime "${ino[$p]}" ctime "$c" ;;
	d/f60) settime "${ino[$p]}" ctime "$c" ;;
	d) settime "${ino[$p]}" mtime "$m"; settime "${ino[$p]}" ctime "$c" ;;
	e) settime "${ino[$p]}" mtime "$y2001"; settime "${ino[$p]}" ctime "$y2001" ;;
	esac
done <"$work/times"
settime "${ino[d/f20]}" mtime "$y2001"
settime "${ino[d/f20]}" ctime "$y2001"
mount -o noatime "$loop" "$mnt"
# The times are where the test put them.
for p in d/f10 d/f40 d; do
	want=$(grep "^$p " "$work/times" | cut -d' ' -f3,4)
	got=$(python3 -c 'import os, sys
s = os.lstat(sys.argv[1]); print(s.st_mtime_ns, s.st_ctime_ns)' "$mnt/$p")
	[ "$want" = "$got" ] || fail "the times of $p were not put back ($got, want $want)"
done
[ "$(stat -c %Z "$mnt/e")" = 1000000000 ] || fail "the ctime of e was not set to 2001"
[ "$(stat -c %Z "$mnt/d/f20")" = 1000000000 ] || fail "the ctime of d/f20 was not set to 2001"
store_resolve
for p in d/f10 d/f20 d/f40 d/n1 d d/f50 d/f51 d/r60 e e/a e/b; do
	listed "$p" || fail "$p not listed"
done
for i in 11 12 13 21 22; do
	! listed "d/f$i" || fail "d/f$i (unchanged entry) listed"
done
echo "PASS store-clock-xfs $*"
