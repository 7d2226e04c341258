#!/bin/bash
# Smoke test: the harness loaded dm-chj, device-mapper knows the chj target,
# and the module unloads cleanly.  (I/O through a chj device is tested by the
# target's own tests.)
# vm-mem: 1024
# vm-timeout: 120
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

log "module loaded: $CHJ_KO on $(uname -r)"
[ -d /sys/module/dm_chj ] || fail "/sys/module/dm_chj missing"
# The module built for the kernel booted (each kernel's has its own build).
magic=$(modinfo -F vermagic "$CHJ_KO")
[ "${magic%% *}" = "$(uname -r)" ] || fail "$CHJ_KO is built for '${magic%% *}', not $(uname -r)"
[ "$(modinfo -F srcversion "$CHJ_KO")" = "$(cat /sys/module/dm_chj/srcversion)" ] ||
	fail "the loaded dm_chj is not $CHJ_KO"
grep -q '^dm_chj ' /proc/modules || fail "dm_chj not in /proc/modules"

log "dmsetup targets"
targets=$(dmsetup targets)
echo "$targets"
grep -q '^chj ' <<<"$targets" || fail "dmsetup targets does not list chj"

log "rmmod dm_chj"
rmmod dm_chj
[ ! -d /sys/module/dm_chj ] || fail "dm_chj still loaded after rmmod"
if dmsetup targets | grep -q '^chj '; then fail "chj still listed after rmmod"; fi
log "ok"
