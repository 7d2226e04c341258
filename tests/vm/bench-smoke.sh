#!/bin/bash
# Smoke test of the benchmark tooling (not a benchmark): one tiny repetition
# of every job of bench/vm/bench.sh on dm-linear, dm-chj and dm-era, then
# chj-benchdb imports it into a scratch database and compares and ratios
# it.  Asserts only that results were produced and imported.
# vm-timeout: 240
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

BENCH_SET=1
BENCH_REPS=1
BENCH_TARGETS="linear chj era"
BENCH_SIZE_MIB=64
BENCH_META_MIB=16
BENCH_NIOS=256
BENCH_CKPT_SECONDS=2
# shellcheck source=bench/vm/bench.sh
. "$CHJ_ROOT/bench/vm/bench.sh"

bdb=$CHJ_ROOT/scripts/bench-db/chj-benchdb
[ -x "$bdb" ] || fail "$bdb is not built (make)"
db=/tmp/bench.db
njobs=$(wc -w <<<"$JOBS")
assert_eq $((3 * njobs)) "$(wc -l <"$OUT/manifest.tsv")" "fio runs in the manifest"

log "import"
run=$("$bdb" --db $db import "$OUT" --commit smoke --host guest --label bench-smoke)
counts=$("$bdb" --db $db count "$run")
echo "$counts"
assert_eq "run=$run results=$((3 * njobs))" "${counts% metrics=*}" "imported results"
q() { sqlite3 $db "$1"; }
for t in linear chj era; do
	for j in $JOBS; do
		case $j in randread*) m=read_iops ;; *) m=write_iops ;; esac
		v=$(q "SELECT count(*) FROM metrics WHERE run_id=$run AND target='$t' AND job='$j' AND metric='$m' AND value > 0")
		assert_eq 1 "$v" "$t $j $m"
	done
done
assert_eq 1 "$(q "SELECT count(*) FROM metrics WHERE run_id=$run AND target='chj' AND job='randwrite-qd1-first' AND metric='meta_bytes_per_gib' AND value > 0")" "chj metadata bytes per GiB"
assert_eq 1 "$(q "SELECT count(*) FROM metrics WHERE run_id=$run AND target='era' AND job='ckpt-under-load' AND metric='ckpt_lat_p50_ms' AND value > 0")" "era checkpoint latency"
assert_eq 1 "$(q "SELECT count(*) FROM results WHERE run_id=$run AND json_extract(output, '\$.\"fio version\"') IS NOT NULL AND job='seqwrite-1m' AND target='chj'")" "full fio JSON stored"

log "compare gates: synthetic runs, 10 % fewer IOPS at n=5 must regress"
q "INSERT INTO runs (id, git_commit, kernel, date, host, kind) VALUES
	(901, 'aaaa', 'k', 'd', 'h', 'target'), (902, 'bbbb', 'k', 'd', 'h', 'target'),
	(903, 'cccc', 'k', 'd', 'h', 'target');
	WITH v(rep, x) AS (VALUES (1, 100), (2, 101), (3, 99), (4, 100), (5, 102))
	INSERT INTO metrics SELECT r, 'chj', 'j', rep, 'write_iops', x * f FROM v,
	(SELECT 901 AS r, 1.0 AS f UNION ALL SELECT 902, 0.9 UNION ALL SELECT 903, 1.005)"
rc=0
"$bdb" --db $db compare 901 902 >/tmp/cmp.txt || rc=$?
cat /tmp/cmp.txt
assert_eq 1 $rc "compare exit status on a regression"
grep -q 'REGRESSION' /tmp/cmp.txt || fail "no REGRESSION line"
"$bdb" --db $db compare 901 903 | tail -n 1 | grep -q '^compare ok' || fail "0.5 % change flagged"
"$bdb" --db $db compare aaaa cccc >/dev/null || fail "compare by commit"

log "ratio, compare (a run against itself: no regression), targets"
"$bdb" --db $db ratio "$run" linear chj >/dev/null
"$bdb" --db $db compare "$run" "$run" | tail -n 1
"$bdb" --db $db targets --run "$run" || true
log "ok"
