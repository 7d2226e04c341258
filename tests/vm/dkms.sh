#!/bin/bash
# DKMS: dkms.conf builds dm-chj from a copy of the source tree for the
# running kernel, and the module it builds is the one that then tracks
# writes.  The build (scripts/dkms-build, run by make check before the VM
# tests) runs on the host, against the same stock kernel's headers the
# guest sees, in a private --dkmstree; this test loads what it made.
# vm-timeout: 120
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

kver=$(uname -r)
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$CHJ_ROOT/dkms.conf")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$CHJ_ROOT/dkms.conf")
if [ "$name" != dm-chj ] || [ -z "$ver" ]; then
	fail "dkms.conf: PACKAGE_NAME '$name', PACKAGE_VERSION '$ver'"
fi

# scripts/dkms-build built it on the host (make check's dkms-modules), with
# this kernel's headers, from a copy of the sources only.
log "the module DKMS built for $kver (scripts/dkms-build)"
ko=$(find "$CHJ_ROOT/build/dkms/$kver" -maxdepth 1 -name 'dm-chj.ko*' | head -n 1)
[ -n "$ko" ] || fail "no build/dkms/$kver/dm-chj.ko*: run 'make dkms-modules' (or scripts/dkms-build $kver)"
magic=$(modinfo -F vermagic "$ko")
[ "${magic%% *}" = "$kver" ] || fail "DKMS module's vermagic '$magic' is not for $kver"

log "the DKMS module replaces the tree's and is built from the same source"
[ "$(modinfo -F version "$ko")" = "$ver" ] ||
	fail "module version $(modinfo -F version "$ko"), dkms.conf says $ver"
want=$(cat /sys/module/dm_chj/srcversion)
[ "$(modinfo -F srcversion "$ko")" = "$want" ] ||
	fail "DKMS module srcversion $(modinfo -F srcversion "$ko"), the tree's $want"
rmmod dm_chj
insmod "$ko" || fail "insmod $ko failed"
[ "$(cat /sys/module/dm_chj/srcversion)" = "$want" ] || fail "dm_chj did not load from $ko"

log "it tracks: a write marks its region, a checkpoint starts epoch 2"
brd_setup 2 $((16 << 10))
dev=$(dm_create d "0 $(sectors /dev/ram1) chj /dev/ram0 /dev/ram1 8")
dd if=/dev/urandom of="$dev" bs=4096 seek=5 count=1 oflag=direct status=none
read -ra st <<<"$(dmsetup status d)"
[ "${st[6]}" = 1/4096 ] || fail "after one 4 KiB write, marked ${st[6]}, want 1/4096 (status: ${st[*]})"
[ "$(dmsetup message d 0 checkpoint)" = 2 ] || fail "checkpoint did not answer 2"
dmsetup remove d
log ok
