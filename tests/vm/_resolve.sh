# shellcheck shell=bash
# Helpers for the chj-resolve VM tests (resolve-*.sh), sourced after lib.sh
# and _chj.sh.  resolve_truth_test runs the shared workload
# (tests/resolve/workload.sh) on a filesystem over the real target and
# checks chj-resolve's output against ground truth (tests/resolve/fstruth.py).

CHJ=$CHJ_ROOT/userspace/chj
RESOLVE=$CHJ_ROOT/userspace/chj-resolve
TRUTH=$CHJ_ROOT/tests/resolve/fstruth.py
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

# resolve_truth_test NAME MNT: NAME is a chj device holding a fresh
# filesystem mounted on MNT.  Populate, checkpoint, modify, resolve, compare.
# The test may define extra_populate MNT, extra_settle MNT (the last change
# before the checkpoint) and extra_modify MNT.
resolve_truth_test() {
	local name=$1 mnt=$2 e out=$CHJ_OUT t0 t1
	rlog "populate"
	wl_populate "$mnt"
	# Filesystem-specific additions (defined by the test, optional).
	if declare -F extra_populate >/dev/null; then extra_populate "$mnt"; fi
	sync
	python3 "$TRUTH" snap "$mnt" "$out/before.json"
	# A last small change before the checkpoint, so that the populate is
	# not what the transaction spanning the checkpoint holds (btrfs lists
	# the inodes of that transaction that share a changed leaf).
	echo settle >"$mnt/.settle"
	if declare -F extra_settle >/dev/null; then extra_settle "$mnt"; fi
	sync
	python3 "$TRUTH" snap "$mnt" "$out/before.json"
	e=$("$CHJ" checkpoint "$name")
	# A backup right after the checkpoint: builds the name cache.
	"$RESOLVE" --since "$e" "$name" >/dev/null
	rlog "checkpoint: epoch $e; modify"
	wl_modify "$mnt" "$out/writes"
	if declare -F extra_modify >/dev/null; then extra_modify "$mnt"; fi
	sync
	rlog "resolve since $e"
	t0=$(date +%s.%N)
	CHJ_RESOLVE_DEBUG=1 "$RESOLVE" --since "$e" --json --stats "$name" >"$out/out.json" 2>"$out/stats.txt" ||
		{ cat "$out/stats.txt"; fail "chj-resolve --json exited $?"; }
	t1=$(date +%s.%N)
	cat "$out/stats.txt"
	rlog "resolve took $(echo "$t1 - $t0" | bc) s"
	"$RESOLVE" --since "$e" -0 "/dev/mapper/$name" >"$out/out0"
	"$RESOLVE" "$name" >"$out/out.txt"	# default: since the current epoch
	# With the name cache (where it applies) as with a walk.
	CHJ_RESOLVE_CACHE=off "$RESOLVE" --since "$e" -0 "$name" >"$out/out0-walk"
	cmp "$out/out0" "$out/out0-walk" || fail "name cache and walk disagree"
	grep "name cache" "$out/stats.txt" || true
	python3 "$TRUTH" snap "$mnt" "$out/after.json"
	rlog "ground truth: -0 output"
	python3 "$TRUTH" check "$out/before.json" "$out/after.json" "$out/out0" --mount "$mnt" |
		tee "$out/check0.txt"
	grep -q '^check: .* missing 0,' "$out/check0.txt" || fail "-0 output misses changes"
	rlog "ground truth: --json output and the image's write ranges"
	python3 "$TRUTH" check "$out/before.json" "$out/after.json" "$out/out.json" --mount "$mnt" \
		--json --writes "$out/writes" | tee "$out/check-json.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || fail "--json output misses changes or ranges"
	# Same set in every format; the default epoch is the current one (= e).
	assert_eq "$(tr -cd '\0' <"$out/out0" | wc -c)" "$(wc -l <"$out/out.txt")" "paths, -0 vs lines"
	assert_eq "$(wc -l <"$out/out.json")" "$(wc -l <"$out/out.txt")" "paths, json vs lines"
	grep -q '^\\.*/e/new\\nline$' "$out/out.txt" || fail "escaped newline name missing"

	# A freeze writes everything home (ext4 checkpoints its journal, XFS
	# pushes its log): the same changes are then found there instead.
	rlog "after fsfreeze: found at home, not in the journal or log"
	fsfreeze -f "$mnt"
	fsfreeze -u "$mnt"
	CHJ_RESOLVE_DEBUG=1 "$RESOLVE" --since "$e" --json --stats "$name" >"$out/out-frozen.json" 2>"$out/stats-frozen.txt" ||
		{ cat "$out/stats-frozen.txt"; fail "chj-resolve after the freeze exited $?"; }
	grep -E '^(attributed|journal|listed):' "$out/stats-frozen.txt"
	python3 "$TRUTH" check "$out/before.json" "$out/after.json" "$out/out-frozen.json" --mount "$mnt" \
		--json --writes "$out/writes" | tee "$out/check-frozen.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || fail "after the freeze: output misses changes or ranges"
}

# resolve_exit_tests NAME MNT DEV: the "full scan needed" and error exits.
resolve_exit_tests() {
	local name=$1 mnt=$2 dev=$3 cur
	cur=$(st "$name" cur)
	log "exit 2: an epoch in the future"
	rexpect 2 "$RESOLVE" --since $((cur + 1)) "$name"
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
