#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# Seed inputs for chj-resolve's fuzz harnesses (userspace/fuzz/fuzz_*.c),
# taken from real filesystems: an ext4 image with extent-mapped, deep and
# block-mapped files (ext4map), its journal after some transactions (jbd2),
# an XFS superblock (xfs_sb), the start of a live XFS log (xfslog),
# a small name index (names) and a btrfs search result (btrfs).
# Needs root and loop devices (the XFS log is
# taken from a mounted filesystem).  Writes userspace/fuzz/seeds/NAME/.
#
#   tests/resolve/fuzz-seeds.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seeds=$here/../../userspace/fuzz/seeds
work=$(mktemp -d "${TMPDIR:-/tmp}/chj-fuzz-seeds.XXXXXX")
loop=
cleanup() {
	set +e
	mountpoint -q "$work/mnt" && umount "$work/mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$seeds"/{ext4map,jbd2,xfs_sb,xfslog,names,btrfs} "$work/mnt"

# ext4: 1 KiB blocks, small; files written with debugfs (no mount).
seq 1 20000 >"$work/data"
for feat in "" ",^extent,^64bit"; do
	img=$work/e.img
	rm -f "$img"
	mkfs.ext4 -q -F -b 1024 -N 32 -O "^has_journal$feat" "$img" 400k
	for i in 1 2 3; do
		debugfs -w -R "write $work/data f$i" "$img" >/dev/null 2>&1
	done
	cp "$img" "$seeds/ext4map/img${feat:+-noextent}"
done
# The journal (1 KiB blocks) with transactions in it: a mounted ext4.
img=$work/j.img
truncate -s 8M "$img"
mkfs.ext4 -q -F -b 1024 -J size=1 "$img"
loop=$(losetup -f --show "$img")
mount "$loop" "$work/mnt"
for i in $(seq 1 20); do echo "$i" >"$work/mnt/f$i"; done
sync
fsfreeze -f "$work/mnt"
debugfs -R "dump <8> $work/journal" "$loop" >/dev/null 2>&1
fsfreeze -u "$work/mnt"
umount "$work/mnt"
losetup -d "$loop"
loop=
head -c 65536 "$work/journal" >"$work/j64"
python3 "$here/jbd2-seed.py" "$work/j64"
{ printf '\0'; cat "$work/j64"; } >"$seeds/jbd2/live"
{ printf '\1'; cat "$work/j64"; } >"$seeds/jbd2/moving"

# XFS: the superblock, and the log of a mounted filesystem after changes.
img=$work/x.img
truncate -s 320M "$img"
mkfs.xfs -q -f -m rmapbt=1 "$img"
{ head -c 512 "$img"; printf '\0\0\0\0\0\0\0\x80'; } >"$seeds/xfs_sb/v5"
loop=$(losetup -f --show "$img")
mount "$loop" "$work/mnt"
mkdir "$work/mnt/d"
for i in $(seq 1 50); do echo "$i" >"$work/mnt/d/f$i"; done
mv "$work/mnt/d/f1" "$work/mnt/d/g1"
sync
fsfreeze -f "$work/mnt"
bs=$(xfs_db -r -c 'sb 0' -c 'p blocksize' "$loop" | awk '{print $3}')
agblocks=$(xfs_db -r -c 'sb 0' -c 'p agblocks' "$loop" | awk '{print $3}')
agblklog=$(xfs_db -r -c 'sb 0' -c 'p agblklog' "$loop" | awk '{print $3}')
logstart=$(xfs_db -r -c 'sb 0' -c 'p logstart' "$loop" | awk '{print $3}')
agno=$((logstart >> agblklog)) agbno=$((logstart & ((1 << agblklog) - 1)))
off=$(((agno * agblocks + agbno) * bs))
{ printf '\1'; dd if="$loop" bs=4096 skip=$((off / 4096)) count=16 status=none; } \
	>"$seeds/xfslog/live"
fsfreeze -u "$work/mnt"
umount "$work/mnt"
losetup -d "$loop"
loop=

# A name index (SQLite, nameindex.c's schema, the fuzz harness's
# all-zero identity): directory 2 (the root) holding "a" (3, a directory)
# and "file" (4), "a" holding "b" (5); one hard link "a/file2" of 4.
rm -f "$seeds/names/small"
sqlite3 "$seeds/names/small" <<'EOF'
CREATE TABLE meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE ent(dir INTEGER NOT NULL, name BLOB NOT NULL, ino INTEGER NOT NULL,
 t INTEGER NOT NULL, PRIMARY KEY(dir, name)) WITHOUT ROWID;
INSERT INTO meta VALUES('version', 1), ('ident', 'fs= uuid= chj=00000000-0000-0000-0000-000000000000'),
 ('epoch', 3), ('root', 2), ('entries', 4);
INSERT INTO ent VALUES(2, CAST('a' AS BLOB), 3, 4), (2, CAST('file' AS BLOB), 4, 8),
 (3, CAST('b' AS BLOB), 5, 4), (3, CAST('file2' AS BLOB), 4, 8);
CREATE INDEX ent_ino ON ent(ino, t);
EOF
# btrfs: a TREE_SEARCH_V2 result buffer with one item of each kind the
# parsers read (fuzz_btrfs.c): a root backref, a chunk, extent and metadata
# items, root items, inode 257's inode item, refs (in directories 256 and
# 300, which the harness can name), an extref, dir and xattr items, and
# inline, regular, prealloc and compressed file extents.
python3 - "$seeds/btrfs/items" <<'EOF'
import struct, sys
def item(objectid, typ, offset, data, transid=7):
    return struct.pack('<QQQII', transid, objectid, offset, typ, len(data)) + data
out = item(256, 144, 5, struct.pack('<QQH', 256, 2, 3) + b'sub')
chunk = struct.pack('<QQQQIIIHH', 8 << 20, 2, 65536, 1, 65536, 65536, 4096, 1, 0)
chunk += struct.pack('<QQ16s', 1, 1 << 20, b'\0' * 16)
out += item(256, 228, 1 << 20, chunk)
out += item(2 << 20, 168, 4096, struct.pack('<QQQ', 1, 90, 1))
out += item(3 << 20, 169, 0, struct.pack('<QQQ', 1, 95, 2))
out += item(5, 132, 0, b'\0' * 64)
out += item(256, 132, 0, b'\0' * 64)
ino = bytearray(160)
struct.pack_into('<QQQ', ino, 0, 7, 99, 8192)
struct.pack_into('<I', ino, 52, 0o100644)
out += item(257, 1, 0, bytes(ino))
out += item(257, 12, 256, struct.pack('<QH', 2, 4) + b'file' + struct.pack('<QH', 3, 5) + b'other')
out += item(257, 12, 300, struct.pack('<QH', 4, 1) + b'g')
out += item(257, 13, 12345, struct.pack('<QQH', 300, 5, 2) + b'xr')
out += item(256, 84, 99, b'\0' * 30 + b'file')
out += item(257, 24, 7, b'\0' * 30 + b'user.a')
def fe(typ, comp, bytenr, dlen, off, n):
    return struct.pack('<QQBBHB', 7, n, comp, 0, 0, typ) + struct.pack('<QQQQ', bytenr, dlen, off, n)
out += item(257, 108, 0, struct.pack('<QQBBHB', 7, 100, 0, 0, 0, 0) + b'x' * 100)
out += item(257, 108, 4096, fe(1, 0, 2 << 20, 4096, 0, 4096))
out += item(257, 108, 8192, fe(2, 0, 2 << 20, 8192, 4096, 4096))
out += item(257, 108, 12288, fe(1, 1, 5 << 20, 4096, 0, 16384))
open(sys.argv[1], 'wb').write(out)
EOF
ls -l "$seeds"/*
