#!/bin/bash
# Incremental image backup of a chj-tracked device, or of one file on it
# (a VM disk image), into a sparse backup file, copying only what changed.
#
#   image-backup.sh NAME BACKUP                 whole device /dev/mapper/NAME
#   image-backup.sh --file PATH NAME BACKUP     one file on NAME's filesystem
#
# BACKUP.epoch records the epoch the backup is complete up to.  The first
# run (or one whose epoch is no longer retained) copies everything.  The
# lock-step is: checkpoint FIRST, then copy what changed since the previous
# checkpoint; writes during the copy belong to the new epoch and are
# picked up next time.  For a consistent image the source must not change
# during the copy: unmount it, fsfreeze it, or back up a snapshot (the
# example's VM test copies an unmounted device, and a file not being
# written).  The result is verified against the source by checksum.
#
# Needs jq for --file.  Environment: CHJ, CHJ_RESOLVE (tool paths).
set -euo pipefail
CHJ=${CHJ:-chj}
CHJ_RESOLVE=${CHJ_RESOLVE:-chj-resolve}

file=""
if [ "${1:-}" = --file ]; then
	file=$2
	shift 2
fi
[ $# -eq 2 ] || { echo "usage: $0 [--file PATH] NAME BACKUP" >&2; exit 2; }
name=$1 backup=$2 state=$2.epoch
src=${file:-/dev/mapper/$name}

# copy_range OFFSET LENGTH (bytes): same offsets in source and backup.  The
# backup's range is punched to a hole first, then dd writes only the blocks
# that are not all zeros (conv=sparse): the backup stays as sparse as the
# source, and zeros in the source (a punched hole, a zeroed range) read as
# zeros in the backup.  conv=sparse alone would skip them and keep the
# backup's old bytes there.  Where the backup's filesystem cannot punch
# holes, every byte is written.
copy_range() {
	local sparse=,sparse
	fallocate --punch-hole --offset "$1" --length "$2" "$backup" 2>/dev/null || sparse=
	dd if="$src" of="$backup" bs=1M iflag=skip_bytes,count_bytes \
		oflag=seek_bytes conv=notrunc$sparse skip="$1" seek="$1" count="$2" status=none
}

size=$(if [ -n "$file" ]; then stat -c %s "$src"; else blockdev --getsize64 "$src"; fi)
new=$($CHJ checkpoint "$name")
full=1
if [ -f "$state" ] && [ -f "$backup" ]; then
	prev=$(cat "$state")
	ranges=$(mktemp)
	trap 'rm -f "$ranges"' EXIT
	rc=0
	if [ -n "$file" ]; then
		# JSON Lines: keep this file's "ranges": [{"start", "length"}], in
		# the record's "unit" (bytes; docs/json.md).
		"$CHJ_RESOLVE" --since "$prev" --json "/dev/mapper/$name" >"$ranges.json" || rc=$?
		if [ $rc -eq 0 ]; then
			jq -r --arg f "$file" 'select(.path == $f) |
				if .ranges and .unit != "bytes" then error("ranges not in bytes")
				else .ranges[]? | "\(.start) \(.length)" end' "$ranges.json" >"$ranges"
		fi
		rm -f "$ranges.json"
	else
		"$CHJ" changes --bytes --since "$prev" "$name" >"$ranges" || rc=$?
	fi
	case $rc in
	0) full=0 ;;
	*) echo "image-backup: incremental impossible (exit $rc): full copy" >&2 ;;
	esac
fi

if [ $full = 1 ]; then
	rm -f "$backup"
	: >"$backup"
	copy_range 0 "$size"
	echo "image-backup: full copy of $size bytes"
else
	truncate -s "$size" "$backup"
	n=0 bytes=0
	while read -r off len; do
		[ "$off" -lt "$size" ] || continue
		[ $((off + len)) -le "$size" ] || len=$((size - off))
		copy_range "$off" "$len"
		n=$((n + 1)) bytes=$((bytes + len))
	done <"$ranges"
	echo "image-backup: $n ranges, $bytes bytes copied since epoch $prev"
fi
truncate -s "$size" "$backup"

# Verify: the backup must equal the source, byte for byte.  Only a verified
# backup records its epoch: after a failure the next run copies everything.
if [ "$(sha256sum <"$src")" != "$(sha256sum <"$backup")" ]; then
	rm -f "$state"
	echo "image-backup: verification FAILED: backup differs from $src" >&2
	exit 1
fi
echo "$new" >"$state"
echo "image-backup: verified, backup complete up to epoch $new"
