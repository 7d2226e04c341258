#!/bin/bash
# The README's "Quick start", word for word: its ```sh lines are read from
# README.md now and run in order, with only the substitutions in the table
# below; each line's claim is checked (the device exists, the checkpoint
# prints the epoch the README says, chj changes covers the blocks written
# after it and not the ones left alone, chj-resolve lists the files changed
# after it).  A README line this test has no rule for fails it, so the
# README cannot drift from what the tools do.
# vm-disks: 32M 600M
# vm-timeout: 120
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
export PATH=$CHJ_ROOT/userspace:$PATH
README=$CHJ_ROOT/README.md

# ---- What differs from the README in the VM: nothing else. ----
# Device names: README name -> VM disk (600M: mkfs.ext4 picks 4 KiB blocks
# from 512 MiB up, as it would on a real disk).
RENAME=(/dev/vg/data-meta /dev/vda /dev/sdb /dev/vdb)
# Lines not run, and what is checked instead: the harness built this tree
# on the host and loaded its dm-chj.ko; the tools run from the tree.
declare -A INSTEAD=(
	['make && sudo make install']='check_built'
	['sudo depmod && sudo modprobe dm-chj']='check_loaded'
)
# sudo: the guest runs as root (and sudo's secure_path would hide the tree).
sudo() { "$@"; }
export -f sudo
# ----

check_built() {
	local f
	for f in userspace/chj userspace/chj-resolve dm-target/dm-chj.ko; do
		[ -s "$CHJ_ROOT/$f" ] || fail "$f not built"
	done
}
check_loaded() { [ -d /sys/module/dm_chj ] || fail "dm-chj is not loaded"; }

# The README's quick-start lines: the ```sh blocks between its heading and
# the next "## ".  Any other fence there is an error (its lines would be
# skipped silently).
extract() {
	awk '
		/^## / { q = /^## Quick start/ }
		!q { next }
		/^```/ {
			if (!f && $0 != "```sh") { print "unexpected fence: " $0 > "/dev/stderr"; exit 1 }
			f = !f; n++; next
		}
		f && NF { print }
		END { if (f) { print "unclosed fence" > "/dev/stderr"; exit 1 } if (!n) exit 1 }
	' "$README"
}

OUT=$CHJ_OUT/step.out ERR=$CHJ_OUT/step.err
# run CMD: run a README command as written, show its output, fail on error.
run() {
	local rc=0
	bash -eo pipefail -c "$1" >"$OUT" 2>"$ERR" || rc=$?
	sed 's/^/  /' "$OUT" "$ERR"
	[ $rc = 0 ] || fail "README quick start: '$1' exited $rc"
}

# devno DEV: its device number as MAJOR:MINOR, as dmsetup table prints it.
devno() {
	local t
	t=$(stat -Lc '%t %T' "$1")
	echo "$((16#${t% *})):$((16#${t#* }))"
}

# coverage RANGES FILE...: "STATUS FILE" per file: whether its blocks lie in
# the ranges (chj changes output): all 0, some 1, none 2 -- in one filefrag
# and one awk (under TCG a process per file costs ~0.1 s).
coverage() {
	local ranges=$1
	shift
	filefrag -b512 -v "$@" | awk -v ranges="$ranges" '
		BEGIN { while ((getline l < ranges) > 0) { split(l, r); s[++n] = r[1]; e[n] = r[1] + r[2] - 1 } }
		function done() { if (f != "") print (ext && all == ext ? 0 : any ? 1 : 2), f }
		/^File size of / { done(); f = $0; sub(/^File size of /, "", f); sub(/ is [0-9]+ .*$/, "", f); ext = all = any = 0; next }
		match($0, /^ *[0-9]+: +[0-9]+\.\. *[0-9]+: +[0-9]+\.\. *[0-9]+:/) {
			m = substr($0, RSTART, RLENGTH); sub(/^ +/, "", m)
			split(m, x, /[:. ]+/) # ext, logical start, end, physical start, end
			a = x[4]; b = x[5]; ext++; in_one = 0
			for (i = 1; i <= n; i++) {
				if (a >= s[i] && b <= e[i]) in_one = 1
				if (a <= e[i] && b >= s[i]) touch = 1
			}
			all += in_one; any += touch; touch = 0
		}
		END { done() }'
}

NAME='' MNT='' EPOCH='' CLAIMED=''
done_steps=()
line_no=0
lines=$(extract) || fail "no \`\`\`sh block under '## Quick start' in README.md (or a bad fence)"
while IFS= read -r line; do
	line_no=$((line_no + 1))
	# The command without its trailing comment; the comment, which may
	# make a claim ("prints 2").
	as_written=$line comment=''
	if [[ $line =~ ^([^#]*[[:space:]])?#[[:space:]]*(.*)$ ]]; then
		as_written=${BASH_REMATCH[1]} comment=${BASH_REMATCH[2]}
	fi
	as_written=${as_written%"${as_written##*[![:space:]]}"}
	cmd=$as_written
	for ((i = 0; i < ${#RENAME[@]}; i += 2)); do
		cmd=${cmd//"${RENAME[i]}"/"${RENAME[i + 1]}"}
	done
	printf '\n$ %s\n' "$line"
	if [ -n "$cmd" ] && [ -n "${INSTEAD[$cmd]+x}" ]; then
		echo "  (in the VM: ${INSTEAD[$cmd]})"
		"${INSTEAD[$cmd]}"
		done_steps+=("${INSTEAD[$cmd]}")
		continue
	fi
	[ "$cmd" = "$as_written" ] || echo "  (in the VM: $cmd)"
	case $cmd in
	'sudo chj metadata-size --origin-size '*)
		run "$cmd"
		grep -Eq '^metadata size +[0-9.]+ [KMGT]iB \([0-9]+ bytes\)$' "$OUT" ||
			fail "metadata-size: no 'metadata size N MiB (B bytes)' line"
		done_steps+=(metadata-size)
		;;
	'sudo chj create '*)
		read -r _ _ _ NAME meta origin _ <<<"$cmd"
		run "$cmd"
		[ -b "/dev/mapper/$NAME" ] || fail "chj create did not make /dev/mapper/$NAME"
		[[ $comment != *"creates /dev/mapper/"* ]] || [[ $comment == *"/dev/mapper/$NAME"* ]] ||
			fail "the comment names another device than /dev/mapper/$NAME"
		assert_eq "chj $(devno "$meta") $(devno "$origin")" \
			"$(dmsetup table "$NAME" | awk '{ print $3, $4, $5 }')" \
			"dm table of $NAME (type, metadata, origin)"
		chj dump "$meta" >/dev/null || fail "the metadata device was not formatted"
		CLAIMED=$origin
		done_steps+=(create)
		;;
	'sudo mkfs.ext4 '*' /dev/mapper/'*)
		run "$cmd"
		assert_eq ext4 "$(blkid -o value -s TYPE "${cmd##* }")" "file system type"
		# "never mkfs or mount /dev/sdb itself": the README says the origin
		# is claimed while tracked, so a direct mount is refused.
		mkdir -p /tmp/direct
		if mount -o ro,noload "$CLAIMED" /tmp/direct 2>/dev/null; then
			fail "the origin $CLAIMED could be mounted behind the tracker"
		fi
		done_steps+=(mkfs)
		;;
	'sudo mount '*' /dev/mapper/'*' '*)
		MNT=${cmd##* }
		run "$cmd"
		mounted=$(findmnt -n -o SOURCE,OPTIONS --mountpoint "$MNT") || fail "nothing mounted at $MNT"
		read -r src opts <<<"$mounted"
		assert_eq "/dev/mapper/$NAME" "$src" "mounted device"
		[[ ,$opts, == *,noatime,* ]] || fail "mounted without noatime, which the README recommends"
		chj status "$NAME" >/dev/null 2>"$ERR"
		[ ! -s "$ERR" ] || { cat "$ERR"; fail "chj status warns with nothing bypassing the tracker"; }
		# Not in the README: content from before the checkpoint, some to
		# change after it and some to leave alone.
		mkdir "$MNT/keep"
		head -c $((64 * 8192)) /dev/urandom | split -b 8192 -a 2 - "$MNT/keep/f"
		head -c 16384 /dev/urandom >"$MNT/notes.txt"
		sync
		echo "  (test: 64 files in $MNT/keep and $MNT/notes.txt written and synced)"
		done_steps+=(mount)
		;;
	'sudo chj checkpoint '*)
		run "$cmd"
		EPOCH=$(cat "$OUT")
		[[ $EPOCH =~ ^[0-9]+$ ]] || fail "chj checkpoint printed '$EPOCH', not an epoch number"
		if [[ $comment =~ prints\ ([0-9]+) ]]; then
			assert_eq "${BASH_REMATCH[1]}" "$EPOCH" "epoch printed (the README says)"
		fi
		done_steps+=(checkpoint)
		;;
	'')
		[ "$comment" = '... work ...' ] || fail "README quick start line $line_no: unknown comment line: $line"
		[ -n "$MNT" ] || fail "README quick start: work before mount"
		echo "  (test: overwrite 4 KiB of $MNT/notes.txt in place, write $MNT/new.bin, sync)"
		head -c 4096 /dev/urandom | dd of="$MNT/notes.txt" bs=4096 seek=1 conv=notrunc status=none
		head -c 65536 /dev/urandom >"$MNT/new.bin"
		sync
		done_steps+=(work)
		;;
	'sudo chj changes --since '*)
		read -r _ _ _ _ since _ <<<"$cmd"
		assert_eq "$EPOCH" "$since" "--since (the epoch the checkpoint printed)"
		run "$cmd"
		grep -Evq '^[0-9]+ [0-9]+$' "$OUT" && fail "chj changes printed a line that is not START LENGTH"
		[ -s "$OUT" ] || fail "chj changes printed nothing after the work"
		cp "$OUT" /tmp/ranges
		coverage /tmp/ranges "$MNT/new.bin" "$MNT/notes.txt" "$MNT"/keep/* >/tmp/coverage
		assert_eq 64 "$(grep -c "$MNT/keep/" /tmp/coverage)" "keep/ files checked"
		# Only one block of notes.txt was overwritten: some (1) of its
		# extent, or all (0) if it shares the region.
		grep -qxF "0 $MNT/new.bin" /tmp/coverage || fail "new.bin's blocks are not all in the ranges"
		grep -qE "^[01] $MNT/notes.txt\$" /tmp/coverage || fail "notes.txt's overwritten block is not in the ranges"
		if grep -E "^[01] $MNT/keep/" /tmp/coverage; then
			fail "blocks of keep/ files untouched since the checkpoint are in the ranges"
		fi
		echo "  (test: the ranges cover new.bin and notes.txt's new block, none of the 64 keep/ files)"
		done_steps+=(changes)
		;;
	'sudo chj-resolve '*' /dev/mapper/'*)
		[[ $cmd == *"--since $EPOCH "* ]] || fail "chj-resolve: not --since $EPOCH, the epoch the checkpoint printed"
		run "$cmd"
		for p in "$MNT/notes.txt" "$MNT/new.bin" "$MNT"; do
			grep -qxF "$p" "$OUT" || fail "chj-resolve did not list $p"
		done
		kept=$(grep -c "^$MNT/keep/" "$OUT" || true)
		# Inode-table regions list all their inodes (16 per 4 KiB): the two
		# changed inodes may share theirs with untouched files, no more.
		[ "$kept" -le 32 ] || fail "chj-resolve listed $kept of 64 untouched keep/ files"
		echo "  (test: lists notes.txt, new.bin and $MNT; $kept of 64 untouched keep/ files)"
		done_steps+=(resolve)
		;;
	*)
		fail "README quick start line $line_no: no rule for '$cmd' -- update tests/vm/readme-quickstart.sh"
		;;
	esac
done <<<"$lines"

assert_eq "check_built check_loaded metadata-size create mkfs mount checkpoint work changes resolve" \
	"${done_steps[*]}" "quick-start steps, in order"
log "ok: the README quick start ran as written"
