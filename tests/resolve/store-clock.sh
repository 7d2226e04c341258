#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The state store (ext4) uses no clock: a change whose times are not newer
# than before is still listed.  On a loop device (no dm-chj: the change map
# and the marks come from images, as in host-check.sh), after a run that
# built the store:
#   back      f10: chmod, then every time put back to its value before
#             (debugfs, unmounted): only the mode differs, listed;
#   stepped   f20: chown, then ctime and mtime set to 2001 (a clock
#             stepped back years): listed;
#   reverted  f30: chmod and chmod back, then its times and i_version put
#             back: the record is byte for byte the one the store has, no
#             change a backup could see: not listed (the store's precision,
#             not a miss: the ground truth sees no change);
#   counted   f31: the same without i_version put back: the record differs
#             in that counter alone, listed (conservative);
# and the neighbours of all three in their inode block, unchanged, are not
# listed.  Every truly changed path must be listed (fstruth.py check).
#   tests/resolve/store-clock.sh     (root, loop devices; KEEP=1 keeps files)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/resolve/scratch.sh
. "$here/scratch.sh" store-clock
# shellcheck source=tests/resolve/store-run.sh
. "$here/store-run.sh"

truncate -s 128M "$img"
loop=$(losetup -f --show "$img")
mkfs.ext4 -q -b 4096 "$loop"
mkdir -p "$mnt"
mount -o noatime "$loop" "$mnt"
mkdir "$mnt/d"
for i in $(seq 0 63); do echo "file $i" >"$mnt/d/f$i"; done
sync
python3 "$TRUTH" snap "$mnt" "$work/before.json"
fsfreeze -f "$mnt"
cp --sparse=always "$img" "$work/c1.img"
fsfreeze -u "$mnt"
export CHJ_RESOLVE_CACHE_DIR=$work/cache
mkdir -m 700 "$CHJ_RESOLVE_CACHE_DIR"
: >"$work/none"
CHJ_RESOLVE_EPOCH=2 CHJ_RESOLVE_EPOCH_IMAGE=$work/c1.img CHJ_RESOLVE_CHANGES=$work/none \
	"$RESOLVE" --since 2 "$loop" >/dev/null

# Raw times of an inode (debugfs: "ctime: 0xSECONDS:EXTRA").
times() { debugfs -R "stat /d/$1" "$loop" 2>/dev/null | sed -n 's/^ *\([acm]time\): 0x\([0-9a-f]*\):\([0-9a-f]*\).*/\1 \2 \3/p'; }
chmod 0600 "$mnt/d/f10"
chown 1234:5678 "$mnt/d/f20"
for f in f30 f31; do
	chmod 0600 "$mnt/d/$f"
	chmod 0644 "$mnt/d/$f"
done
umount "$mnt"
# The times of f10, f30 and f31 as in the first image, put back; and the
# i_version of f30.
for f in f10 f30 f31; do
	while read -r field sec extra; do
		debugfs -w -R "sif /d/$f $field 0x$sec" "$loop" >/dev/null 2>&1
		debugfs -w -R "sif /d/$f ${field}_extra 0x$extra" "$loop" >/dev/null 2>&1
	done < <(debugfs -R "stat /d/$f" "$work/c1.img" 2>/dev/null |
		sed -n 's/^ *\([acm]time\): 0x\([0-9a-f]*\):\([0-9a-f]*\).*/\1 \2 \3/p')
done
v=$(debugfs -R "stat /d/f30" "$work/c1.img" 2>/dev/null |
	sed -n 's/.*Version: 0x\([0-9a-f]*\):\([0-9a-f]*\).*/\1\2/p')
debugfs -w -R "sif /d/f30 version 0x$v" "$loop" >/dev/null 2>&1
debugfs -w -R "sif /d/f20 ctime @1000000000" "$loop" >/dev/null 2>&1
debugfs -w -R "sif /d/f20 mtime @1000000000" "$loop" >/dev/null 2>&1
[ "$(times f10)" = "$(debugfs -R 'stat /d/f10' "$work/c1.img" 2>/dev/null |
	sed -n 's/^ *\([acm]time\): 0x\([0-9a-f]*\):\([0-9a-f]*\).*/\1 \2 \3/p')" ] ||
	fail "the times of f10 were not put back"
mount -o noatime "$loop" "$mnt"
store_resolve
listed d/f10 || fail "f10 (times put back) not listed"
listed d/f20 || fail "f20 (clock stepped back) not listed"
! listed d/f30 || fail "f30 (reverted byte for byte) listed"
listed d/f31 || fail "f31 (reverted but for i_version) not listed"
for i in 11 12 13 21 22 32; do
	! listed "d/f$i" || fail "f$i (unchanged neighbour) listed"
done
echo "PASS store-clock"
