#!/bin/bash
# Harness self-test: vm_crash resets the guest, the harness boots it again on
# the same disks with CHJ_BOOT=2, and data synced before the crash survives.
# Boots 2 and 3 resume from the boot snapshot boot 1 saved (docs/testing.md):
# each has its own random stream (the first bytes it draws, a new
# filesystem's UUID), a clock that went forward, and this test's disks.
# vm-disks: 64M 16M
# vm-mem: 1024
# vm-timeout: 120
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

# draws: the first random bytes, a new filesystem's UUID, the clock.
draws() {
	local r
	r=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	mkfs.ext4 -q -F /dev/vdb
	echo "$r $(blkid -o value -s UUID /dev/vdb) $(date +%s)"
}

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
	draws >"$CHJ_OUT/draws-2"
	vm_crash
	;;
3)
	log "a second boot from the same snapshot"
	draws >"$CHJ_OUT/draws-3"
	read -r r2 u2 t2 <"$CHJ_OUT/draws-2"
	read -r r3 u3 t3 <"$CHJ_OUT/draws-3"
	[ "$r2" != "$r3" ] || fail "boots 2 and 3 drew the same random bytes: $r2"
	[ "$u2" != "$u3" ] || fail "boots 2 and 3 made filesystems with one UUID: $u2"
	[ "$t3" -ge "$t2" ] || fail "the clock went back from boot 2 ($t2) to boot 3 ($t3)"
	assert_eq 67108864 "$(blockdev --getsize64 /dev/vda)" "vda size"
	assert_eq 16777216 "$(blockdev --getsize64 /dev/vdb)" "vdb size"
	log "ok"
	;;
*)
	fail "unexpected boot $CHJ_BOOT"
	;;
esac
