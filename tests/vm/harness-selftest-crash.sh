#!/bin/bash
# Harness self-test: vm_crash resets the guest, the harness boots it again on
# the same disks with CHJ_BOOT=2, and data synced before the crash survives.
# vm-disks: 64M 16M
# vm-mem: 1024
# vm-timeout: 120
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"

case $CHJ_BOOT in
1)
	log "ext4 on vda, a synced file"
	mkfs.ext4 -q /dev/vda
	mkdir /tmp/mnt
	mount /dev/vda /tmp/mnt
	head -c 1M /dev/urandom >/tmp/mnt/data
	sync
	sha256sum </tmp/mnt/data >"$CHJ_OUT/data.sha256"
	log "raw block on vdb, written O_DIRECT and fsynced"
	echo "chj crash self-test" | dd of=/dev/vdb bs=4096 conv=sync,fsync oflag=direct status=none
	vm_crash
	;;
2)
	log "after the crash"
	mkdir /tmp/mnt
	mount /dev/vda /tmp/mnt
	assert_eq "$(cat "$CHJ_OUT/data.sha256")" "$(sha256sum </tmp/mnt/data)" "ext4 file checksum"
	assert_eq "chj crash self-test" "$(head -n 1 /dev/vdb)" "vdb first block"
	umount /tmp/mnt
	log "ok"
	;;
*)
	fail "unexpected boot $CHJ_BOOT"
	;;
esac
