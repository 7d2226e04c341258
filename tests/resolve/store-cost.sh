#!/bin/bash
# The state store's cost on the host (docs/resolve.md, "Testing"): N files
# (default 200000) of 100 bytes on ext4 over a loop device, the first run
# (which builds the store) against a run without it, then 0.1 % of the
# files chmodded and the steady state with and without the store (three
# times each), with --stats of each.  Root, loop devices, 4 GiB in $TMPDIR.
# Not part of make check: a measurement, not a test.
set -euo pipefail
N=${N:-200000}
here=$(cd "$(dirname "$0")" && pwd)
R=$here/../../userspace/chj-resolve-test
T=$here/fstruth.py
w=$(mktemp -d "${TMPDIR:-/tmp}/chj-store-cost.XXXXXX")
truncate -s 4G $w/dev.img
loop=$(losetup -f --show $w/dev.img)
trap 'umount $w/mnt 2>/dev/null; losetup -d $loop; rm -rf $w' EXIT
mkfs.ext4 -q -E lazy_itable_init=0 -N $((N + 20000)) $loop
mkdir $w/mnt; mount -o noatime $loop $w/mnt
python3 - "$w/mnt" "$N" <<'PY'
import os, sys
m, n = sys.argv[1], int(sys.argv[2])
for d in range(n // 1000):
    os.mkdir(f"{m}/d{d}")
    for i in range(1000):
        with open(f"{m}/d{d}/f{i}", "wb") as f: f.write(b"x" * 100)
PY
sync; fsfreeze -f $w/mnt; cp --sparse=always $w/dev.img $w/c1.img; fsfreeze -u $w/mnt
export CHJ_RESOLVE_CACHE_DIR=$w/cache; mkdir -m 700 $CHJ_RESOLVE_CACHE_DIR
: > $w/none
run() { local t0=$(date +%s.%N); "$@" >/dev/null; echo "$(echo "$(date +%s.%N) - $t0" | bc)"; }
echo "first run (builds the store): $(run env CHJ_RESOLVE_EPOCH=2 CHJ_RESOLVE_EPOCH_IMAGE=$w/c1.img CHJ_RESOLVE_CHANGES=$w/none $R --since 2 $loop) s"
echo "first run again, store off: $(run env CHJ_RESOLVE_STATE=off CHJ_RESOLVE_EPOCH=2 CHJ_RESOLVE_CHANGES=$w/none $R --since 2 $loop) s"
ls -la $CHJ_RESOLVE_CACHE_DIR
# 0.1 %: chmod + append to N/1000 files spread over the tree
python3 - "$w/mnt" "$N" <<'PY'
import os, sys, random
m, n = sys.argv[1], int(sys.argv[2])
r = random.Random(3)
for k in range(n // 1000):
    d, i = r.randrange(n // 1000), r.randrange(1000)
    os.chmod(f"{m}/d{d}/f{i}", 0o600)
PY
sync; fsfreeze -f $w/mnt; cp --sparse=always $w/dev.img $w/c2.img; fsfreeze -u $w/mnt
python3 $T diffimg $w/c1.img $w/c2.img 4096 > $w/ch12
echo "changed ranges: $(wc -l < $w/ch12)"
for i in 1 2 3; do
echo "steady, store on: $(run env CHJ_RESOLVE_EPOCH=3 CHJ_RESOLVE_EPOCH_IMAGE=$w/c2.img CHJ_RESOLVE_CHANGES=$w/ch12 $R --since 2 $loop) s"
echo "steady, store off: $(run env CHJ_RESOLVE_STATE=off CHJ_RESOLVE_EPOCH=3 CHJ_RESOLVE_CHANGES=$w/ch12 $R --since 2 $loop) s"
done
env CHJ_RESOLVE_EPOCH=3 CHJ_RESOLVE_EPOCH_IMAGE=$w/c2.img CHJ_RESOLVE_CHANGES=$w/ch12 $R --since 2 --stats $loop 2>&1 >$w/on.txt | grep -E "listed|state store|time"
env CHJ_RESOLVE_STATE=off CHJ_RESOLVE_EPOCH=3 CHJ_RESOLVE_CHANGES=$w/ch12 $R --since 2 --stats $loop 2>&1 >$w/off.txt | grep -E "listed|time"
echo "listed on/off: $(wc -l < $w/on.txt) / $(wc -l < $w/off.txt)"
