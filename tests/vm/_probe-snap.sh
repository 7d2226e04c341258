#!/bin/bash
# vm-disks: 64M 1G
# vm-timeout: 300
. "$CHJ_ROOT/tests/vm/lib.sh"
. "$CHJ_ROOT/tests/vm/_chj.sh"
. "$CHJ_ROOT/tests/vm/_resolve.sh"
mnt=/tmp/mnt; mkdir -p $mnt
"$CHJ" create r /dev/vda /dev/vdb
mkfs.ext4 -q /dev/mapper/r
mount /dev/mapper/r $mnt
wl_populate $mnt
sync
find "$mnt" -xdev -type f -exec head -qc1 {} + >/dev/null
for i in 1 2 3; do
log snap-new
python3 -S "$TRUTH" snap "$mnt" /tmp/a.json
log snap-old
python3 -S $CHJ_ROOT/build/fstruth-old.py snap "$mnt" /tmp/b.json
done
log done
