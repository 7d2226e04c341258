# shellcheck shell=bash
# Helpers for the chj-resolve VM tests (resolve-*.sh), sourced after lib.sh
# and chj.sh.  resolve_truth_test runs the shared workload
# (tests/resolve/workload.sh) on a filesystem over the real target and
# checks chj-resolve's output against ground truth (tests/resolve/fstruth.py).

CHJ=$CHJ_ROOT/userspace/chj
RESOLVE=$CHJ_ROOT/userspace/chj-resolve
# The same program with the test hooks (CHJ_RESOLVE_PROGRESS_AFTER, ...).
RESOLVE_TEST=$CHJ_ROOT/userspace/chj-resolve-test
TRUTH=$CHJ_ROOT/tests/resolve/fstruth.py
# (python3 -S, without the site module, starts 0.07-0.1 s sooner under TCG;
# fstruth.py and workload.py use the standard library only.)
# shellcheck source=tests/resolve/workload.sh disable=SC1091
. "$CHJ_ROOT/tests/resolve/workload.sh"
[ -x "$RESOLVE" ] || fail "$RESOLVE not built (make userspace)"
# The name cache (the default /var/cache is read-only here).
export CHJ_RESOLVE_CACHE_DIR=/tmp/chj-resolve-cache
mkdir -p -m 700 "$CHJ_RESOLVE_CACHE_DIR"

# rlog MSG: log with the seconds since the test began.
rlog() { log "[${SECONDS}s] $*"; }

# rexpect CODE CMD...: run CMD, require exit status CODE; output in
# $CHJ_OUT/last.out and last.err.
rexpect() {
	local want=$1 rc=0
	shift
	"$@" >"$CHJ_OUT/last.out" 2>"$CHJ_OUT/last.err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$CHJ_OUT/last.err"; fail "$* exited $rc, expected $want"; }
}

# check_truth [--snap] BEFORE AFTER WRITES OUT...: the ground truth between
# two snapshots in $CHJ_OUT must be a subset of each OUT (chj-resolve -0 or
# --json output), whose JSON ranges must cover the ranges in $CHJ_OUT/WRITES;
# the precision of each goes to $CHJ_OUT/precision.  --snap takes the AFTER
# snapshot first.
check_truth() {
	local snap='' b a w log
	[ "$1" = --snap ] && { snap=--snap; shift; }
	b=$1 a=$2 w=$3
	shift 3
	log=$CHJ_OUT/check-$(basename "$1").txt
	python3 -S "$TRUTH" check "$CHJ_OUT/$b.json" "$CHJ_OUT/$a.json" "$@" --mount "$mnt_" \
		--writes "$CHJ_OUT/$w" ${snap:+"$snap"} | tee "$log" ||
		fail "$*: misses changes or ranges"
	sed -n "s/^check \(.*\): .* precision /precision \1 /p" "$log" >>"$CHJ_OUT/precision"
}

# resolve_json OUT ARGS...: chj-resolve --json --stats ARGS into OUT,
# statistics into OUT.stats (printed).
resolve_json() {
	local o=$1 rc=0 t0 t1
	shift
	t0=$(date +%s.%N)
	CHJ_RESOLVE_DEBUG=1 "$RESOLVE_TEST" --json --stats "$@" >"$o" 2>"$o.stats" || rc=$?
	t1=$(date +%s.%N)
	cat "$o.stats"
	[ $rc = 0 ] || fail "chj-resolve --json $* exited $rc"
	rlog "resolve took $(echo "$t1 - $t0" | bc) s"
}

# resolve_truth_test NAME MNT: NAME is a chj device holding a fresh
# filesystem mounted on MNT.  Populate, checkpoint, modify, resolve, compare;
# then a second checkpoint and round of changes, checked since the second
# checkpoint (the default epoch) and since the first.  The test may define
# extra_populate MNT, extra_settle MNT (the last change before the
# checkpoint), extra_modify MNT and extra_modify2 MNT (round 2).
# A short run (the second kernel's) stops after round 1 and its freeze:
# what the kernel writes (journal or log, then home) is round 1's too;
# round 2 tests the resolver's steady state (state store, name cache over
# two epochs), which is the same userspace on every kernel.  LIVE_BASE is
# then what resolve_live checks against: "BEFORE AFTER WRITES" of the
# current epoch's round.
resolve_truth_test() {
	local name=$1 mnt=$2 e e2 out=$CHJ_OUT
	mnt_=$mnt
	: >"$out/precision"
	rlog "populate"
	wl_populate "$mnt"
	# Filesystem-specific additions (defined by the test, optional).
	if declare -F extra_populate >/dev/null; then extra_populate "$mnt"; fi
	sync
	# Read every file as the snapshot does, so that the atime updates
	# that brings are written now, not after the checkpoint.
	find "$mnt" -xdev -type f -exec head -qc1 {} + >/dev/null
	# A last small change before the checkpoint, so that the populate is
	# not what the transaction spanning the checkpoint holds (btrfs lists
	# the inodes of that transaction that share a changed leaf).
	echo settle >"$mnt/.settle"
	if declare -F extra_settle >/dev/null; then extra_settle "$mnt"; fi
	sync
	python3 -S "$TRUTH" snap "$mnt" "$out/before.json"
	e=$("$CHJ" checkpoint "$name")
	# A backup right after the checkpoint: builds the name cache.
	"$RESOLVE" --since "$e" "$name" >/dev/null
	rlog "checkpoint: epoch $e; modify (round 1)"
	wl_modify "$mnt" "$out/writes" 1
	if declare -F extra_modify >/dev/null; then extra_modify "$mnt"; fi
	sync
	rlog "resolve since $e"
	resolve_json "$out/out.json" --since "$e" "$name"
	"$RESOLVE" --since "$e" -0 "/dev/mapper/$name" >"$out/out0"
	"$RESOLVE" "$name" >"$out/out.txt"	# default: since the current epoch
	# With the name cache (where it applies) as with a walk.
	CHJ_RESOLVE_CACHE=off "$RESOLVE" --since "$e" -0 "$name" >"$out/out0-walk"
	cmp "$out/out0" "$out/out0-walk" || fail "name cache and walk disagree"
	grep "name cache" "$out/out.json.stats" || true
	rlog "ground truth: -0 and --json output, the written ranges"
	check_truth --snap before after writes "$out/out0" "$out/out.json"
	# Same set in every format; the default epoch is the current one (= e).
	assert_eq "$(tr -cd '\0' <"$out/out0" | wc -c)" "$(wc -l <"$out/out.txt")" "paths, -0 vs lines"
	assert_eq "$(wc -l <"$out/out.json")" "$(wc -l <"$out/out.txt")" "paths, json vs lines"
	grep -q '^\\.*/e/new\\nline$' "$out/out.txt" || fail "escaped newline name missing"

	# A freeze writes everything home (ext4 checkpoints its journal, XFS
	# pushes its log): the same changes are then found there instead.
	rlog "after fsfreeze: found at home, not in the journal or log"
	fsfreeze -f "$mnt"
	fsfreeze -u "$mnt"
	resolve_json "$out/out-frozen.json" --since "$e" "$name"
	check_truth before after writes "$out/out-frozen.json"
	LIVE_BASE="before after writes"
	if short; then
		sync	# the snapshot's atime updates, as before round 2
		return
	fi

	# Round 2, after a second checkpoint.  (The snapshot's atime updates
	# are written before it.)
	sync
	e2=$("$CHJ" checkpoint "$name")
	# The backup of round 1, as the recipe runs it: right after the
	# checkpoint, since the previous one.  It brings the state store
	# (ext4) to epoch e2's start, so round 2 is answered in steady state.
	"$RESOLVE" --since "$e" "$name" >/dev/null
	rlog "checkpoint: epoch $e2; modify (round 2)"
	wl_modify "$mnt" "$out/writes2" 2
	if declare -F extra_modify2 >/dev/null; then extra_modify2 "$mnt"; fi
	sync
	rlog "resolve (default epoch: $e2)"
	resolve_json "$out/out2.json" "$name"
	grep -q "since epoch $e2," "$out/out2.json.stats" || fail "the default epoch is not $e2"
	"$RESOLVE" -0 "$name" >"$out/out2-0"
	CHJ_RESOLVE_CACHE=off "$RESOLVE" -0 "$name" >"$out/out2-0-walk"
	cmp "$out/out2-0" "$out/out2-0-walk" || fail "round 2: name cache and walk disagree"
	check_truth --snap after after2 writes2 "$out/out2-0" "$out/out2.json"
	rlog "resolve since $e: both rounds"
	cat "$out/writes" "$out/writes2" >"$out/writes12"
	resolve_json "$out/out12.json" --since "$e" "$name"
	check_truth before after2 writes12 "$out/out12.json"
	cat "$out/precision"
	LIVE_BASE="after after2 writes2"
}

# resolve_min_precision MIN: every check of resolve_truth_test reached MIN
# (the state store's target, issue 16: ext4, XFS).
resolve_min_precision() {
	local low
	# awk, not a python3 per line: each costs a third of a second under TCG.
	low=$(awk -v min="$1" '$3 + 0 < min + 0 { print $2, $3 }' "$CHJ_OUT/precision")
	[ -z "$low" ] || fail "precision below $1: $low"
	[ -s "$CHJ_OUT/precision" ] || fail "no precision to check"
}

# resolve_progress NAME: with stderr a terminal, a long run shows progress
# there (CHJ_RESOLVE_PROGRESS_AFTER=0 makes any run long) and stdout is
# the same; with stderr not a terminal, no progress line.
resolve_progress() {
	local name=$1 out=$CHJ_OUT
	rlog "progress on a terminal"
	"$RESOLVE" "$name" >"$out/plain.txt" 2>"$out/plain.err"
	script -qec "env CHJ_RESOLVE_PROGRESS_AFTER=0 CHJ_RESOLVE_CACHE=off $RESOLVE_TEST $name >$out/tty.txt" \
		"$out/tty.log" >/dev/null
	cat -v "$out/tty.log"
	grep -q 'walking .*entries' "$out/tty.log" || fail "no progress line on a terminal"
	cmp "$out/plain.txt" "$out/tty.txt" || fail "stdout differs when stderr is a terminal"
	CHJ_RESOLVE_PROGRESS_AFTER=0 CHJ_RESOLVE_CACHE=off "$RESOLVE_TEST" "$name" 2>"$out/notty.err" >/dev/null
	[ ! -s "$out/notty.err" ] || fail "progress printed to a stderr that is not a terminal"
}

# resolve_xfs RMAPBT METHOD: the truth test on XFS made with rmapbt=RMAPBT,
# which chj-resolve must read with METHOD (GETFSMAP or FIEMAP).
resolve_xfs() {
	local rmap=$1 method=$2 mnt=/tmp/mnt
	# The workload's reflinks must share blocks here.
	export WL_NEED_CLONE=1
	mkdir -p $mnt
	"$CHJ" create x /dev/vda /dev/vdb
	mkfs.xfs -q -f -m "rmapbt=$rmap,reflink=1" /dev/mapper/x
	mount /dev/mapper/x $mnt
	resolve_truth_test x $mnt
	grep -q "method XFS: $method" "$CHJ_OUT/out.json.stats" || fail "rmapbt=$rmap: not read with $method"
	# Entries the log rewrote are listed for their names (RENAME_EXCHANGE
	# writes neither inode; the truth check holds the exchanged ones).
	grep -q '"reasons": \[[^]]*"name"' "$CHJ_OUT/out.json" || fail "no entry listed for its name"
	# Steady state (the store of the run right after each checkpoint):
	# the entries of changed directories compared with it (issue 16).
	short || grep -q "state store: state of epoch .* used" "$CHJ_OUT/out2.json.stats" ||
		fail "round 2 was not answered with the state store"
	resolve_min_precision 0.90
	resolve_live x $mnt xfs
	umount $mnt
	"$CHJ" remove x
	log "ok"
}

# resolve_exit_tests NAME MNT DEV: the "full scan needed" and error exits.
resolve_exit_tests() {
	local name=$1 mnt=$2 dev=$3 cur
	cur=$(st "$name" cur)
	log "exit 3: an epoch in the future (chj's exit-code table: a full backup)"
	rexpect 3 "$RESOLVE" --since $((cur + 1)) "$name"
	grep -q "newer than the current epoch" "$CHJ_OUT/last.err" || fail "no 'newer than the current epoch'"
	log "exit 2: usage errors"
	rexpect 2 "$RESOLVE" -0 --json "$name"
	rexpect 2 "$RESOLVE"
	log "exit 3: --mount names another filesystem"
	rexpect 3 "$RESOLVE" --mount /tmp "$name"
	grep -q "full scan needed" "$CHJ_OUT/last.err" || fail "no 'full scan needed'"
	[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed paths"
	log "--mount with the right directory works"
	rexpect 0 "$RESOLVE" --mount "$mnt" "$name"
	log "exit 1: not mounted"
	umount "$mnt"
	rexpect 1 "$RESOLVE" "$dev"
	grep -q "not mounted" "$CHJ_OUT/last.err" || fail "no 'not mounted'"
	mount "$dev" "$mnt"
}

# resolve_live NAME MNT FS: a resolve while traffic moves the log (issue
# 14), over the real target, after resolve_truth_test: the last round's
# changes (since the current epoch: LIVE_BASE) are the answer each time.  The traffic is
# tests/resolve/log-churn.sh in MNT/churn.  First the race: the traffic
# runs as chj-resolve-test's CHJ_RESOLVE_LOG_RACE, between the resolver's
# read of the log and its re-read of the head, until the kernel moved the
# log (ext4: the jbd2 superblock, rewritten when a checkpoint took the
# tail, and the resolver must say it moved since the map; XFS: the head).  Then
# resolves with the traffic running all along, one every two rounds: at
# least three, and on ext4 (a 4 MiB journal) until the journal wrapped
# (its tail went back towards the start).  XFS's log is at least 64 MiB,
# about 50 s of this traffic per lap under TCG: a lap under a live
# resolve is host-check's (tests/resolve/host-check.sh, "live log").
# btrfs reads no log: three resolves under the traffic.  Each answer holds
# every truly changed file (exit 0), or is exit 3 naming the log (it moved
# too much).  FS: ext4, xfs or btrfs.
resolve_live() {
	local name=$1 mnt=$2 fs=$3 i laps=0 s0 s1 churner rounds outs=() moved=
	local churn=$CHJ_ROOT/tests/resolve/log-churn.sh dev=/dev/mapper/$1 base
	read -ra base <<<"$LIVE_BASE"
	rlog "live: resolves while traffic moves the log ($fs)"
	mkdir "$mnt/churn"
	"$churn" "$mnt/churn"
	if [ "$fs" != btrfs ]; then
		live_resolve "$name" live-race "$churn $mnt/churn $dev $fs 60" && outs+=("$CHJ_OUT/live-race.json")
		grep -q "^race: the log moved" "$CHJ_OUT/live-race.stats" || fail "live-race: no race"
		if [ "$fs" = ext4 ]; then
			grep -q "^journal: it moved since the change map was read" "$CHJ_OUT/live-race.stats" ||
				fail "live-race: the journal moved and the resolver did not see it"
		fi
		s0=$("$churn" --state "$dev" "$fs")
		moved="the log from $s0 to"
	fi
	# The traffic says "round" after each round; each resolve starts after
	# two more (the traffic goes on meanwhile): resolves back to back
	# would starve it.
	exec {rounds}< <("$churn" --until "$CHJ_OUT/churn.stop" "$mnt/churn")
	churner=$!
	for ((i = 1; ; i++)); do
		read -r -t 60 -u "$rounds" _ || fail "live: the traffic stopped"
		read -r -t 60 -u "$rounds" _ || fail "live: the traffic stopped"
		! live_resolve "$name" "live-churn$i" || outs+=("$CHJ_OUT/live-churn$i.json")
		if [ "$fs" = ext4 ]; then
			s1=$("$churn" --state "$dev" "$fs")
			log "live-churn$i: the journal's tail at ${s1% *} (from ${s0% *})"
			laps=$((laps + $("$churn" --wraps "$fs" "$s0" "$s1")))
			s0=$s1
			[ $i -lt 30 ] || fail "live: the journal did not wrap in $i resolves"
			[ $laps = 0 ] && continue
		fi
		[ $i -lt 3 ] || break
	done
	touch "$CHJ_OUT/churn.stop"
	cat <&"$rounds" >/dev/null
	exec {rounds}<&-
	wait "$churner"
	rm -f "$CHJ_OUT/churn.stop"
	[ -z "$moved" ] || moved="; $moved $("$churn" --state "$dev" "$fs"), wrapped $laps times"
	rlog "live: $i resolves under traffic$moved; ${#outs[@]} answers to check"
	[ ${#outs[@]} -gt 0 ] || fail "live: every resolve exited 3"
	python3 -S "$TRUTH" check "$CHJ_OUT/${base[0]}.json" "$CHJ_OUT/${base[1]}.json" "${outs[@]}" \
		--mount "$mnt" --writes "$CHJ_OUT/${base[2]}" >"$CHJ_OUT/live.check" ||
		{ cat "$CHJ_OUT/live.check"; fail "live: a resolve missed changes"; }
	grep "^check" "$CHJ_OUT/live.check"
}

# live_resolve NAME CHECK [RACE]: the last round's resolve of chj device
# NAME (the current epoch), --json into $CHJ_OUT/CHECK.json, with
# CHJ_RESOLVE_LOG_RACE=RACE.  Exit 0: an answer to check; 1: exit 3
# naming the log (allowed without RACE); anything else fails the test.
live_resolve() {
	local name=$1 n=$2 race=${3:-} rc=0 o=$CHJ_OUT/$2
	CHJ_RESOLVE_LOG_RACE=$race "$RESOLVE_TEST" --stats --json "$name" >"$o.json" 2>"$o.stats" || rc=$?
	grep -E '^(journal|chj-resolve|race)' "$o.stats" || true
	if [ $rc = 3 ] && [ -z "$race" ] && grep -qE 'ext4 journal went round|XFS log' "$o.stats"; then
		log "$n: exit 3 (the log moved too much): allowed"
		return 1
	fi
	[ $rc = 0 ] || { cat "$o.stats"; fail "$n: chj-resolve exited $rc"; }
	! grep -q "LOG_RACE failed" "$o.stats" || fail "$n: the race did not happen"
}
