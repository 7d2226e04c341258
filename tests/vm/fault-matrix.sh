#!/bin/bash
# Faults under dm-chj, each with ground truth by content (every region whose
# content changed since a copy is reported; what the writer was told was
# written reads back): bad blocks (dm error segments: Debian has no dm-dust)
# on the metadata (a read error at load, a write error at commit) and on the
# origin (a failed read marks nothing, a failed write is still reported); dm-flakey error_writes
# and drop_writes windows on the metadata under load; the metadata device
# replaced by dm's error target under load; suspend/resume, load+resume and
# growth under QD32 load; checkpoint, status, changes and stats from four
# processes at once under load.
# vm-timeout: 600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=$CHJ_ROOT/userspace/chj
COVER=$CHJ_ROOT/tests/tools/changes-cover
ORIG_S=$((64 << 11))
CASES=()

# meta_table KIND: a table for the metadata device md over /dev/ram1.
meta_table() {
	local n
	n=$(sectors /dev/ram1)
	case $1 in
	linear) echo "0 $n linear /dev/ram1 0" ;;
	# The first bitmap block (metadata sectors 16..23) unreadable and unwritable.
	badbitmap) printf '0 16 linear /dev/ram1 0\n16 8 error\n24 %s linear /dev/ram1 24\n' $((n - 24)) ;;
	# Both superblock blocks (sectors 0..15) unreadable and unwritable.
	badsb) printf '0 16 error\n16 %s linear /dev/ram1 16\n' $((n - 16)) ;;
	error) echo "0 $n error" ;;
	esac
}

# og_table KIND: the origin's table: linear, or with a bad block (an error
# segment over sectors 4096..4103: region 512 at 4 KiB).
og_table() {
	case $1 in
	linear) echo "0 $ORIG_S linear /dev/ram0 0" ;;
	badblock) printf '0 4096 linear /dev/ram0 0\n4096 8 error\n4104 %s linear /dev/ram0 4104\n' \
		$((ORIG_S - 4104)) ;;
	esac
}

# under DEV TABLE: c removed, DEV (md or og) given TABLE, c created again.
under() {
	dmsetup remove c 2>/dev/null || true
	dmsetup load "$1" --table "$2"
	dmsetup resume "$1"
	dm_create c "$(chj_table /dev/mapper/md /dev/mapper/og 8)" >/dev/null
}

# fresh: blank metadata md (linear over ram1), origin og (linear over
# ram0), chj device c over them, random content; the origin copied as a
# backup taken at the start of epoch $E would see it (/tmp/snap).
fresh() {
	dmsetup remove c 2>/dev/null || true
	dmsetup remove md 2>/dev/null || true
	dmsetup remove og 2>/dev/null || true
	dd if=/dev/zero of=/dev/ram1 bs=1M count=4 oflag=direct status=none
	dm_create md "$(meta_table linear)" >/dev/null
	dm_create og "0 $ORIG_S linear /dev/ram0 0" >/dev/null
	dm_create c "$(chj_table /dev/mapper/md /dev/mapper/og 8)" >/dev/null
	head -c 64M /dev/urandom | dd of=/dev/mapper/c bs=1M oflag=direct status=none
	snap
}

# snap: checkpoint, then copy the origin: epoch E starts now.
snap() {
	E=$(dmsetup message c 0 checkpoint) || fail "checkpoint"
	dd if=/dev/mapper/og of=/tmp/snap bs=1M iflag=direct status=none
}

# cover WHAT [CHANGES_ARGS...]: every region that differs from /tmp/snap is
# in `chj changes --since $E` (of c, or of the given metadata).
cover() {
	local what=$1 out
	shift
	dd if=/dev/mapper/og of=/tmp/now bs=1M iflag=direct status=none
	$CHJ changes --since "$E" "${@:-c}" >/tmp/changes || fail "$what: chj changes failed"
	out=$($COVER /tmp/snap /tmp/now 8 /tmp/changes) || { echo "$out"; fail "$what: a change was missed"; }
	log "$what: $out"
	CASES+=("$what: $out")
}

# covers START LEN: the ranges of `chj changes` on stdin cover [START, +LEN).
covers() {
	awk -v s="$1" -v e="$(($1 + $2))" '$1 <= s && $1 + $2 >= e { ok = 1 } END { exit !ok }'
}

# fio_bg SECONDS [fio options]: random 4K writes on c in the background.
fio_bg() {
	local t=$1
	shift
	fio --name=bg --filename=/dev/mapper/c --size=64M --rw=randwrite --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=32 --time_based --runtime="$t" --randrepeat=0 \
		--eta=never --output=/dev/null "$@" &
	FIO=$!
}

# writes_flowing: wait until fio's writes reach the origin (it starts slowly
# under TCG): poll og's completed-write counter.
writes_flowing() {
	local w0
	dm_writes og
	w0=$DM_WRITES
	until dm_writes og; [ "$DM_WRITES" -gt $((w0 + 50)) ]; do sleep 0.05; done
}

# write_until_fail DEV OFFSET_KiB: 4 KiB O_DIRECT writes of distinct content,
# one per region from OFFSET on, in one process (a dd per write spent half
# a minute under TCG), until 20 in a row fail (fail mode) or 60 s or 12288
# writes have passed; then every acknowledged write is read back and
# compared.  The writes are paced (one per 5 ms): unpaced, all of them fit
# in flakey's first 2 s up interval, and the metadata writes they cause
# (chunk marks, the cleaner's) must also fall in a down interval.  Prints
# "ACKED FAILED"; exits 1 when an acknowledged write reads back different.
write_until_fail() {
	python3 - "$1" "$2" <<'EOF'
import mmap, os, sys, time
dev, off = sys.argv[1], int(sys.argv[2]) * 1024
buf = mmap.mmap(-1, 4096)
fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
acked, failed, run, end = [], 0, 0, time.monotonic() + 60
for i in range(12288):
    if run >= 20 or time.monotonic() > end:
        break
    data = (b'block %d %d\n' % (i, time.monotonic_ns())).ljust(4096, b'\0')
    buf[:] = data
    try:
        os.pwrite(fd, buf, off + i * 4096)
        acked.append((i, data))
        run = 0
    except OSError:
        failed += 1
        run += 1
    time.sleep(0.005)
for i, data in acked:
    os.preadv(fd, [buf], off + i * 4096)
    if buf[:] != data:
        print('write %d was acknowledged but reads back different' % i)
        sys.exit(1)
print(len(acked), failed)
EOF
}

brd_setup 2 65536

# Debian's kernels have no dm-dust (CONFIG_DM_DUST is not set): bad blocks
# are segments of dm's error target in a linear table.
log "=== a bad block under the bitmap: a read error at load refuses the table, clearly"
fresh
wr /dev/mapper/c 0 64
dmsetup remove c
dmsetup load md --table "$(meta_table badbitmap)"
dmsetup resume md
dmesg -C
if dmsetup create c --table "$(chj_table /dev/mapper/md /dev/mapper/og 8)" 2>/dev/null; then
	fail "a table over an unreadable bitmap block was accepted"
fi
dmesg | grep -E 'device-mapper: (table|chj)' | tail -3
grep -qE 'device-mapper: chj: ' <<<"$(dmesg)" || fail "the kernel log does not say why the load failed"
under md "$(meta_table linear)"
cover "bitmap read error at load, then readable again"

log "=== bad blocks on the origin: read errors reach the reader, nothing is marked"
under og "$(og_table badblock)"
m=$(st c marked)
if dd if=/dev/mapper/c of=/dev/null bs=4096 skip=512 count=1 iflag=direct status=none 2>/dev/null; then
	fail "a read of a bad origin block succeeded"
fi
assert_eq "$m" "$(st c marked)" "marks after a failed read"
under og "$(og_table linear)"
cover "a failed origin read"

log "=== a failed data write is still reported changed"
fresh
under og "$(og_table badblock)"
if wr /dev/mapper/c 2048 4 2>/dev/null; then fail "a write to the error segment succeeded"; fi
$CHJ changes --since "$E" c | covers 4096 8 || fail "the failed write's region is not reported"
CASES+=("failed origin write: region reported")
under og "$(og_table linear)"

log "=== an error segment under the superblocks: the chunk mark fails, fail mode, nothing unmarked reaches the origin"
fresh
dmsetup load md --table "$(meta_table badsb)"
dmsetup resume md
before=$(dd if=/dev/ram0 bs=4096 skip=1000 count=1 iflag=direct status=none | sha256sum)
if wr /dev/mapper/c 4000 4 2>/dev/null; then fail "a write whose mark failed succeeded"; fi
assert_eq "$before" "$(dd if=/dev/ram0 bs=4096 skip=1000 count=1 iflag=direct status=none | sha256sum)" \
	"origin untouched by the write whose mark failed"
assert_eq fail "$(status_mode c)" "mode after a failed chunk mark"
under md "$(meta_table linear)"
assert_eq "$(st c nr)" "$(st c marked)" "the reloaded epoch is marked-all"
cover "superblock write error at a chunk mark"

log "=== an error segment under the bitmap block: the exact map's write fails, fail mode, nothing lost"
fresh
# The only bitmap block of a 64 MiB origin: metadata sectors 16..23.
dmsetup load md --table "$(meta_table badbitmap)"
dmsetup resume md
wr /dev/mapper/c 4000 4 || fail "a write under a durable chunk mark failed"
# The cleaner writes the exact map within a second: wait for its failure.
for _ in $(seq 100); do [ "$(status_mode c)" = fail ] && break; sleep 0.1; done
assert_eq fail "$(status_mode c)" "mode after a failed exact map write"
under md "$(meta_table linear)"
assert_eq "$(st c nr)" "$(st c marked)" "the reloaded epoch is marked-all"
cover "bitmap write error in the cleaner"

log "=== dm-flakey error_writes windows on the metadata under load"
fresh
dmsetup load md --table "0 $(sectors /dev/ram1) flakey /dev/ram1 0 2 1 1 error_writes"
dmsetup resume md
out=$(write_until_fail /dev/mapper/c 4096) || fail "error_writes: $out"
read -r n nfail <<<"$out"
log "$n writes acknowledged before fail mode, $nfail failed; all read back"
assert_eq fail "$(status_mode c)" "mode after error_writes"
under md "$(meta_table linear)"
assert_eq "$(st c nr)" "$(st c marked)" "the reloaded epoch is marked-all"
cover "flakey error_writes ($n acknowledged writes read back)"

log "=== dm-flakey drop_writes on the metadata (a device that lies): what still holds"
fresh
# Three writes in three 4 MiB chunks: each needs its own chunk mark.
wr /dev/mapper/c 0 16	# marked before the window: durable
dmsetup suspend --noflush md
dmsetup load md --table "0 $(sectors /dev/ram1) flakey /dev/ram1 0 0 2 1 drop_writes"
dmsetup resume md
wr /dev/mapper/c 8192 16	# its chunk mark dropped by the device
dmsetup load md --table "$(meta_table linear)"
dmsetup resume md
wr /dev/mapper/c 16384 16	# after the window: marked durably again
dmsetup remove c
dm_create c "$(chj_table /dev/mapper/md /dev/mapper/og 8)" >/dev/null
ch=$($CHJ changes --since "$E" c)
grep -qx "0 32" <<<"$ch" || fail "drop_writes: marks made before the window are lost"
grep -qx "32768 32" <<<"$ch" || fail "drop_writes: marks made after the window are lost"
# A chunk mark dropped by the device is written again by the next superblock
# commit (the whole intent map, from core), and the exact bits by the
# cleaner or the suspend.  Not promised: without a later commit it is lost.
if grep -qx "16384 32" <<<"$ch"; then lost=no; else lost=yes; fi
log "marks dropped during the window lost after a later commit of their block: $lost"
CASES+=("flakey drop_writes: marks before and after the window kept; dropped ones lost=$lost (not promised)")

log "=== the metadata device replaced by dm's error target under load"
fresh
# fio stays in the first 32 MiB, so that the region written at 48 MiB below
# is a first touch whatever fio reached (over the whole device, 6 s of
# random writes can mark every region, and a write to a marked region needs
# no metadata).
fio_bg 6 --continue_on_error=write --size=32M
writes_flowing
dmsetup load md --table "$(meta_table error)"
dmsetup suspend --noflush md
dmsetup resume md
wait $FIO || true
if wr /dev/mapper/c 49152 4 2>/dev/null; then fail "a first-touch write succeeded without metadata"; fi
dd if=/dev/mapper/c of=/dev/null bs=1M count=4 iflag=direct status=none || fail "reads fail without metadata"
assert_eq fail "$(status_mode c)" "mode without metadata"
under md "$(meta_table linear)"
assert_eq "$(st c nr)" "$(st c marked)" "the reloaded epoch is marked-all"
cover "metadata replaced by error under load"

log "=== suspend/resume, load+resume and growth under QD32 load"
dmsetup remove c
dd if=/dev/zero of=/dev/ram1 bs=1M count=4 oflag=direct status=none
dmsetup load og --table "0 $((ORIG_S / 2)) linear /dev/ram0 0"
dmsetup resume og
dm_create c "$(chj_table /dev/mapper/md /dev/mapper/og 8)" >/dev/null
E=$(dmsetup message c 0 checkpoint)
dd if=/dev/ram0 of=/tmp/snap bs=1M iflag=direct status=none
fio --name=bg --filename=/dev/mapper/c --size=32M --rw=randwrite --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=32 --time_based --runtime=6 --randrepeat=0 \
	--eta=never --output=/dev/null &
FIO=$!
for _ in 1 2 3; do
	sleep 0.3
	dmsetup suspend c
	dmsetup resume c
	sleep 0.3
	dmsetup load c --table "$(chj_table /dev/mapper/md /dev/mapper/og 8)"
	dmsetup resume c
done
log "grow the origin to 64 MiB under load"
dmsetup load og --table "0 $ORIG_S linear /dev/ram0 0"
dmsetup resume og
dmsetup load c --table "$(chj_table /dev/mapper/md /dev/mapper/og 8)"
dmsetup resume c
wait $FIO || fail "fio under suspend/reload/growth"
wr /dev/mapper/c 50000 64	# in the grown part
assert_eq $ORIG_S "$(sectors /dev/mapper/c)" "grown size"
cover "suspend/resume, load+resume, growth under load"

log "=== checkpoint, status, changes and stats from four processes under load"
fresh
E0=$E
fio_bg 8
writes_flowing
end=$((SECONDS + 5))
( while [ $SECONDS -lt $end ]; do dmsetup message c 0 checkpoint >/dev/null || exit 1; done ) & p1=$!
( while [ $SECONDS -lt $end ]; do $CHJ status c >/dev/null || exit 1; done ) & p2=$!
( while [ $SECONDS -lt $end ]; do $CHJ changes --since "$E0" c >/dev/null || exit 1; done ) & p3=$!
( while [ $SECONDS -lt $end ]; do dmsetup message c 0 stats >/dev/null || exit 1; done ) & p4=$!
for p in $p1 $p2 $p3 $p4; do wait $p || fail "a concurrent command failed"; done
wait $FIO || fail "fio under concurrent commands"
log "epoch now $(st c cur) (from $E0)"
E=$E0
cover "four concurrent command loops under load"

log "summary"
printf '    %s\n' "${CASES[@]}"
