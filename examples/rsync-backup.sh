#!/bin/bash
# Incremental file backup with rsync, copying only what chj-resolve lists.
#
#   rsync-backup.sh NAME DEST
#
# NAME is a chj device (/dev/mapper/NAME, mounted).  DEST mirrors the mount
# point's tree.  DEST.epoch remembers the epoch the mirror is complete up to;
# the first run (or one after the epoch was dropped: chj-resolve exit 3)
# copies everything with plain rsync -aHAX --delete.
#
# Lock-step: checkpoint FIRST, then copy what changed since the previous
# checkpoint.  Anything written during the copy is in the new epoch and is
# copied next time.
#
# chj-resolve lists changed files and every directory whose entries
# changed.  Directories are passed with a trailing slash, so that rsync
# --delete removes entries deleted from them; files are passed as they are,
# and --ignore-times makes rsync copy them even when a change kept the size
# and mtime (which rsync's quick check alone would miss).
#
# -aHAX, not -a alone: -a keeps neither hard links (-H), ACLs (-A) nor
# extended attributes (-X, file capabilities among them), and a backup must.
# chj-resolve lists what each needs: every name of an inode that changed
# (a new hard link gives both names, so rsync -H links them in DEST too) and
# the file whose xattrs or ACL changed (its inode changed).  --numeric-ids:
# the owners as numbers, whatever the backup host's user names.
# Environment: CHJ, CHJ_RESOLVE (tool paths).
set -euo pipefail
CHJ=${CHJ:-chj}
CHJ_RESOLVE=${CHJ_RESOLVE:-chj-resolve}
[ $# -eq 2 ] || { echo "usage: $0 NAME DEST" >&2; exit 2; }
name=$1 dest=$2 state=$2.epoch
mnt=$(findmnt -n -o TARGET --source "/dev/mapper/$name" | head -n 1)
[ -n "$mnt" ] || { echo "rsync-backup: /dev/mapper/$name is not mounted" >&2; exit 1; }
mkdir -p "$dest"

new=$($CHJ checkpoint "$name")
rc=3
if [ -f "$state" ]; then
	list=$(mktemp)
	trap 'rm -f "$list"' EXIT
	rc=0
	"$CHJ_RESOLVE" -0 --since "$(cat "$state")" "/dev/mapper/$name" >"$list" || rc=$?
fi
case $rc in
0)
	# Paths relative to the mount point, directories with a trailing slash
	# (rsync then takes their entries, one level).  A directory the mirror
	# does not have yet (new, renamed, a new btrfs snapshot) is copied
	# whole: chj-resolve lists such a directory but not what it holds
	# unchanged.  So is each subdirectory of a listed directory that the
	# mirror lacks (one renamed into it).
	one=$(mktemp) whole=$(mktemp)
	trap 'rm -f "$list" "$one" "$whole"' EXIT
	shopt -s nullglob dotglob
	while IFS= read -r -d '' p; do
		rel=${p#"$mnt"}
		rel=${rel#/}
		if [ -z "$rel" ]; then rel=.; fi
		if [ ! -d "$p" ] || [ -L "$p" ]; then
			printf '%s\0' "$rel" >>"$one"
			continue
		fi
		printf '%s/\0' "$rel" >>"$one"
		if [ ! -d "$dest/$rel" ]; then
			printf '%s/\0' "$rel" >>"$whole"
			continue
		fi
		for c in "$p"/*/; do
			c=${c%/}
			[ -L "$c" ] || [ -d "$dest/$rel/${c##*/}" ] || printf '%s/\0' "$rel/${c##*/}" >>"$whole"
		done
	done <"$list"
	rsync -aHAX --numeric-ids --delete --ignore-times --from0 --files-from="$one" "$mnt/" "$dest/"
	if [ -s "$whole" ]; then
		rsync -aHAX --numeric-ids --delete -r --from0 --files-from="$whole" "$mnt/" "$dest/"
	fi
	echo "rsync-backup: $(tr -cd '\0' <"$list" | wc -c) paths since epoch $(cat "$state"), $(tr -cd '\0' <"$whole" | wc -c) directories new to the mirror copied whole"
	;;
3)
	echo "rsync-backup: full copy" >&2
	rsync -aHAX --numeric-ids --delete "$mnt/" "$dest/"
	;;
*)
	echo "rsync-backup: chj-resolve failed (exit $rc)" >&2
	exit 1
	;;
esac
echo "$new" >"$state"
