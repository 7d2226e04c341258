#!/bin/bash
# chj-resolve on ext4 over the real target: every file and directory that
# truly changed (ground truth from before/after snapshots of the tree) is
# listed, over two epochs, the --json ranges cover every write (scattered
# ones into a sparse VM image among them); progress on a terminal; and the
# exits: future epoch, wrong mount, not mounted, epoch no longer retained,
# fail mode ("full scan needed", nothing on stdout); resolves while traffic
# wraps the journal (resolve_live).  resolve-ext4-inline:
# the same with inline data.  A short run (VM_SHORT=1) leaves out the
# progress line and the usage exits.
# vm-disks: 64M 1G 128M
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

mnt=/tmp/mnt
mkdir -p $mnt
"$CHJ" create r /dev/vda /dev/vdb
# The smallest journal (4 MiB), so that resolve_live's traffic wraps it in
# seconds.
mkfs.ext4 -q -J size=4 /dev/mapper/r
mount /dev/mapper/r $mnt
resolve_truth_test r $mnt
# With the state store (steady state): issue 16's target.
resolve_min_precision 0.90
resolve_live r $mnt ext4
# The progress line and the usage exits are the resolver's own, the same
# on every kernel: not in a short run (the second kernel's).
if ! short; then
	resolve_progress r
	resolve_exit_tests r $mnt /dev/mapper/r
fi
umount $mnt
"$CHJ" remove r

log "exit 3: epoch no longer retained"
# A 16-block metadata slice keeps 13 journal blocks: 15 epochs drop epoch 1.
dm_create smeta "0 128 linear /dev/vdc 0" >/dev/null
dm_create sorig "0 200000 linear /dev/vdc 2048" >/dev/null
"$CHJ" create s /dev/mapper/smeta /dev/mapper/sorig --force
mkfs.ext4 -q /dev/mapper/s
mount /dev/mapper/s $mnt
for i in $(seq 15); do
	echo "$i" >"$mnt/f$i"
	sync
	"$CHJ" checkpoint s >/dev/null
done
rexpect 3 "$RESOLVE" --since 1 s
grep -q "full scan needed" "$CHJ_OUT/last.err" || fail "no 'full scan needed'"
[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed paths"
old=$(st s old)
rexpect 0 "$RESOLVE" --since "$old" s

log "exit 3: fail mode, entered during chj-resolve's own sync"
# Dirty data in fresh regions, then the metadata device starts failing: the
# writes of chj-resolve's syncfs fail the target (and the syncfs).
head -c 1M /dev/urandom >"$mnt/dirty"
dmsetup suspend smeta
dmsetup load smeta --table "0 128 error"
dmsetup resume smeta
rexpect 3 "$RESOLVE" s
grep -q "fail mode" "$CHJ_OUT/last.err" || fail "no 'fail mode' reason"
[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed paths"
log "exit 3: fail mode"
dd if=/dev/urandom of=/dev/mapper/s bs=4096 count=1 seek=20000 oflag=direct conv=notrunc \
	status=none 2>/dev/null || true
assert_eq fail "$(status_mode s)" "mode after a metadata write error"
rexpect 3 "$RESOLVE" --since "$old" s
grep -q "fail mode" "$CHJ_OUT/last.err" || fail "no 'fail mode' reason"
[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed paths"
umount $mnt || umount -l $mnt
dmsetup remove s
dmsetup remove smeta sorig
log "ok"
