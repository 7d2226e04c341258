#!/bin/bash
# Restore an image backup made by nbd-image-backup.py onto a device.
#
#   nbd-image-restore.sh BACKUP TARGET
#
# TARGET is a block device (or file, or an NBD URI nbdcopy accepts) of the
# backup's size; it is overwritten whole with nbdcopy, then read back and
# compared with the backup by checksum.  Restoring onto a chj device
# (/dev/mapper/NAME) marks every region changed, so the next backup of it
# copies everything once: that is correct, not a fault.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BACKUP TARGET" >&2; exit 2; }
backup=$1 target=$2
size=$(stat -c %s "$backup")
if [ -b "$target" ]; then
	tsize=$(blockdev --getsize64 "$target")
	[ "$tsize" = "$size" ] || { echo "nbd-image-restore: $target: $tsize bytes, the backup $size" >&2; exit 1; }
fi
nbdcopy --flush "$backup" "$target"
want=$(sha256sum <"$backup" | cut -d' ' -f1)
got=$(head -c "$size" "$target" | sha256sum | cut -d' ' -f1)
[ "$want" = "$got" ] || { echo "nbd-image-restore: $target: checksum $got, the backup's $want" >&2; exit 1; }
echo "restored $size bytes, sha256 $got"
