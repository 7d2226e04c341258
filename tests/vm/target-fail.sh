#!/bin/bash
# Metadata write failures (dm-flakey error_writes): the held write is
# errored and never reaches the origin, the target enters fail mode (status,
# kernel log), every write fails and reads keep working; a reload onto
# writable metadata starts the epoch marked-all.
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"

brd_setup 2 65536
MS=$(sectors /dev/ram0)
S=$(sectors /dev/ram1)
dmsetup create md --table "0 $MS linear /dev/ram0 0"
md=$(dm_node md)
dev=$(dm_create t "$(chj_table "$md" /dev/ram1 8)")
head -c 64M /dev/urandom | dd of=/dev/ram1 bs=1M oflag=direct status=none
wr "$dev" 0 4
assert_eq 1 "$(st t marked)" "marked before the fault"

log "metadata writes now fail"
# Cleared first: the cleaner's write of the exact map may fail (and say
# so) before the write below.
dmesg -C
dmsetup load md --table "0 $MS flakey /dev/ram0 0 0 1 1 error_writes"
dmsetup resume md
# 8 MiB: another chunk than the write above (4 MiB chunks), so it needs a
# chunk mark, which fails.
before=$(dd if=/dev/ram1 bs=4096 skip=2048 count=1 iflag=direct status=none | sha256sum)
if wr "$dev" 8192 4 2>/dev/null; then fail "first-touch write succeeded with failing metadata"; fi
assert_eq "$before" "$(dd if=/dev/ram1 bs=4096 skip=2048 count=1 iflag=direct status=none | sha256sum)" \
	"origin untouched by the unmarked write"
assert_eq fail "$(status_mode t)" "mode"
grep -q "writes are errored until the table is reloaded" <<<"$(dmesg)" || fail "kernel log does not say why"
if wr "$dev" 0 4 2>/dev/null; then fail "write to a marked region succeeded in fail mode"; fi
if dmsetup message t 0 checkpoint 2>/dev/null; then fail "checkpoint in fail mode"; fi
dd if="$dev" of=/dev/null bs=1M count=4 iflag=direct status=none || fail "reads fail in fail mode"

log "a reload while metadata still fails is refused"
dmsetup load t --table "$(chj_table "$md" /dev/ram1 8)"
if dmsetup resume t 2>/dev/null; then fail "resume on failing metadata succeeded"; fi
dmsetup remove t || dmsetup remove --force t

log "metadata writable again: reload starts marked-all"
dmsetup load md --table "0 $MS linear /dev/ram0 0"
dmsetup resume md
dev=$(dm_create t "$(chj_table "$md" /dev/ram1 8)")
assert_eq "ok $((S / 8))" "$(status_mode t) $(st t marked)" "after reload"
wr "$dev" 400 4
assert_eq 2 "$(dmsetup message t 0 checkpoint)" "checkpoint after recovery"
dmsetup remove t

log "drop_writes (a device that lies about durability) causes no oops"
dmsetup load md --table "0 $MS flakey /dev/ram0 0 0 1 1 drop_writes"
dmsetup resume md
dev=$(dm_create t "$(chj_table "$md" /dev/ram1 8)")
wr "$dev" 800 4
dmsetup remove t md
log "ok"
