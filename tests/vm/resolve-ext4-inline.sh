#!/bin/bash
# chj-resolve on ext4 with inline data (mkfs -O inline_data) over the real
# target: resolve-ext4's ground-truth test over two epochs, with small files
# whose data lives in their inodes (and one that outgrows it); and exit 3
# on a device that holds no filesystem.
# vm-disks: 64M 512M
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

mnt=/tmp/mnt
mkdir -p $mnt
"$CHJ" create i /dev/vda /dev/vdb
log "exit 3: no filesystem on the device"
rexpect 3 "$RESOLVE" i
grep -q "no filesystem" "$CHJ_OUT/last.err" || fail "no 'no filesystem' reason"
[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed paths"

mkfs.ext4 -q -O inline_data /dev/mapper/i
mount /dev/mapper/i $mnt
# Fewer small files and a smaller image than resolve-ext4: the small files
# are the point.
WL_SMALL=500 WL_IMAGE_MB=32 resolve_truth_test i $mnt
# With the state store (steady state): issue 16's target.
resolve_min_precision 0.90
# The small files were inline (lsattr's N), old and new ones.
lsattr "$mnt/small/f1" | grep -q '^[^ ]*N' || fail "small files are not inline"
lsattr "$mnt/small-new/r2-n1" | grep -q '^[^ ]*N' || fail "new small files are not inline"
lsattr "$mnt/d/tiny-grow" | grep -q '^[^ ]*N' && fail "d/tiny-grow did not outgrow its inode"
umount $mnt
"$CHJ" remove i
log "ok"
