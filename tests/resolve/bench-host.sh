#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The resolver benchmark on the host (scripts/bench resolve-host; not part of
# make check: a measurement): the tree of bench/vm/bench-resolve.sh (N
# files of 4 KiB, 1000 a directory, chj-benchguest tree-create, seed 1; ext4
# -i 8192 or XFS rmapbt=1, the mkfs options of scripts/bench tree-image;
# XFS with 4096-byte sectors, as on a 4Kn disk) on a loop device with direct
# I/O (so the loop keeps no second page cache and serves reads in parallel,
# as a disk does; drop_caches empties both anyway), mounted
# noatime, and chj-resolve-test instead of dm-chj: the change map is the
# difference between an image taken at the "checkpoint" and the device
# (CHJ_RESOLVE_CHANGES), as in tests/resolve/host-check.sh.  Then, as the VM
# benchmark does:
#   1. the checkpoint that begins epoch 3 (fsfreeze, a reflinked copy);
#   2. the previous backup: chj-resolve in epoch 3, untimed, with the
#      current epoch's marks from that image (CHJ_RESOLVE_EPOCH_IMAGE): it
#      builds the state store and the name index of epoch 3;
#   3. a reference file touched, P % of the files overwritten in place
#      (chj-benchguest tree-change, seed 1), sync, the change map computed;
#   4. REPS times, each from a cold cache (sync, drop_caches): find -newer
#      (stats every file), chj-resolve with an empty cache directory (the
#      first run ever: walk, full store build; on ext4 every block counts
#      as marked in the current epoch, as no image is given: the store rows
#      are written, as unknown, and the marks cost nothing, as dm-chj's
#      bitmap read would; on XFS the marks come from the image, read over
#      the log only), and chj-resolve with the cache directory of step 2
#      (steady state), and that again without dropping the caches
#      (chj-resolve-warm: its CPU).  Every method must list every changed
#      file.
# The images live in DIR (BENCH_HOST_DIR), which must support reflinks
# (an XFS or btrfs): the checkpoint and the working copy share the tree's
# blocks, and the change map is computed from the copies' extents
# (FIEMAP: blocks still shared are equal; the rest compared).
# BENCH_HOST_BASE=BIN adds an A/B: each repetition also runs BIN (another
# chj-resolve-test, e.g. one built from an older commit) in the steady
# state, right after this tree's, from a cold cache as well and with the
# same store and index (method chj-resolve-base; resolver runs 23-28).
# Results go to OUT as chj-benchdb import reads them.
#   tests/resolve/bench-host.sh FS NFILES OUT [PCT [REPS]]   (root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
fs=${1:?usage: $0 ext4|xfs NFILES OUT [PCT [REPS]]}
n=${2:?NFILES}
OUT=${3:?OUT}
pct=${4:-0.1}
reps=${5:-3}
DIR=${BENCH_HOST_DIR:?BENCH_HOST_DIR: a directory on a filesystem with reflinks}
R=$root/userspace/chj-resolve-test
GUEST=$root/scripts/bench-db/chj-benchguest
if [ ! -x "$R" ] || [ ! -x "$GUEST" ]; then echo "bench-host: build first (make)" >&2; exit 2; fi
BASE=${BENCH_HOST_BASE:-}
if [ -n "$BASE" ] && [ ! -x "$BASE" ]; then echo "bench-host: BENCH_HOST_BASE=$BASE: not an executable" >&2; exit 2; fi
size=4096

log() { echo "bench-host: $*" >&2; }
us_now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' /; }

# XFS: 4096-byte sectors (the "-4kn" images; an older 512-byte one is not
# reused), so that its loop device can use direct I/O on DIR.
img=$DIR/$fs-n$n-s$size.img
[ "$fs" != xfs ] || img=$DIR/$fs-n$n-s$size-4kn.img
if [ ! -f "$img" ]; then
	mib=$(((n * (size + 4096) * 3 / 2 >> 20) + 400))
	truncate -s "${mib}M" "$img.tmp"
	case $fs in
	ext4) mkfs.ext4 -q -F -i 8192 -E lazy_itable_init=0,lazy_journal_init=0 "$img.tmp" ;;
	xfs) mkfs.xfs -q -f -m rmapbt=1 -s size=4096 "$img.tmp" ;;
	*) echo "bench-host: unknown fs $fs" >&2; exit 2 ;;
	esac
	m=$(mktemp -d)
	mount -o loop -t "$fs" "$img.tmp" "$m"
	t0=$SECONDS
	"$GUEST" tree-create "$m/tree" "$n" "$size" 1
	umount "$m"
	rmdir "$m"
	mv "$img.tmp" "$img"
	log "$img: $n files made in $((SECONDS - t0))s"
fi

w=$DIR/run-$fs-n$n
rm -rf "$w"
mkdir -p "$w/mnt" "$OUT/out"
loop=
cleanup() {
	set +e
	mountpoint -q "$w/mnt" && umount "$w/mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	rm -rf "$w"
}
trap cleanup EXIT
cp --reflink=always "$img" "$w/dev.img"
# Direct I/O for both: the loop takes the logical block size of DIR's disk
# (512 or 4096), and both images work on either (ext4: 4 KiB blocks; XFS:
# 4096-byte sectors, where one of 512 would not mount on a 4096 loop).
loop=$(losetup --direct-io=on -f --show "$w/dev.img")
echo "loop direct I/O: $(cat /sys/block/"${loop#/dev/}"/loop/dio)" >&2
mount -t "$fs" -o noatime "$loop" "$w/mnt"
mnt=$w/mnt
last=$((n - 1))
[ -f "$mnt/tree/d$(printf %05d $((last / 1000)))/f$(printf %07d $last)" ] || { echo "not a tree of $n files" >&2; exit 1; }

# diffmap A B: "START LEN" sector lines of the 4 KiB blocks where two
# reflinked copies differ (FIEMAP: a block at the same physical place in
# both is shared, so equal; the others are read and compared).
diffmap() {
	python3 - "$1" "$2" <<-'PY'
	import fcntl, os, struct, sys
	FS_IOC_FIEMAP = 0xC020660B
	def extents(path):
	    fd = os.open(path, os.O_RDONLY)
	    out, start, size = [], 0, os.fstat(fd).st_size
	    while start < size:
	        n = 512
	        req = struct.pack("=QQIIII", start, size - start, 1, 0, n, 0) + bytes(56 * n)
	        res = bytearray(req)
	        fcntl.ioctl(fd, FS_IOC_FIEMAP, res)
	        cnt = struct.unpack_from("=I", res, 20)[0]
	        if cnt == 0:
	            break
	        for i in range(cnt):
	            lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQI", res, 32 + 56 * i)
	            out.append((lo, ph, ln))
	        lo, ph, ln, _, _, fl = struct.unpack_from("=QQQQQI", res, 32 + 56 * (cnt - 1))
	        start = lo + ln
	        if fl & 1:  # FIEMAP_EXTENT_LAST
	            break
	    os.close(fd)
	    return out, size
	a, size = extents(sys.argv[1])
	b, _ = extents(sys.argv[2])
	# Map every 4 KiB block offset -> physical, for both, as intervals.
	def blocks(ext):
	    for lo, ph, ln in ext:
	        yield lo, lo + ln, ph - lo
	ia = sorted(blocks(a)); ib = sorted(blocks(b))
	# Offsets where the two differ in physical placement (or one is a hole).
	cuts = sorted({0, size} | {x for s, e, _ in ia + ib for x in (s, e)})
	def lookup(iv, x):
	    import bisect
	    i = bisect.bisect_right(iv, (x, float("inf"), 0)) - 1
	    if i >= 0 and iv[i][0] <= x < iv[i][1]:
	        return iv[i][2]
	    return None
	fa = open(sys.argv[1], "rb", buffering=0); fb = open(sys.argv[2], "rb", buffering=0)
	out = []
	for s, e in zip(cuts, cuts[1:]):
	    da, db = lookup(ia, s), lookup(ib, s)
	    if da is not None and da == db:
	        continue
	    if da is None and db is None:
	        continue
	    p = s
	    while p < e:
	        k = min(e - p, 1 << 20)
	        fa.seek(p); x = fa.read(k); fb.seek(p); y = fb.read(k)
	        for q in range(0, k, 4096):
	            if x[q:q + 4096] != y[q:q + 4096]:
	                out.append(p + q)
	        p += k
	run = None
	for o in out:
	    if run and run[1] == o:
	        run[1] = o + 4096
	        continue
	    if run:
	        print(run[0] >> 9, (run[1] - run[0]) >> 9)
	    run = [o, o + 4096]
	if run:
	    print(run[0] >> 9, (run[1] - run[0]) >> 9)
	PY
}

{
	printf 'kind\tresolve\n'
	printf 'kernel\t%s\n' "$(uname -r)"
	printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	printf 'backing\thost-loop-%s-on-reflinked-file\n' "$([ "$(cat /sys/block/"${loop#/dev/}"/loop/dio)" = 1 ] && echo dio || echo buffered)"
	printf 'params\tfiles=%s fs=%s changed=%s reps=%s file_size=%s methods=find-stat,chj-resolve-cold,chj-resolve,%schj-resolve-warm tree=host-made mount=noatime page_cache=dropped where=host changes=image-diff\n' \
		"$n" "$fs" "$pct" "$reps" "$size" "${BASE:+chj-resolve-base,}"
	printf 'guest\thost:%s\n' "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1 | tr ' ' _)x$(nproc)"
} >"$OUT/run.tsv"
touch "$OUT/manifest.tsv" "$OUT/extra.tsv"
seq_no=$(wc -l <"$OUT/manifest.tsv")

# The checkpoint that begins epoch 3.
sync
fsfreeze -f "$mnt"
cp --reflink=always "$w/dev.img" "$w/c3.img"
fsfreeze -u "$mnt"
: >"$w/none"
mkdir -m 700 "$w/warm"
# The previous backup (untimed): builds the store and the name index.
t0=$(us_now)
CHJ_RESOLVE_CACHE_DIR=$w/warm CHJ_RESOLVE_EPOCH=3 CHJ_RESOLVE_EPOCH_IMAGE=$w/c3.img CHJ_RESOLVE_CHANGES=$w/none \
	"$R" --stats --since 3 "$loop" >/dev/null 2>"$w/warmup.err"
log "$fs n=$n: warm-up (the store and name index built) in $(( ($(us_now) - t0) / 1000 )) ms"
grep -E "state store|name cache|time:" "$w/warmup.err" >&2 || true
ls -l "$w/warm" >&2

touch "$w/ref"
sleep 0.1
"$GUEST" tree-change "$mnt/tree" "$n" "$pct" 1 "$w/changed.txt"
sync
k=$(wc -l <"$w/changed.txt")
sort "$w/changed.txt" >"$w/changed.sorted"
t0=$(us_now)
diffmap "$w/c3.img" "$w/dev.img" >"$w/changes"
log "$fs n=$n: $k files changed; change map: $(wc -l <"$w/changes") ranges, $(awk '{ s += $2 } END { print s / 8 }' "$w/changes") blocks, in $(( ($(us_now) - t0) / 1000 )) ms"

job=$fs-n$n-c$pct
extra() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT/extra.tsv"; }
measure() {
	local method=$1 rep=$2 t0 t1 rc=0 file
	shift 3
	seq_no=$((seq_no + 1))
	file=out/$(printf %04d $seq_no)-$method-$job-$rep.txt
	# chj-resolve-warm: the steady state again, caches as the run before
	# left them (what is left is CPU, not reads).
	[ "$method" = chj-resolve-warm ] || cold
	t0=$(us_now)
	/usr/bin/time -v -o "$OUT/$file.time" "$@" >"$w/list" 2>"$OUT/$file.err" || rc=$?
	t1=$(us_now)
	{
		echo "command: $*"
		echo "exit: $rc"
		echo "lines: $(wc -l <"$w/list")"
		echo "load: $(load)"
		echo "--- stderr"
		head -c 20000 "$OUT/$file.err"
		echo "--- /usr/bin/time -v"
		cat "$OUT/$file.time"
	} >"$OUT/$file"
	rm -f "$OUT/$file.err" "$OUT/$file.time"
	[ $rc = 0 ] || { cat "$OUT/$file"; echo "bench-host: $method: exit $rc" >&2; exit 1; }
	printf '%s\t%s\t%s\t%s\ttext\t%s\n' "$seq_no" "$method" "$job" "$rep" "$file" >>"$OUT/manifest.tsv"
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e6 }')
	extra "$method" "$job" "$rep" wall_s "$wall"
	extra "$method" "$job" "$rep" max_rss_kib "$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$OUT/$file")"
	extra "$method" "$job" "$rep" files_listed "$(wc -l <"$w/list")"
	extra "$method" "$job" "$rep" files_changed "$k"
	missing=$(sort "$w/list" | comm -13 - "$w/changed.sorted" | wc -l)
	[ "$missing" = 0 ] || { echo "bench-host: $method $job: $missing changed files not listed" >&2; exit 1; }
	log "$method $job rep $rep: ${wall}s, $(wc -l <"$w/list") listed, load $(load)"
	sed -n 's/^\(state store: .*\|name cache: .*\|time: .*\|listed: .*\)$/    \1/p' "$OUT/$file" >&2
}
# The first run's marks: on XFS those of the log (the image is read there
# only), so that it writes its store as a first run does (with every block
# marked, the log "may have wrapped" and the store is not written); on ext4
# none (every block marked: the image would be read over every inode table).
cold_image=
[ "$fs" != xfs ] || cold_image=$w/c3.img
for rep in $(seq "$reps"); do
	measure find-stat "$rep" -- find "$mnt/tree" -type f -newer "$w/ref"
	rm -rf "$w/cold"
	mkdir -m 700 "$w/cold"
	measure chj-resolve-cold "$rep" -- env CHJ_RESOLVE_CACHE_DIR="$w/cold" CHJ_RESOLVE_EPOCH=3 \
		${cold_image:+CHJ_RESOLVE_EPOCH_IMAGE="$cold_image"} CHJ_RESOLVE_CHANGES="$w/changes" "$R" --stats --since 3 "$loop"
	measure chj-resolve "$rep" -- env CHJ_RESOLVE_CACHE_DIR="$w/warm" CHJ_RESOLVE_EPOCH=3 \
		CHJ_RESOLVE_EPOCH_IMAGE="$w/c3.img" CHJ_RESOLVE_CHANGES="$w/changes" "$R" --stats --since 3 "$loop"
	[ -z "$BASE" ] || measure chj-resolve-base "$rep" -- env CHJ_RESOLVE_CACHE_DIR="$w/warm" CHJ_RESOLVE_EPOCH=3 \
		CHJ_RESOLVE_EPOCH_IMAGE="$w/c3.img" CHJ_RESOLVE_CHANGES="$w/changes" "$BASE" --stats --since 3 "$loop"
	measure chj-resolve-warm "$rep" -- env CHJ_RESOLVE_CACHE_DIR="$w/warm" CHJ_RESOLVE_EPOCH=3 \
		CHJ_RESOLVE_EPOCH_IMAGE="$w/c3.img" CHJ_RESOLVE_CHANGES="$w/changes" "$R" --stats --since 3 "$loop"
done
log "$job: done"
