#!/bin/bash
# The perf gate's run, shared by tests/vm/perf-gate.sh and tests/vm/perf-aa.sh
# (its calibration): the jobs of bench/vm/bench.sh on brd, instruction-timed,
# every build loaded fresh for its turn, ABBA; then the resolver run
# (tests/vm/lib/perf-resolve.sh).  The caller sets BENCH_TARGETS,
# BENCH_MODULES and BENCH_REPS (and RES_AA, the binary of the resolver's aa).
# shellcheck disable=SC2034 # read by the sourced scripts
P=$CHJ_ROOT/build/perf/$(uname -r)
BENCH_SET=1
BENCH_ABBA=1
BENCH_BACKING=brd
BENCH_SIZE_MIB=128
BENCH_META_MIB=16
BENCH_NIOS=20000
BENCH_CKPT_SECONDS=1
export BENCH_CKPT_EVERY=0.1	# 7-8 checkpoints in the job's second
BENCH_JOBS="randwrite-qd1-first randwrite-qd32-first seqwrite-1m randwrite-qd1-steady randwrite-qd32-steady ckpt-under-load"
perf_run() {
	# shellcheck source=bench/vm/bench.sh
	. "$CHJ_ROOT/bench/vm/bench.sh"
	# shellcheck source=tests/vm/lib/perf-resolve.sh
	. "$CHJ_ROOT/tests/vm/lib/perf-resolve.sh"
	modprobe ext4
	resolve_gate
	log "ok: results in $OUT for tests/perf/gate"
}
