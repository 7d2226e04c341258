#!/bin/bash
# The performance gate (issue 36, BENCHMARKS.md "The gate"): instruction-
# timed (vm-icount: one vCPU whose clock counts the instructions it runs,
# so a job on RAM disks takes the same "time" in every run), interleaved
# A/B on brd of dm-linear and four dm-chj builds, each loaded fresh for its
# turn (rmmod, insmod; the order reversed in the second repetition):
#   base  the baseline commit's module (bench/baseline-commit)
#   cur   this tree's
#   aa    this tree's again: cur against aa is the A/A, which must pass
#   slow  this tree's built with -DCHJ_PERF_CONTROL_SLOW: the negative
#         control, which must fail
# on the jobs of bench/vm/bench.sh: 4 KiB random first touch and steady
# state at QD1 and QD32, 1 MiB sequential writes, a checkpoint under load;
# then chj-resolve's CPU on ext4 (tests/vm/lib/perf-resolve.sh) with the
# same four builds of it: base (the baseline commit's), cur, aa, and slow
# (this tree's with -DCHJ_PERF_CONTROL_SLOW=1200: 1200 turns of a
# two-instruction asm loop per inode the ext4 owner scan visits, about
# +10 % of the run, against an allowance of 5 %).
# The verdict is made on the host (tests/perf/gate, the vm-host-check):
# per metric baseline, this tree, ratio, against bench/gate.conf's
# allowances; the control must fail on the module's jobs and on the
# resolver's, each.  The modules are built by tests/perf/build-modules,
# the baseline's and the slowed chj-resolve by tests/perf/build-resolver
# (make).
# vm-icount: 1
# vm-host-check: tests/perf/gate
# vm-timeout: 600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"

# shellcheck source=tests/vm/lib/perf.sh
. "$CHJ_ROOT/tests/vm/lib/perf.sh"
BENCH_REPS=2
BENCH_TARGETS="linear base cur aa slow"
# make check's other kernels (CHJ_SHORT): the gate, the ratios to dm-linear
# and the control (whether the gate sees a slowdown depends on the kernel:
# 120 turns were seen on 6.1 and missed on Debian 13's 6.12); the A/A on the
# first kernel only (tests/perf/gate skips what was not run; perf-aa.sh
# calibrates each kernel).
! short || BENCH_TARGETS="linear base cur slow"
BENCH_MODULES="base=$P/base/dm-target/dm-chj.ko cur=$CHJ_KO aa=$CHJ_KO slow=$P/slow/dm-target/dm-chj.ko"
perf_run
