#!/bin/bash
# order-check on synthetic traces, each built to pass or to fail one rule:
# the checker must tell them apart (host only; no kernel needed).
#   tests/order/selftest.sh [ORDER_CHECK]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
chk=${1:-$here/order-check}
chj=$here/../../userspace/chj
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# 32 MiB origin, 4 KiB regions: bitmap block 2 marks every region.
truncate -s 1M "$tmp/meta.img"
$chj format "$tmp/meta.img" --origin-size 32M >/dev/null
passed=0 failed=0

# ev TS TEXT: one trace line (task, CPU 0).
ev() { printf '           t-1     [000] .....  %8d: %s\n' "$1" "$2"; }
q() { ev "$1" "block_bio_queue: $2 $3 $4 + $5 [t]"; }
bc() { ev "$1" "block_bio_complete: $2 $3 $4 + $5 [${6:-0}]"; }
ri() { ev "$1" "block_rq_issue: $2 $3 0 () $4 + $5 [t]"; }
rc() { ev "$1" "block_rq_complete: $2 $3 () $4 + $5 [${6:-0}]"; }
mk() { ev "$1" "tracing_mark_write: chj-order: $2"; }
ckpt() { # ckpt TS: a checkpoint window with a superblock write, write-through
	mk "$1" "checkpoint begin"
	q $(($1 + 1)) 9,1 FWFSM 8 8
	bc $(($1 + 2)) 9,1 FWFSM 8 8
	mk $(($1 + 3)) "checkpoint end"
}
ckptwb() { # ckptwb TS: the same on write-back request-based metadata
	mk "$1" "checkpoint begin"
	q $(($1 + 1)) 9,1 FWFSM 8 8
	ri $(($1 + 2)) 9,1 WS 8 8
	rc $(($1 + 3)) 9,1 WS 8 8
	ri $(($1 + 4)) 9,1 FF 0 0
	rc $(($1 + 5)) 9,1 FF 18446744073709551615 0
	mk $(($1 + 6)) "checkpoint end"
}
C=253,0 M=9,1 O=9,2

# expect pass|fail NAME WHY [checker options]: the trace in $tmp/trace; a
# failure must print a line matching the regex WHY (pass: "").
expect() {
	local want=$1 name=$2 why=${3:-} rc=0
	shift 3
	"$chk" --chj $C --meta $M --origin $O --metadata "$tmp/meta.img" "$@" "$tmp/trace" \
		>"$tmp/out" 2>&1 || rc=$?
	if { [ "$want" = pass ] && [ $rc = 0 ]; } ||
		{ [ "$want" = fail ] && [ $rc = 1 ] && grep -qE -- "$why" "$tmp/out"; }; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: $name: expected $want, order-check exited $rc:"
		sed 's/^/    /' "$tmp/out"
	fi
}

WT=--meta-write-through
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 23 $O W 0 8; } >"$tmp/trace"
expect pass "write-through: mark durable, then data" "" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; q 23 $O W 0 8; bc 24 $M WFS 16 8; } >"$tmp/trace"
expect fail "data queued before the mark completed" "no durable write of metadata block" $WT
{ ckpt 10; q 20 $C W 0 8; q 23 $O W 0 8; } >"$tmp/trace"
expect fail "no mark at all" "no durable write of metadata block" $WT
{ ckpt 10; q 19 $M WFS 16 8; bc 20 $M WFS 16 8; q 21 $C W 0 8; q 23 $O W 0 8; } >"$tmp/trace"
expect fail "a mark queued before the region's first incoming write" "no durable write of metadata block" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 23 $O W 0 8;
  q 30 $C W 8 8; q 31 $O W 8 8; } >"$tmp/trace"
expect fail "a second region of the same block, no new mark" "no durable write of metadata block" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 23 $O W 0 8;
  q 30 $C W 0 8; q 31 $O W 0 8; } >"$tmp/trace"
expect pass "a later write to a marked region" "" $WT
{ ckpt 1; q 5 $C W 0 8; q 6 $M WFS 16 8; bc 7 $M WFS 16 8; q 8 $O W 0 8; bc 9 $O W 0 8; ckpt 10;
  q 30 $C W 0 8; q 31 $O W 0 8; } >"$tmp/trace"
expect fail "a mark of the previous epoch" "no durable write of metadata block" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 23 $O W 0 8; bc 24 $O W 0 8;
  mk 40 "checkpoint begin"; q 41 $M FWFSM 8 8; bc 42 $M FWFSM 8 8; mk 43 "checkpoint end";
  q 50 $C W 0 8; q 51 $M WFS 16 8; bc 52 $M WFS 16 8; q 53 $O W 0 8; } >"$tmp/trace"
expect pass "marked again in the new epoch" "" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 23 $O W 0 8;
  mk 40 "checkpoint begin"; q 41 $M FWFSM 8 8; bc 42 $M FWFSM 8 8; mk 43 "checkpoint end";
  bc 44 $O W 0 8; } >"$tmp/trace"
expect fail "an origin write in flight when the epoch switch began" "still in flight when the epoch switch" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8;
  mk 40 "checkpoint begin"; q 41 $M FWFSM 8 8; q 42 $O W 0 8; bc 43 $M FWFSM 8 8;
  mk 44 "checkpoint end"; } >"$tmp/trace"
expect fail "an origin write queued during the epoch switch" "is not durable" $WT
{ ckpt 10; q 20 $C W 0 8; mk 30 "checkpoint begin"; q 31 $M FWFSM 8 8; bc 32 $M FWFSM 8 8;
  mk 33 "checkpoint end"; q 40 $M WFS 16 8; bc 41 $M WFS 16 8; q 42 $O W 0 8; bc 43 $O W 0 8;
  q 50 $C W 4 4; q 51 $O W 4 4; } >"$tmp/trace"
expect pass "a write held across a checkpoint, marked in the new epoch, then another" "" $WT
# Write-back metadata (blk-mq: request events only).
{ ckptwb 10; q 20 $C W 0 8; q 21 $M WFS 16 8; ri 22 $M WS 16 8; rc 23 $M WS 16 8;
  ri 24 $M FF 0 0; rc 25 $M FF 18446744073709551615 0; rc 26 $M WS 16 0; q 27 $O W 0 8; } >"$tmp/trace"
expect pass "write-back: data, post-flush, then the origin write" ""
{ ckptwb 10; q 20 $C W 0 8; q 21 $M WFS 16 8; ri 22 $M WS 16 8; rc 23 $M WS 16 8;
  q 27 $O W 0 8; } >"$tmp/trace"
expect fail "write-back: completed but never flushed" "no durable write of metadata block"
{ ckptwb 10; q 20 $C W 0 8; q 21 $M WS 16 8; ri 22 $M FF 0 0; ri 23 $M WS 16 8;
  rc 24 $M WS 16 8; rc 25 $M FF 18446744073709551615 0; q 27 $O W 0 8; } >"$tmp/trace"
expect fail "write-back: the flush was issued before the write completed" "no durable write of metadata block"
{ ckptwb 10; q 20 $C W 0 8; q 21 $M WFS 16 8; ri 22 $M WS 16 8; rc 23 $M WS 16 8;
  ri 24 $M FF 0 0; rc 25 $M FF 18446744073709551615 0 -5; q 27 $O W 0 8; } >"$tmp/trace"
expect fail "write-back: the flush failed" "no durable write of metadata block"
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8 -5; q 23 $O W 0 8; } >"$tmp/trace"
expect fail "the mark write failed" "no durable write of metadata block" $WT
# A completion that shares the origin write's timestamp counts after it.
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 22 $O W 0 8; } >"$tmp/trace"
expect fail "a tie between the mark's completion and the origin write" "no durable write of metadata block" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 23 $O W 0 8; } >"$tmp/trace"
expect fail "--fake-no-marks" "no durable write of metadata block" $WT --fake-no-marks
{ ckpt 10; mk 15 "premark begin"; q 16 $M WFS 16 8; bc 17 $M WFS 16 8; mk 18 "premark end";
  q 20 $C W 0 8; q 23 $O W 0 8; } >"$tmp/trace"
expect pass "mark_all inside a premark window" "" $WT
{ q 20 $C W 0 8; q 23 $O W 0 8; } >"$tmp/trace"
expect fail "nothing to check: no checkpoint" "nothing to check" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 16 8; bc 22 $M WFS 16 8; q 19 $O W 0 8; } >"$tmp/trace"
expect fail "timestamps out of order" "not in one total order" $WT
# Format 2 (chj format writes it): a superblock write (sector 0 or 8) is a
# chunk mark, and a flushed one outside a checkpoint may retire marks.
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8; q 23 $O W 0 8; } >"$tmp/trace"
expect pass "format 2: chunk mark durable, then data" "" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; q 23 $O W 0 8; bc 24 $M WFS 0 8; } >"$tmp/trace"
expect fail "format 2: data queued before the chunk mark completed" "no durable write of metadata block" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8; q 23 $O W 0 8;
  q 30 $M WS 16 8; bc 31 $M WS 16 8; q 32 $M FWFSM 8 8; bc 33 $M FWFSM 8 8; } >"$tmp/trace"
expect pass "format 2: exact bits written, then the mark retired" "" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8; q 23 $O W 0 8;
  q 32 $M FWFSM 8 8; bc 33 $M FWFSM 8 8; } >"$tmp/trace"
expect fail "format 2: a mark retired before the exact bits were written" "may retire the chunk" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8; q 23 $O W 0 8;
  q 30 $M WS 16 8; q 32 $M FWFSM 8 8; bc 33 $M FWFSM 8 8; bc 34 $M WS 16 8; } >"$tmp/trace"
expect fail "format 2: retired while the exact bits' write was in flight" "may retire the chunk" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8;
  q 24 $M WS 16 8; q 25 $O W 0 8; bc 26 $M WS 16 8; q 32 $M FWFSM 8 8; bc 33 $M FWFSM 8 8; } >"$tmp/trace"
expect pass "format 2: a write during the retire pass is not the pass's" "" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8; q 23 $O W 0 8;
  q 30 $C W 8 8; q 31 $O W 8 8; } >"$tmp/trace"
expect pass "format 2: one chunk mark covers the chunk's other regions" "" $WT
{ ckpt 10; q 20 $C W 0 8; q 21 $M WFS 0 8; bc 22 $M WFS 0 8; q 23 $O W 0 8;
  q 30 $M WS 16 8; bc 31 $M WS 16 8; q 32 $M FWFSM 8 8; bc 33 $M FWFSM 8 8;
  q 40 $M FWFSM 0 8; bc 41 $M FWFSM 0 8; q 45 $M FWFSM 8 8; bc 46 $M FWFSM 8 8;
  q 50 $C W 8 8; q 51 $O W 8 8; } >"$tmp/trace"
expect fail "format 2: a chunk idle over three retires is written without a new mark" "no durable write of metadata block" $WT
{ ckpt 10; mk 40 "checkpoint begin"; q 41 $C W 0 8; q 42 $M FWFSM 8 8; bc 43 $M FWFSM 8 8;
  mk 44 "checkpoint end"; q 45 $M WFS 0 8; bc 46 $M WFS 0 8; q 47 $C W 8 8; q 48 $O W 0 8;
  q 49 $O W 8 8; } >"$tmp/trace"
expect pass "format 2: a write held over the switch, marked after it, covers a later one" "" $WT
# The exact-bit rule: a region's write may pass on its bitmap block, written
# after the region's first incoming write and flushed after (dm-chj's
# cleaner: plain writes, then one flush), with no chunk mark.
{ ckptwb 10; q 20 $C W 0 8; q 21 $M WS 16 8; ri 22 $M WS 16 8; rc 23 $M WS 16 8;
  q 24 $M FWS 0 0; ri 25 $M FF 0 0; rc 26 $M FF 18446744073709551615 0; q 27 $O W 0 8; } >"$tmp/trace"
expect pass "format 2: exact bits written, then flushed: no chunk mark needed" ""
{ ckptwb 10; q 20 $C W 0 8; q 21 $M WS 16 8; ri 22 $M WS 16 8; q 24 $M FWS 0 0; ri 25 $M FF 0 0;
  rc 26 $M FF 18446744073709551615 0; rc 27 $M WS 16 8; q 28 $O W 0 8; } >"$tmp/trace"
expect fail "format 2: exact bits flushed by a flush issued before their write completed" "no durable write of metadata block"
# --log: the superblock writes' contents (tests/order/mklog.py writes the
# log: sb:SEQ:EPOCH:CHUNKS; chj format leaves seq 1 of epoch 1 in force,
# logged before the mark, so seq 2 goes to block 0).  The trace's
# checkpoint writes seq 2, epoch 2; a PREFLUSH reaches dm-log-writes as an
# empty flush before the data.
lg() { python3 "$here/mklog.py" "$tmp/meta.img" "$tmp/log" sb:1:1:-:fua mark:order-start "$@"; }
LOG="--log $tmp/log"
ck2() { mk 10 "checkpoint begin"; q 11 $M FWFSM 0 8; bc 12 $M FWFSM 0 8; mk 13 "checkpoint end"; }
{ ck2; q 20 $C W 0 8; q 21 $M WFS 8 8; bc 22 $M WFS 8 8; q 23 $O W 0 8; } >"$tmp/trace"
lg flush sb:2:2:-:fua sb:3:2:0:fua
expect pass "contents: the chunk's mark durable, then data" "" $WT $LOG
lg flush sb:2:2:-:fua sb:3:2:1:fua
expect fail "contents: the superblock written for the write marks another chunk" "does not mark chunk 0" $WT $LOG
expect pass "the same without contents (the old rule cannot tell)" "" $WT
lg flush sb:2:2:-:fua sb:5:2:0:fua
expect fail "contents: a log that does not follow the trace" "not aligned" $WT $LOG
lg flush sb:2:2:-:fua
expect fail "contents: a log with fewer superblock writes than the trace" "the log has only 0" $WT $LOG
{ ck2; q 20 $C W 0 8; q 23 $O W 0 8; } >"$tmp/trace"
lg flush sb:2:2:0:fua
expect pass "contents: a chunk carried by the checkpoint's superblock" "" $WT $LOG
expect fail "the same without contents (the old rule refuses a carried mark)" "no durable write of metadata block" $WT
{ ck2; q 20 $M FWFSM 8 8; q 21 $C W 0 8; q 23 $O W 0 8; bc 30 $M FWFSM 8 8; } >"$tmp/trace"
lg flush sb:2:2:0:fua flush sb:3:2:-:fua
expect fail "contents: a superblock in flight unmarks the chunk" "does not mark chunk 0" $WT $LOG
{ ck2; q 20 $C W 0 8; q 21 $M WFS 8 8; bc 22 $M WFS 8 8; q 23 $O W 0 8; bc 24 $O W 0 8;
  q 30 $M FWFSM 0 8; bc 31 $M FWFSM 0 8; } >"$tmp/trace"
lg flush sb:2:2:-:fua sb:3:2:0:fua flush sb:4:2:-:fua
expect fail "contents: a chunk retired before its exact bits were written" "retires chunk 0" $WT $LOG
{ ck2; q 20 $C W 0 8; q 21 $M WFS 8 8; bc 22 $M WFS 8 8; q 23 $O W 0 8; bc 24 $O W 0 8;
  q 26 $M WS 16 8; bc 27 $M WS 16 8; q 30 $M FWFSM 0 8; bc 31 $M FWFSM 0 8; } >"$tmp/trace"
expect pass "contents: exact bits written, then the chunk retired" "" $WT $LOG
lg flush sb:2:2:-:fua sb:3:2:0:fua flush sb:4:2:0:fua
{ ck2; q 20 $C W 0 8; q 21 $M WFS 8 8; bc 22 $M WFS 8 8; q 23 $O W 0 8; bc 24 $O W 0 8;
  q 30 $M FWFSM 0 8; bc 31 $M FWFSM 0 8; } >"$tmp/trace"
expect pass "contents: a flushed superblock that keeps the chunk retires nothing" "" $WT $LOG
{ mk 10 "checkpoint begin"; q 11 $M FWFSM 0 8; bc 12 $M FWFSM 0 8; q 14 $C W 0 8; q 15 $O W 0 8;
  q 16 $M FWFSM 8 8; bc 17 $M FWFSM 8 8; mk 18 "checkpoint end"; bc 19 $O W 0 8; } >"$tmp/trace"
lg flush sb:2:2:0:fua flush sb:3:2:0:fua
expect pass "contents: the switch is the superblock that begins the epoch, not a later flushed one" "" $WT $LOG
{ ck2; q 30 $M FWFSM 8 8; bc 31 $M FWFSM 8 8; } >"$tmp/trace"
lg flush sb:2:2:-:fua flush sb:3:3:-:fua
expect fail "contents: an epoch begun outside a checkpoint window" "not once in a checkpoint window" $WT $LOG
head -c 4096 /dev/zero >"$tmp/log"
expect fail "contents: not a dm-log-writes log" "not a dm-log-writes log" $WT $LOG

# Numbers are whole numbers (libchj's chj_parse_u64): a usage error (2), not 5.
for bad in 5x "" -1 99999999999; do
	rc=0
	"$chk" --chj $C --meta $M --origin $O --metadata "$tmp/meta.img" --mark-ahead "$bad" \
		"$tmp/trace" >"$tmp/out" 2>&1 || rc=$?
	if [ $rc = 2 ] && grep -q '^usage: order-check' "$tmp/out"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: --mark-ahead '$bad': expected a usage error (2), order-check exited $rc"
	fi
done
echo "order-check self-test: $passed passed, $failed failed"
[ $failed = 0 ]
