#!/bin/bash
# vm-disks: 64M 1G
# vm-timeout: 400
. "$CHJ_ROOT/tests/vm/lib.sh"
. "$CHJ_ROOT/tests/vm/_chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
mnt=/tmp/mnt; mkdir -p $mnt
"$CHJ" create r /dev/vda /dev/vdb
mkfs.xfs -q -f -m rmapbt=1,reflink=1 /dev/mapper/r
mount /dev/mapper/r $mnt
kn=$(dmsetup info -c --noheadings -o blkdevname r)
h() { cut -d: -f2 /sys/fs/xfs/$kn/log/log_head_lsn; }
t() { local s e b0 b1; b0=$(h); s=$EPOCHREALTIME; "$@"; sync; e=$EPOCHREALTIME; b1=$(h); echo "PROBE $(awk -v a=$s -v b=$e 'BEGIN{printf "%.2f", b-a}')s $((b1-b0)) BB: $*"; }
mkdir $mnt/c $mnt/d
t sh -c "cd $mnt/c && seq -f c%g 2000 | xargs touch"
t sh -c "cd $mnt/c && seq -f c%g 2000 | xargs touch"
t sh -c "cd $mnt/c && seq -f c%g 2000 | xargs touch"
t sh -c "cd $mnt/c && seq -f c%g 2000 | xargs chmod 600"
t sh -c "cd $mnt/c && seq -f c%g 2000 | xargs chmod 644"
t xfs_io -f -c "pwrite -b 4k 0 32m" $mnt/d/f
t sh -c "xfs_io -c 'fpunch 0 32m' -c 'falloc 0 32m' $mnt/d/f"
t sh -c "for i in \$(seq 0 2 4000); do echo \"fpunch \$((i*8))k 4k\"; done | xfs_io $mnt/d/f >/dev/null"
t sh -c "xfs_io -c 'falloc 0 32m' $mnt/d/f"
t sh -c "for i in \$(seq 0 2 4000); do echo \"fpunch \$((i*8))k 4k\"; done | xfs_io $mnt/d/f >/dev/null"
t sh -c "cd $mnt/c && mkdir -p ../e && seq -f c%g 2000 | xargs mv -t ../e"
t sh -c "cd $mnt/e && seq -f c%g 2000 | xargs mv -t ../c"
