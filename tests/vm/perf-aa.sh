#!/bin/bash
# The perf gate's calibration (BENCHMARKS.md "The gate's noise"): the run of
# tests/vm/perf-gate.sh with the baseline commit's module against itself,
# "base" and "aa" two loads of the same build (and its chj-resolve twice),
# four repetitions ABBA: what the gate's ratios and spreads are when nothing
# changed, per metric, on the kernel it boots.  bench/gate.conf's allowances
# come from these spreads.  tests/perf/gate sees no "cur" target and judges
# the A/A alone (it must pass); no record is written.  Not in make check
# (make check-long, and by hand per kernel: KVER=... scripts/vm-test perf-aa).
# vm-icount: 1
# vm-host-check: tests/perf/gate
# vm-timeout: 900
# vm-long-only: yes
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

# shellcheck source=tests/vm/lib/perf.sh
. "$CHJ_ROOT/tests/vm/lib/perf.sh"
BENCH_REPS=4
BENCH_TARGETS="base aa"
BENCH_MODULES="base=$P/base/dm-target/dm-chj.ko aa=$P/base/dm-target/dm-chj.ko"
RES_AA=$CHJ_ROOT/build/perf/resolver/userspace/chj-resolve
PERF_RES_REPS=4
perf_run
