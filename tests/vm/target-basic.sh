#!/bin/bash
# dm-chj basics: format, marking, status, checkpoint, mark_all, discards,
# table echo, and every bad table line refused with a clear error.
# vm-timeout: 240
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"

brd_setup 4 65536
S=$(sectors /dev/ram1)
NR=$((S / 8))

log "create on a zeroed metadata device: it formats"
dev=$(dm_create t "$(chj_table /dev/ram0 /dev/ram1 8)")
assert_eq "8 1 1 0/$NR" "$(st t rs) $(st t cur) $(st t old) $(st t marked)/$(st t nr)" "fresh status"
assert_eq ok "$(status_mode t)" "mode"
assert_eq "0 $S chj 1:0 1:1 8" "$(dmsetup table t)" "table echo"

log "writes mark their regions, once"
wr "$dev" 0 4
assert_eq 1 "$(st t marked)" "one 4K write"
wr "$dev" 1024 1024
assert_eq 257 "$(st t marked)" "plus 1 MiB"
wr "$dev" 1024 1024
assert_eq 257 "$(st t marked)" "rewrite marks nothing new"
dd if="$dev" of=/dev/null bs=1M count=8 iflag=direct status=none
assert_eq 257 "$(st t marked)" "reads mark nothing"
# An unaligned write straddling two regions marks both.
dd if=/dev/urandom of="$dev" bs=512 seek=$((4096 * 2 + 7)) count=2 oflag=direct conv=notrunc status=none
assert_eq 259 "$(st t marked)" "straddling write"

log "checkpoint starts epoch 2 with nothing marked"
assert_eq 2 "$(dmsetup message t 0 checkpoint)" "checkpoint result"
assert_eq "2 1 0" "$(st t cur) $(st t old) $(st t marked)" "after checkpoint"
[ "$(st t jused)" -ge 1 ] || fail "journal holds epoch 1"
wr "$dev" 0 4
assert_eq 1 "$(st t marked)" "first write of epoch 2"
assert_eq 3 "$(dmsetup message t 0 checkpoint)" "second checkpoint"
assert_eq 4 "$(dmsetup message t 0 checkpoint)" "empty epoch checkpoint"

log "mark_all"
dmsetup message t 0 mark_all
assert_eq "$NR" "$(st t marked)" "mark_all"

log "unknown messages are refused"
if dmsetup message t 0 frobnicate 2>/dev/null; then fail "unknown message accepted"; fi
if dmsetup message t 0 checkpoint extra 2>/dev/null; then fail "checkpoint with args accepted"; fi

log "reads and writes go to the origin 1:1"
wr "$dev" 4096 64
assert_eq "$(dd if="$dev" bs=4096 skip=1024 count=16 iflag=direct status=none | sha256sum)" \
	"$(dd if=/dev/ram1 bs=4096 skip=1024 count=16 iflag=direct status=none | sha256sum)" "origin content"
dmsetup remove t

log "discard and write-zeroes mark (loop origin: brd has no discard)"
modprobe loop
truncate -s 64M /tmp/origin
loop=$(losetup -f --show /tmp/origin)
head -c 64M /dev/urandom >/tmp/origin
dd if=/dev/zero of=/dev/ram3 bs=4096 count=2 oflag=direct status=none
dev=$(dm_create d "$(chj_table /dev/ram3 "$loop" 8)")
blkdiscard -o $((8 << 20)) -l $((1 << 20)) "$dev"
assert_eq 256 "$(st d marked)" "discard of 1 MiB"
blkdiscard -z -o $((16 << 20)) -l 65536 "$dev"
assert_eq 272 "$(st d marked)" "write-zeroes of 64 KiB"
assert_eq "$(head -c 65536 /dev/zero | sha256sum)" \
	"$(dd if="$loop" bs=65536 skip=256 count=1 iflag=direct status=none | sha256sum)" "write-zeroes reached the origin"
dmsetup remove d
losetup -d "$loop"

log "chunks: one mark covers a chunk; idle chunks are retired; mark_ahead is accepted"
# No clean pass may retire a chunk between the writes below: a 60 s
# interval while they run, then a suspend retires everything.
echo 60000 >/sys/module/dm_chj/parameters/clean_interval_ms
dd if=/dev/zero of=/dev/ram3 bs=4096 count=2 oflag=direct status=none
dev=$(dm_create m "$(chj_table /dev/ram3 /dev/ram1 8) 4 chunk_sectors 2048 mark_ahead 64")
assert_eq "0 $S chj 1:3 1:1 8 4 chunk_sectors 2048 mark_ahead 64" "$(dmsetup table m)" "table echo with features"
stat_of() { dmsetup message m 0 stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
assert_eq 256 "$(stat_of chunk_regions)" "chunk of 1 MiB (2048 sectors)"
wr "$dev" 4000 4
assert_eq "1 1 1" "$(st m marked) $(stat_of commits) $(stat_of marked_chunks)" "first write: one chunk mark"
# The rest of the 1 MiB chunk [3072 KiB, 4096 KiB) needs no metadata write.
wr "$dev" 3072 1024
assert_eq "256 1 1" "$(st m marked) $(stat_of commits) $(stat_of marked_chunks)" "the chunk's other regions: no new commit"
wr "$dev" 4096 4
assert_eq "257 2 2" "$(st m marked) $(stat_of commits) $(stat_of marked_chunks)" "the next chunk: one more mark"
# A suspend writes the exact map and retires every chunk.
dmsetup suspend m
dmsetup resume m
assert_eq "0 257" "$(stat_of marked_chunks) $(st m marked)" "suspend: chunks retired, exact bits kept"
# The cleaner (every clean_interval_ms) writes the exact bits and retires
# chunks that stayed idle for a whole interval: wait for it, bounded.
echo 100 >/sys/module/dm_chj/parameters/clean_interval_ms
# A region already recorded in the epoch has its exact bit durable (the
# suspend wrote and flushed it): rewriting it needs no mark, and no wait.
deferred=$(stat_of deferred_bios)
wr "$dev" 4000 4
assert_eq "2 2 0 $deferred" "$(stat_of commits) $(stat_of chunk_marks) $(stat_of marked_chunks) $(stat_of deferred_bios)" \
	"a rewrite in a retired chunk passes on its durable exact bit"
# A region new in the epoch has no durable bit: its retired chunk is marked again.
wr "$dev" 4100 4
assert_eq "3 3 258" "$(stat_of commits) $(stat_of chunk_marks) $(st m marked)" "a new region in a retired chunk marks it again"
for _ in $(seq 100); do [ "$(stat_of marked_chunks)" = 0 ] && break; sleep 0.1; done
assert_eq "0 258" "$(stat_of marked_chunks) $(st m marked)" "the idle chunk retired by the cleaner, exact bits kept"
# After that pass the new region's bit is durable too: its rewrite needs no mark.
wr "$dev" 4100 4
assert_eq "3 0" "$(stat_of commits) $(stat_of marked_chunks)" "a rewrite after the cleaner proved the bit: no mark"
[ "$(stat_of chunk_retires)" -ge 3 ] || fail "retires counted: $(dmsetup message m 0 stats)"
dmsetup remove m

log "checkpoint: the marked chunks are carried into the new epoch (carry_marks)"
# Still no clean pass between the writes (60 s): the checkpoint alone decides.
echo 60000 >/sys/module/dm_chj/parameters/clean_interval_ms
CARRY=/sys/module/dm_chj/parameters/carry_marks
assert_eq Y "$(cat $CARRY)" "carry_marks is on by default"
dd if=/dev/zero of=/dev/ram3 bs=4096 count=2 oflag=direct status=none
dev=$(dm_create m "$(chj_table /dev/ram3 /dev/ram1 8) 2 chunk_sectors 2048")
wr "$dev" 4000 4
wr "$dev" 8192 4
cm=$(stat_of chunk_marks)
assert_eq "2 2" "$cm $(stat_of marked_chunks)" "two chunks marked"
dmsetup message m 0 checkpoint >/dev/null
assert_eq "2 0" "$(stat_of marked_chunks) $(st m marked)" "checkpoint: both chunks carried, the new epoch's exact map empty"
# On disk too: the superblock in force (the one the checkpoint wrote) marks them.
assert_eq 2 "$("$CHJ_ROOT/userspace/chj" dump --json /dev/ram3 | sed -n 's/.*"marked_chunks": \([0-9]*\).*/\1/p')" \
	"the new epoch's superblock on disk marks the carried chunks"
deferred=$(stat_of deferred_bios)
wr "$dev" 3100 4
assert_eq "$cm $deferred 1" "$(stat_of chunk_marks) $(stat_of deferred_bios) $(st m marked)" \
	"a new region in a carried chunk: no new mark, not deferred, counted in the new epoch"
echo N >$CARRY
dmsetup message m 0 checkpoint >/dev/null
assert_eq 0 "$(stat_of marked_chunks)" "carry_marks=N: the new epoch starts with no chunk marked"
wr "$dev" 3200 4
assert_eq "$((cm + 1)) 1" "$(stat_of chunk_marks) $(stat_of marked_chunks)" "carry_marks=N: the chunk is marked again"
# A carried chunk is retired as any other (here by a suspend; the cleaner
# runs the same pass, and is armed 60 s ahead in this test).
echo Y >$CARRY
dmsetup message m 0 checkpoint >/dev/null
assert_eq 1 "$(stat_of marked_chunks)" "carry_marks=Y again: the chunk carried"
dmsetup suspend m
dmsetup resume m
assert_eq 0 "$(stat_of marked_chunks)" "a carried chunk retired (suspend)"
dmsetup remove m

log "mark groups: after 16 chunk marks in a clean interval, a mark covers its group of 8"
G=/sys/module/dm_chj/parameters/mark_group
assert_eq 8 "$(cat $G)" "mark_group is 8 by default"
dd if=/dev/zero of=/dev/ram3 bs=4096 count=2 oflag=direct status=none
dev=$(dm_create m "$(chj_table /dev/ram3 /dev/ram1 8) 2 chunk_sectors 2048")
for k in $(seq 0 15); do wr "$dev" $((k * 1024)) 4; done
assert_eq "16 16" "$(stat_of chunk_marks) $(stat_of commits)" "16 first touches: a mark each"
wr "$dev" $((42 * 1024)) 4
assert_eq "24 17" "$(stat_of chunk_marks) $(stat_of commits)" "the 17th: chunks 40 to 47 in one commit"
wr "$dev" $((45 * 1024 + 8)) 4
assert_eq "24 17" "$(stat_of chunk_marks) $(stat_of commits)" "a first touch in the group: no mark"
echo 1 >$G
wr "$dev" $((60 * 1024)) 4
assert_eq "25 18" "$(stat_of chunk_marks) $(stat_of commits)" "mark_group=1: one chunk"
echo 8 >$G
# A clean pass starts a new count: its first marks are single again.
dmsetup suspend m
dmsetup resume m
wr "$dev" $((50 * 1024)) 4
assert_eq "26 19" "$(stat_of chunk_marks) $(stat_of commits)" "after a clean pass: one chunk"
echo 1000 >/sys/module/dm_chj/parameters/clean_interval_ms
dmsetup remove m
must_refuse "mark_ahead too large" "$(chj_table /dev/ram3 /dev/ram1 8) 2 mark_ahead 40000" "mark_ahead takes"
must_refuse "chunk smaller than a region" "$(chj_table /dev/ram3 /dev/ram1 16) 2 chunk_sectors 8" "chunk_sectors"
must_refuse "chunk not a power of two" "$(chj_table /dev/ram3 /dev/ram1 8) 2 chunk_sectors 3000" "chunk_sectors"

log "bad table lines"
must_refuse "region size 7" "$(chj_table /dev/ram2 /dev/ram1 7)" "Region size must be a power of two"
must_refuse "region size 12" "$(chj_table /dev/ram2 /dev/ram1 12)" "Region size must be a power of two"
must_refuse "region size 0" "$(chj_table /dev/ram2 /dev/ram1 0)" "Region size must be a power of two"
must_refuse "region size 4194304" "$(chj_table /dev/ram2 /dev/ram1 4194304)" "Region size must be a power of two"
must_refuse "region size not a number" "$(chj_table /dev/ram2 /dev/ram1 8k)" "Region size must be a power of two"
must_refuse "too few arguments" "0 $S chj /dev/ram2 /dev/ram1" "Expected <metadata_dev>"
must_refuse "len beyond origin" "0 $((S + 8)) chj /dev/ram2 /dev/ram1 8" "Table length exceeds the origin"
must_refuse "same device twice" "$(chj_table /dev/ram1 /dev/ram1 8)" "must be different devices"
must_refuse "unknown feature" "$(chj_table /dev/ram2 /dev/ram1 8) 1 frob" "Unknown feature"
must_refuse "bad feature count" "$(chj_table /dev/ram2 /dev/ram1 8) 2 frob" "Feature argument count"
must_refuse "region size differs from metadata" "$(chj_table /dev/ram0 /dev/ram1 16)" "Region size differs"
must_refuse "shrink" "0 $((S / 2)) chj /dev/ram0 /dev/ram1 8" "Shrinking a tracked origin"

log "a metadata device holding something else is refused and left untouched"
dd if=/dev/urandom of=/dev/ram2 bs=4096 count=4 oflag=direct status=none
before=$(dd if=/dev/ram2 bs=4096 count=64 iflag=direct status=none | sha256sum)
must_refuse "garbage metadata" "$(chj_table /dev/ram2 /dev/ram1 8)" "neither a chj superblock nor zeroes"
assert_eq "$before" "$(dd if=/dev/ram2 bs=4096 count=64 iflag=direct status=none | sha256sum)" "garbage device untouched"

log "a metadata device too small is refused with the size needed"
dd if=/dev/zero of=/dev/ram3 bs=4096 count=2 oflag=direct status=none
dmsetup create small --table "0 64 linear /dev/ram3 0"
small=$(dm_node small)
# 1 GiB origin at 4 KiB regions needs 2 + 9 + 8 blocks = 77824 bytes.
dmsetup create zero1g --table "0 2097152 zero"
must_refuse "too small" "0 2097152 chj $small $(dm_node zero1g) 8" "77824 bytes needed"
dmsetup remove small zero1g

log "ok"
