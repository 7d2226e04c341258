#!/bin/bash
# The perf gate's resolver run (sourced by tests/vm/perf-gate.sh after the
# fio jobs): chj-resolve of the baseline commit (build/perf/resolver/), of
# this tree, and, when BENCH_TARGETS has "slow", of this tree slowed
# (build/perf/resolver-slow/, -DCHJ_PERF_CONTROL_SLOW: the negative control,
# which the gate must fail; both built by tests/perf/build-resolver), each
# timed by the CPU it uses (chj-benchguest cputime: the scheduler's runtime
# of all its threads), which under -icount counts instructions; its elapsed
# time would also count idle waits, which pass in host time (A/A spread
# 30 % measured).  A tree of PERF_RES_FILES files on ext4 over dm-chj
# (brd), 1 % of them overwritten after a checkpoint; each binary resolves
# that epoch with its own name cache, twice untimed (the warm-up: the cache
# and state store built, its program and libraries in the page cache, so no
# run waits for the host over 9p) and then PERF_RES_REPS times in ABBA
# order with aa, this tree's binary again (the A/A), and slow.  Every run
# must list every changed file.  Results: "TARGET resolve-ext4 REP
# resolve_cpu_ms MS" lines in $OUT/extra.tsv (tests/perf/gate compares
# them).
RES_BASE=$CHJ_ROOT/build/perf/resolver/userspace/chj-resolve
RES_CUR=$CHJ_ROOT/userspace/chj-resolve
RES_SLOW=$CHJ_ROOT/build/perf/resolver-slow/userspace/chj-resolve
RES_FILES=${PERF_RES_FILES:-2000}
RES_REPS=${PERF_RES_REPS:-2}
[ -x "$RES_BASE" ] || fail "$RES_BASE is not built (make: tests/perf)"
[ -x "$RES_CUR" ] || fail "$RES_CUR is not built (make)"

# RES_AA: aa's binary (default this tree's; tests/vm/perf-aa.sh: the baseline's).
res_bin() { case $1 in base) echo "$RES_BASE" ;; aa) echo "${RES_AA:-$RES_CUR}" ;; slow) echo "$RES_SLOW" ;; *) echo "$RES_CUR" ;; esac; }
has_target() { case " $BENCH_TARGETS " in *" $1 "*) true ;; *) false ;; esac; }
! has_target slow || [ -x "$RES_SLOW" ] || fail "$RES_SLOW is not built (make: tests/perf)"

# resolve_run TARGET: chj-resolve of TARGET since $RES_EPOCH; sets RES_US
# (its CPU time in µs).
resolve_run() {
	local rc=0
	CHJ_RESOLVE_CACHE_DIR=/tmp/rcache/$1 "$GUEST" cputime /tmp/rcpu "$(res_bin "$1")" \
		--since "$RES_EPOCH" /dev/mapper/r >/tmp/rlist 2>/tmp/rerr || rc=$?
	[ $rc = 0 ] || { cat /tmp/rerr; fail "chj-resolve ($1): exit $rc"; }
	sort -u /tmp/rlist >/tmp/rlist.sorted
	[ -z "$(comm -23 /tmp/changed.sorted /tmp/rlist.sorted)" ] ||
		fail "chj-resolve ($1) missed changed files: $(comm -23 /tmp/changed.sorted /tmp/rlist.sorted | head -n 3)"
	read -r RES_US </tmp/rcpu
}

resolve_gate() {
	local t targets="base cur" rep order
	has_target aa && targets="base cur aa"
	has_target cur || targets="base aa"
	! has_target slow || targets="$targets slow"
	dd if=/dev/zero of=/dev/ram0 bs=1M count=8 oflag=direct status=none
	dm_create r "0 $(sectors /dev/ram1) chj /dev/ram0 /dev/ram1 8" >/dev/null
	mkfs.ext4 -q -F -i 8192 -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/r
	mkdir -p /tmp/rmnt
	mount -t ext4 -o noatime /dev/mapper/r /tmp/rmnt
	"$GUEST" tree-create /tmp/rmnt/tree "$RES_FILES" 4096 1
	umount /tmp/rmnt
	mount -t ext4 -o noatime /dev/mapper/r /tmp/rmnt
	RES_EPOCH=$("$GUEST" msg r checkpoint 2>/dev/null)
	"$GUEST" tree-change /tmp/rmnt/tree "$RES_FILES" 1 1 /tmp/changed.txt
	sync
	sort -u /tmp/changed.txt >/tmp/changed.sorted
	mkdir -p /tmp/rcache
	for t in $targets; do mkdir -m 700 "/tmp/rcache/$t"; done
	# Two warm-up rounds: after one, the first timed run was 10 % slower
	# than every later one, whichever binary it ran (35.5 ms against
	# 32.2-33.2 on 7.3, 33.2 against 29.3-30.5 on 6.12: base's first
	# repetition, which inflated base's mean by 5 %).
	for rep in 1 2; do
		for t in $targets; do
			resolve_run "$t"
			log "resolver warm-up $rep $t: $RES_US us CPU, $(wc -l </tmp/rlist) listed, $(wc -l </tmp/changed.sorted) changed"
		done
	done
	for rep in $(seq "$RES_REPS"); do
		order=$targets
		# shellcheck disable=SC2086 # one word per target
		[ $((rep % 2)) = 1 ] || order=$(printf '%s\n' $targets | tac | tr '\n' ' ')
		for t in $order; do
			resolve_run "$t"
			printf '%s\tresolve-ext4\t%s\tresolve_cpu_ms\t%s.%03d\n' "$t" "$rep" $((RES_US / 1000)) $((RES_US % 1000)) >>"$OUT/extra.tsv"
			log "resolver $t rep $rep: $RES_US us CPU"
		done
	done
	umount /tmp/rmnt
	dmsetup remove r
}
