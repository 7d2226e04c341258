#!/bin/bash
# chj-resolve on XFS over the real target, with the reverse-mapping btree
# (GETFSMAP) and without it (FIEMAP walk): every truly changed file and
# directory is listed (ground truth from before/after snapshots), the --json
# ranges cover every write into a sparse VM image, both while the changes
# sit in the XFS log and after a freeze wrote them home.
# vm-disks: 64M 1G 64M 1G
# vm-timeout: 360
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"
# shellcheck source=tests/vm/_chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_chj.sh"
# shellcheck source=tests/vm/_resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_resolve.sh"

mnt=/tmp/mnt
mkdir -p $mnt
base=$CHJ_OUT
for rmap in ${XFS_RMAPS:-1 0}; do
	log "XFS with rmapbt=$rmap"
	CHJ_OUT=$base/rmapbt$rmap
	mkdir -p "$CHJ_OUT"
	if [ $rmap = 1 ]; then meta=/dev/vda origin=/dev/vdb; else meta=/dev/vdc origin=/dev/vdd; fi
	"$CHJ" create x$rmap $meta $origin
	mkfs.xfs -q -f -m rmapbt=$rmap /dev/mapper/x$rmap
	mount /dev/mapper/x$rmap $mnt
	resolve_truth_test x$rmap $mnt
	grep -q "method XFS: $([ $rmap = 1 ] && echo GETFSMAP || echo FIEMAP)" "$CHJ_OUT/stats.txt" ||
		fail "rmapbt=$rmap: unexpected method"
	umount $mnt
	"$CHJ" remove x$rmap
done
log "ok"
