#!/bin/bash
# A 1 TiB origin (dm-zero) at 4 KiB regions loads and tracks inside the
# 3 GiB guest; reports the kernel memory it costs.  Also large batches of
# chunk marks behind slow metadata and the cleaner writing thousands of
# bitmap blocks in batches, synchronous writers at once, and 64 MiB chunks.
# vm-timeout: 400
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=$CHJ_ROOT/userspace/chj

TIB=$((1 << 31))	# sectors
NR=$((TIB / 8))
brd_setup 1 $((40 << 10))	# 40 MiB: 32.1 MiB of bitmap plus journal
dmsetup create z --table "0 $TIB zero"
free_before=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
dev=$(dm_create big "0 $TIB chj /dev/ram0 $(dm_node z) 8")
free_after=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
log "kernel memory for 1 TiB at 4 KiB regions: $(((free_before - free_after) >> 10)) MiB (incl. brd pages written)"
assert_eq "$NR 0" "$(st big nr) $(st big marked)" "fresh 1 TiB"

log "writes across the whole device are marked"
for gib in 0 1 511 1023; do
	wr "$dev" $((gib << 20)) 4
done
wr "$dev" $(((1 << 30) - 4)) 4	# last region
assert_eq 5 "$(st big marked)" "five marks"
$CHJ changes --since 1 big >/tmp/ch
assert_eq 5 "$(wc -l </tmp/ch)" "five ranges"
assert_eq "$((TIB - 8)) 8" "$(tail -n 1 /tmp/ch)" "last region range"

log "checkpoint, remove and re-create"
assert_eq 2 "$(dmsetup message big 0 checkpoint)" "checkpoint"
dmsetup remove big
dev=$(dm_create big "0 $TIB chj /dev/ram0 /dev/mapper/z 8")
assert_eq "2 0" "$(st big cur) $(st big marked)" "reloaded"
$CHJ changes --since 1 big >/tmp/ch
assert_eq 5 "$(wc -l </tmp/ch)" "epoch 1 from the journal"

log "mark_all on 1 TiB"
dmsetup message big 0 mark_all
assert_eq "$NR" "$(st big marked)" "all marked"
assert_eq 3 "$(dmsetup message big 0 checkpoint)" "checkpoint of a full epoch"
$CHJ changes --since 2 big >/tmp/ch
assert_eq "0 $TIB" "$(cat /tmp/ch)" "everything since 2"
dmsetup remove big

# With metadata writes that take 5 ms (dm-delay: the FUA superblock of each
# chunk-mark commit, bitmap blocks, flushes), first-touch writes pile up
# behind the commit in flight: QD128 random writes over 1 TiB, where nearly
# every write needs a 64 MiB chunk of its own, make batches that mark dozens
# of chunks in one superblock write.  fio's random map writes each 4 KiB
# block once, so every write is a region of its own.
log "QD128 random writes, metadata writes delayed 5 ms: every region marked"
dmsetup create slowmeta --table "0 $(sectors /dev/ram0) delay /dev/ram0 0 5"
dev=$(dm_create big "0 $TIB chj $(dm_node slowmeta) /dev/mapper/z 8")
assert_eq "3 0" "$(st big cur) $(st big marked)" "epoch 3, nothing marked"
qd128() {
	fio --name=qd128 --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=128 --number_ios=6000 --randrepeat=1 \
		--randseed=7 --output-format=terse --eta=never >/dev/null
}
qd128
assert_eq 6000 "$(st big marked)" "regions marked by 6000 distinct writes"
deferred=$(chj_stat big deferred_bios) commits=$(chj_stat big commits)
marks=$(chj_stat big chunk_marks)
log "stats: $deferred deferred, $commits commits, $marks chunk marks"
[ "$commits" -lt "$deferred" ] || fail "no batching: $commits commits for $deferred writes"
[ "$marks" -gt $((commits * 8)) ] || fail "batches too small: $marks chunk marks in $commits commits"

# The bitmap blocks are the cleaner's (clean_interval_ms, 1 s), not the
# commits': how many were written when fio ends depends only on whether a
# pass began before then (fio's writes take about 0.6 s here, less than
# the interval: on Debian 13, none had).  So wait until a pass retired
# every chunk: then
# the exact map alone holds the 6000 marks.  The changed regions lie in
# thousands of bitmap blocks, which write_exact() writes in batches of 64,
# flushing and proving each; every block must have been written, and every
# region proved durable, so that writing the same regions again needs no
# chunk mark at all.
n=0
while [ "$(chj_stat big marked_chunks)" != 0 ]; do
	n=$((n + 1))
	[ "$n" -le 120 ] || fail "chunks still marked 60 s after the writes: $(dmsetup message big 0 stats)"
	sleep 0.5
done
$CHJ changes --since 3 big >/tmp/ch
want=$(awk '{ for (b = int($1 / 261120); b <= int(($1 + $2 - 1) / 261120); b++) n += !s[b]++ } END { print n }' /tmp/ch)
blocks=$(chj_stat big bitmap_writes)
log "every chunk retired: $blocks bitmap block writes for $want blocks with changes"
[ "$want" -gt 128 ] || fail "changes in only $want bitmap blocks: not several batches of 64"
[ "$blocks" -ge "$want" ] || fail "$blocks bitmap blocks written, $want hold changes"
qd128
assert_eq "6000 $deferred $commits $marks" \
	"$(st big marked) $(chj_stat big deferred_bios) $(chj_stat big commits) $(chj_stat big chunk_marks)" \
	"the same 6000 regions again: all durable in the exact map, nothing deferred"
dmsetup remove big slowmeta

# Four synchronous writers at once on the RAM-disk metadata: their first
# writes wait together for the worker's chunk-mark commits (the only place
# commits run).  Each job writes its own 1 GiB.
log "four synchronous writers at once: every region marked"
dev=$(dm_create big "0 $TIB chj /dev/ram0 /dev/mapper/z 8")
assert_eq 4 "$(dmsetup message big 0 checkpoint)" "checkpoint to epoch 4"
fio --name=four --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
	--ioengine=psync --numjobs=4 --size=1G --offset_increment=1G \
	--number_ios=3000 --randrepeat=1 --randseed=11 --output-format=terse \
	--eta=never >/dev/null
assert_eq 12000 "$(st big marked)" "regions marked by 4 x 3000 distinct writes"

# Format 2 on a 1 TiB origin: chunks of 64 MiB (the intent map holds 28480;
# 4 MiB would need 262144), and every region of 23000 random writes over
# 2 GiB marked exactly with a few dozen chunk marks, not one per write.
log "chunks: 64 MiB on 1 TiB; 20000 QD32 writes and 3000 QD1 writes, all marked"
# Without carry: the chunks the four writers marked would be carried, and
# this epoch's writes need no mark at all (target-basic tests carrying).
echo N >/sys/module/dm_chj/parameters/carry_marks
assert_eq 5 "$(dmsetup message big 0 checkpoint)" "checkpoint to epoch 5"
echo Y >/sys/module/dm_chj/parameters/carry_marks
assert_eq 16384 "$(chj_stat big chunk_regions)" "chunk of 64 MiB"
m0=$(chj_stat big chunk_marks)
fio --name=qd32 --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=32 --size=1G --number_ios=20000 --randrepeat=1 \
	--randseed=13 --output-format=terse --eta=never >/dev/null
assert_eq 20000 "$(st big marked)" "regions marked by 20000 distinct QD32 writes"
fio --name=qd1 --filename="$dev" --rw=randwrite --bs=4k --direct=1 \
	--ioengine=psync --offset=1G --size=1G --number_ios=3000 --randrepeat=1 \
	--randseed=17 --output-format=terse --eta=never >/dev/null
assert_eq 23000 "$(st big marked)" "regions marked after 3000 more QD1 writes"
m1=$(chj_stat big chunk_marks)
log "chunk marks for 23000 first writes: $((m1 - m0))"
[ $((m1 - m0)) -ge 32 ] && [ $((m1 - m0)) -le 2000 ] ||
	fail "chunk marks for 23000 writes over 32 chunks: $((m1 - m0))"
dmsetup remove big z
log "ok"
