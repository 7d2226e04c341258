#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The ext4 journal's tail moving between the change map and the journal
# walk (userspace/resolve/jbd2.c, head comment).  On a loop device (no
# dm-chj: the map is the difference between images, as in host-check.sh):
#   map       image c0 (frozen: an empty journal); t/f chmod'ed and
#             fsync'ed: its transaction committed to the journal, its inode
#             block not yet home; image c1, the map c0 -> c1, and the
#             journal superblock's tail in c1 (CHJ_RESOLVE_LOG_AT_MAP,
#             "SEQUENCE:START": where the tail was when the map was read).
#             The precondition, checked: t/f's inode block is the same in
#             c0 and c1 (else the chmod is tried again).
#   moved     fsfreeze: the kernel writes the inode block home (after the
#             map: in no mark) and empties the journal (s_start 0).  The
#             resolve must list t/f (the walk from c1's tail finds the
#             transaction).  The control, without the tail at the map (the
#             resolver notes the journal as it is now, as chj-resolve did
#             at its walk before): t/f missing, exit 0: the gap.
#   lapped    metadata traffic until the journal went round over c1's
#             tail (its block holds another sequence): the transaction is
#             gone; the resolve must exit 3 naming the journal.  Control as
#             above: exit 0, t/f missing.
# Run by host-check.sh ext4.  tests/resolve/jbd2-tail.sh (root, loop
# devices; KEEP=1 keeps files).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/resolve/scratch.sh
. "$here/scratch.sh" jbd2-tail

truncate -s 128M "$img"
loop=$(losetup -f --show "$img")
# 4 MiB, the smallest journal: it goes round in a few rounds of traffic.
mkfs.ext4 -q -b 4096 -J size=4 "$loop"
mkdir -p "$mnt"
mount -o noatime "$loop" "$mnt"
mkdir "$mnt/t" "$mnt/churn"
# The traffic's files first, then 16 others, then t/f: no inode block of
# the traffic's holds t/f (its transactions would name t/f's block).
"$here/log-churn.sh" "$mnt/churn"
for i in $(seq 16); do : >"$mnt/t/pad$i"; done
echo f >"$mnt/t/f"
export CHJ_RESOLVE_CACHE=off

# image NAME [freeze]: a copy of the device (frozen: consistent, the
# journal emptied; else as the kernel left it this moment).
image() {
	[ -z "${2:-}" ] || fsfreeze -f "$mnt"
	cp --sparse=always "$img" "$work/$1.img"
	[ -z "${2:-}" ] || fsfreeze -u "$mnt"
}

# block_of IMAGE BLOCK: 4 KiB block BLOCK of IMAGE, as hex.
block_of() {
	dd if="$1" bs=4096 skip="$2" count=1 status=none | od -An -tx1 -v | tr -d ' \n'
}

sync -f "$mnt"
image c0 freeze
ino=$(stat -c %i "$mnt/t/f")
iblk=$(debugfs -R "imap <$ino>" "$loop" 2>/dev/null | sed -n 's/.*located at block \([0-9]*\),.*/\1/p')
[ -n "$iblk" ] || fail "no inode block for t/f"
for ((try = 1; ; try++)); do
	chmod "0$((600 + try % 70))" "$mnt/t/f"
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$mnt/t/f"
	image c1
	[ "$(block_of "$work/c0.img" "$iblk")" = "$(block_of "$work/c1.img" "$iblk")" ] && break
	# Written home already (a writeback, a global sync beside): again.
	[ $try -lt 10 ] || fail "t/f's inode block went home before each image ($try tries)"
	image c0 freeze
done
python3 "$TRUTH" diffimg "$work/c0.img" "$work/c1.img" 4096 >"$work/changes"
read -r seq start < <(dumpe2fs -h "$work/c1.img" 2>/dev/null |
	awk '/^Journal sequence:/ { q = $3 } /^Journal start:/ { s = $3 } END { print q, s }')
at=$((seq)):$start
[ "$start" != 0 ] || fail "the journal of c1 is empty: no transaction to lose"
echo "map: c0 -> c1 ($(wc -l <"$work/changes") ranges), journal tail at the map $at, t/f inode $ino in block $iblk (try $try)"

# resolve NAME WANT [VAR=VALUE...]: the map c0 -> c1, exit WANT; got=
# listed or missing, for t/f.
resolve() {
	local n=$1 want=$2 rc=0
	shift 2
	env "$@" CHJ_RESOLVE_CHANGES="$work/changes" "$RESOLVE" --stats -0 "$loop" \
		>"$work/$n.out0" 2>"$work/$n.err" || rc=$?
	grep -E '^(journal|chj-resolve)' "$work/$n.err" | sed "s/^/$n: /" || true
	[ $rc = "$want" ] || { cat "$work/$n.err"; fail "$n: exit $rc, not $want"; }
	got=missing
	tr '\0' '\n' <"$work/$n.out0" | grep -qx "$mnt/t/f" && got=listed
	return 0
}

echo "--- moved: the journal checkpointed and emptied after the map"
fsfreeze -f "$mnt"
fsfreeze -u "$mnt"
[ "$(block_of "$img" "$iblk")" != "$(block_of "$work/c1.img" "$iblk")" ] ||
	fail "moved: the freeze did not write t/f's inode block home"
resolve moved 0 CHJ_RESOLVE_LOG_AT_MAP="$at"
[ $got = listed ] || fail "moved: t/f missing"
grep -q "^journal: it moved since the change map was read" "$work/moved.err" ||
	fail "moved: the resolver did not say the journal moved"
resolve moved-control 0
[ $got = missing ] ||
	fail "moved-control: t/f listed without the tail at the map: the test does not test the gap"
echo "moved: t/f listed from the tail at the map; without it missing (the control)"

echo "--- lapped: the journal went round over the map's tail"
pblk=$(debugfs -R "bmap <8> $start" "$loop" 2>/dev/null)
want=$(printf '%08x' "$((seq))")
for ((k = 0; ; k++)); do
	hdr=$(dd if="$loop" bs=4096 skip="$pblk" count=1 iflag=direct status=none | od -An -tx1 -v -N12 | tr -d ' \n')
	if [ "${hdr:0:8}" != c03b3998 ] || [ "${hdr:16:8}" != "$want" ]; then break; fi
	[ $k -lt 100 ] || fail "lapped: the journal did not go round in $k rounds"
	"$here/log-churn.sh" "$mnt/churn"
done
echo "lapped: journal block $start (device block $pblk) reused after $k rounds (now ${hdr:16:8}, was $want)"
resolve lapped 3 CHJ_RESOLVE_LOG_AT_MAP="$at"
grep -q "full scan needed: the ext4 journal went round" "$work/lapped.err" ||
	fail "lapped: exit 3 without naming the journal gone round"
resolve lapped-control 0
[ $got = missing ] ||
	fail "lapped-control: t/f listed without the tail at the map"
echo "PASS jbd2-tail"
