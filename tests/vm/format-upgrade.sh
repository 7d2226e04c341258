#!/bin/bash
# Format 1 metadata is upgraded to format 2 on its first load, crash-safely:
# the format-1 copy stays in force until the one superblock commit that
# upgrades it, so a load whose upgrade write fails leaves loadable format-1
# metadata with the same answer, and the next load upgrades it; nothing is
# lost either way.  Format 1 is made from format 2 by tests/tools/fmt1
# (the layouts differ only in the superblock block).
# vm-timeout: 240
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
FMT1=$CHJ_ROOT/tests/tools/fmt1

brd_setup 2 65536
S=$(sectors /dev/ram0)
version() { $CHJ dump /dev/mapper/md | sed -n 's/.*chj metadata version \([0-9]*\)$/\1/p'; }
dm_create md "0 $(sectors /dev/ram1) linear /dev/ram1 0" >/dev/null

log "format 2 metadata with two epochs of history, cleanly removed"
dm_create c "$(chj_table /dev/mapper/md /dev/ram0 8)" >/dev/null
wr /dev/mapper/c 0 64
E2=$(dmsetup message c 0 checkpoint)
wr /dev/mapper/c 8192 64
E3=$(dmsetup message c 0 checkpoint)
wr /dev/mapper/c 20000 8
dmsetup remove c
assert_eq 2 "$(version)" "the format written"
$CHJ changes --since 1 --metadata /dev/mapper/md >/tmp/want1
$CHJ changes --since "$E3" --metadata /dev/mapper/md >/tmp/want3
[ -s /tmp/want3 ] || fail "no current-epoch changes to carry over"

log "made format 1; chj reads it with the same answer"
$FMT1 /dev/mapper/md
assert_eq 1 "$(version)" "converted"
$CHJ changes --since 1 --metadata /dev/mapper/md | cmp -s - /tmp/want1 || fail "format 1 reads differently"

log "a load whose upgrade write fails: refused, format 1 left as it was"
dmsetup suspend md
dmsetup load md --table "0 $(sectors /dev/ram1) flakey /dev/ram1 0 0 1 1 error_writes"
dmsetup resume md
if dmsetup create c --table "$(chj_table /dev/mapper/md /dev/ram0 8)" 2>/tmp/err; then
	fail "a load whose superblock commit failed was accepted"
fi
dmsetup remove c 2>/dev/null || true
grep -q "chj.*Cannot load metadata" <<<"$(dmesg)" || { dmesg | tail -5; fail "no kernel log line for the failed load"; }
dmsetup suspend md
dmsetup load md --table "0 $(sectors /dev/ram1) linear /dev/ram1 0"
dmsetup resume md
assert_eq 1 "$(version)" "still format 1 after the failed upgrade"
$CHJ changes --since 1 --metadata /dev/mapper/md | cmp -s - /tmp/want1 || fail "the failed upgrade changed the answer"

log "the next load upgrades; every epoch's answer is kept"
dm_create c "$(chj_table /dev/mapper/md /dev/ram0 8)" >/dev/null
grep -q "upgraded from format 1 to 2" <<<"$(dmesg)" || fail "no upgrade log line"
$CHJ changes --since 1 c | cmp -s - /tmp/want1 || fail "changes since 1 differ after the upgrade"
$CHJ changes --since "$E3" c | cmp -s - /tmp/want3 || fail "changes since $E3 differ after the upgrade"
wr /dev/mapper/c 30000 4
dmsetup remove c
assert_eq 2 "$(version)" "format 2 after the upgrade"
grep -q "^60000 8$" <<<"$($CHJ changes --since "$E3" --metadata /dev/mapper/md)" || fail "a write after the upgrade is not recorded"
log "ok"
