#!/bin/bash
# Metadata traffic that moves a filesystem's log, and where the log is:
# the live-log tests of chj-resolve (issue 14), on the host
# (host-check.sh) and over dm-chj in the VM (tests/vm/lib/resolve.sh).
#
#   log-churn.sh DIR            one round: 2000 files in DIR touched
#                               (created the first time), then sync
#   log-churn.sh --until FILE DIR
#                               rounds until FILE exists, "round" on stdout
#                               after each: a reader can wait for rounds
#   log-churn.sh DIR DEV FS N   rounds until the log of DEV moved, at most
#                               N: exit 0 and "race: the log moved after K
#                               rounds" on stderr, or exit 1 ("did not")
#   log-churn.sh --state DEV FS where the log is: "START SEQUENCE" of the
#                               jbd2 superblock (ext4: it moves when a
#                               checkpoint took the tail), "CYCLE BLOCK" of
#                               the XFS log head (/sys/fs/xfs)
#   log-churn.sh --lsns DEV     the XFS log's head and tail LSNs, "C:B C:B"
#                               (chj-resolve-test's CHJ_RESOLVE_LOG_AT_MAP)
#   log-churn.sh --wraps FS A B how many times the log wrapped from state A
#                               to a later state B (ext4: the tail went
#                               down but not to 0, the empty journal: once
#                               at most; XFS: the head's cycles)
# FS: ext4, or xfs (any XFS).  chj-resolve-test runs the second form as
# CHJ_RESOLVE_LOG_RACE, between its read of the log and its re-read.
set -euo pipefail

# xfs_sys DEV: /sys/fs/xfs/NAME/log of DEV (loop0, dm-2: the kernel's name,
# from /sys/dev/block/MAJ:MIN).
xfs_sys() {
	local t
	t=$(stat -Lc '%t %T' "$1")
	t=$(printf '%d:%d' "0x${t% *}" "0x${t#* }")
	echo "/sys/fs/xfs/$(basename "$(readlink -f "/sys/dev/block/$t")")/log"
}

state() { # state DEV FS
	case $2 in
	ext4) dumpe2fs -h "$1" 2>/dev/null |
		awk '/^Journal start:/ { s = $3 } /^Journal sequence:/ { q = $3 } END { print s, q }' ;;
	xfs*) tr ':' ' ' <"$(xfs_sys "$1")/log_head_lsn" ;;
	*) echo "log-churn: no log state for $2" >&2; exit 2 ;;
	esac
}

round() { # round DIR
	(cd "$1" && seq -f c%g 2000 | xargs touch)
	sync -f "$1"	# this filesystem's log, not every one on the machine
}

if [ "${1:-}" = --state ]; then
	state "$2" "$3"
	exit 0
fi
if [ "${1:-}" = --lsns ]; then
	echo "$(cat "$(xfs_sys "$2")/log_head_lsn") $(cat "$(xfs_sys "$2")/log_tail_lsn")"
	exit 0
fi
if [ "${1:-}" = --until ]; then
	while [ ! -e "$2" ]; do
		round "$3"
		echo round
	done
	exit 0
fi
if [ "${1:-}" = --wraps ]; then
	case $2 in
	# A start of 0 is an empty journal (after a freeze), not a wrap.
	ext4) if [ "${4% *}" -gt 0 ] && [ "${4% *}" -lt "${3% *}" ]; then echo 1; else echo 0; fi ;;
	*) echo $((${4% *} - ${3% *})) ;;
	esac
	exit 0
fi
case $# in
1) round "$1" ;;
4)
	s0=$(state "$2" "$3")
	for ((i = 1; i <= $4; i++)); do
		round "$1"
		s=$(state "$2" "$3")
		if [ "$s" != "$s0" ]; then
			echo "race: the log moved after $i rounds ($s0 -> $s)" >&2
			exit 0
		fi
	done
	echo "race: the log did not move in $4 rounds" >&2
	exit 1 ;;
*) echo "usage: $0 DIR [DEV FS ROUNDS] | --until FILE DIR | --state DEV FS | --lsns DEV | --wraps FS A B" >&2; exit 2 ;;
esac
