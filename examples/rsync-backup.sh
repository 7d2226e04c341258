#!/bin/bash
# Incremental file backup with rsync, copying only what chj-resolve lists.
#
#   rsync-backup.sh NAME DEST
#
# NAME is a chj device (/dev/mapper/NAME, mounted).  DEST mirrors the mount
# point's tree.  DEST.epoch remembers the epoch the mirror is complete up to;
# the first run (or one after the epoch was dropped: chj-resolve exit 3)
# copies everything with plain rsync -aHAXS --delete.
#
# Lock-step: checkpoint FIRST, then copy what changed since the previous
# checkpoint.  Anything written during the copy is in the new epoch and is
# copied next time.
#
# chj-resolve lists changed files and every directory whose entries
# changed.  Three rsync passes, in this order:
#  1. the listed directories, with a trailing slash (rsync takes their
#     entries, one level) and --delete, so that entries deleted from them go
#     from DEST too; rsync's quick check decides which entries to copy;
#  2. the directories DEST lacks (new, renamed, a new btrfs snapshot), -r;
#  3. the listed files, with --ignore-times, which copies them even when a
#     change kept the size and mtime (which the quick check alone misses),
#     and the listed directories themselves (their times, after pass 3
#     replaced files in them).
# Not --ignore-times on a directory's entries: rsync would copy every entry
# again into a new inode, and an unchanged entry linked to a name outside
# the transfer (a hard link in another directory) would lose that link in
# DEST.  A listed directory may be a false positive; a false positive must
# cost time only, never the backup's link structure.  Pass 3 comes last so
# that every name of a changed inode is linked again (-H) whatever the
# passes before it did.  Files with several links inside a directory copied
# whole are copied again in pass 3 with all their names (found by one walk
# of their filesystem or btrfs subvolume), so -H links them there too.
#
# -aHAX, not -a alone: -a keeps neither hard links (-H), ACLs (-A) nor
# extended attributes (-X, file capabilities among them), and a backup must.
# chj-resolve lists what each needs: every name of an inode that changed
# (a new hard link gives both names, so rsync -H links them in DEST too) and
# the file whose xattrs or ACL changed (its inode changed).  -S (--sparse):
# runs of zeros become holes in DEST, so a sparse file (a VM image) stays
# sparse there instead of allocating its whole size.  --numeric-ids: the
# owners as numbers, whatever the backup host's user names.  Every pass
# copies with the same options (RSYNC).  --open-noatime (rsync 3.2.3 on;
# root, for other users' files): the backup's reads leave the source's
# atimes alone, since on a filesystem mounted relatime (the default) the
# first read of a file changed since its last read rewrites its inode,
# a change that the next incremental would list (measured on XFS after
# PostgreSQL: 636 paths listed for 71 changed; 86 for 72 when every read
# kept the atimes).
# Environment: CHJ, CHJ_RESOLVE (tool paths).
set -euo pipefail
RSYNC=(rsync -aHAXS --numeric-ids)
if rsync --open-noatime --version >/dev/null 2>&1; then RSYNC+=(--open-noatime); fi
CHJ=${CHJ:-chj}
CHJ_RESOLVE=${CHJ_RESOLVE:-chj-resolve}
[ $# -eq 2 ] || { echo "usage: $0 NAME DEST" >&2; exit 2; }
name=$1 dest=$2 state=$2.epoch
mnt=$(findmnt -n -o TARGET --source "/dev/mapper/$name" | head -n 1)
[ -n "$mnt" ] || { echo "rsync-backup: /dev/mapper/$name is not mounted" >&2; exit 1; }
mkdir -p "$dest"

# links_of_whole LIST: every name, relative to $mnt and NUL-terminated, of
# each file with more than one link inside the directories of LIST (copied
# whole, -r): that pass links only names inside it, so pass 3 copies all
# the names again and -H links them.  A file's links all lie in its
# filesystem or btrfs subvolume: the top of the path whose directories have
# the file's device number; one walk of each such top.
links_of_whole() {
	local d top up key n root=${mnt%/}
	declare -A want=() tops=()
	while IFS= read -r -d '' d; do
		n=0
		while IFS= read -r -d '' key; do
			want[$key]=1 n=$((n + 1))
		done < <(find "$root/$d" -xdev -type f -links +1 -printf '%D:%i\0')
		[ $n -gt 0 ] || continue
		top=$root/${d%/}
		top=${top%/.}
		while [ "$top" != "$root" ] && [ -n "$top" ]; do
			up=${top%/*}
			[ "$(stat -c %d "${up:-/}")" = "$(stat -c %d "$top")" ] || break
			top=$up
		done
		tops[$top]=1
	done <"$1"
	[ ${#want[@]} -gt 0 ] || return 0
	for top in "${!tops[@]}"; do
		while IFS= read -r -d '' key && IFS= read -r -d '' d; do
			[ -z "${want[$key]:-}" ] || printf '%s\0' "${d#"$root"/}"
		done < <(find "${top:-/}" -xdev -type f -links +1 -printf '%D:%i\0%p\0')
	done
}

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
	# Paths relative to the mount point: directories with a trailing slash
	# into $dirs, everything else into $files.  A directory the mirror does
	# not have yet (new, renamed, a new btrfs snapshot) is copied whole
	# ($whole): chj-resolve lists such a directory but not what it holds
	# unchanged.  So is each subdirectory of a listed directory that the
	# mirror lacks (one renamed into it).
	dirs=$(mktemp) self=$(mktemp) files=$(mktemp) whole=$(mktemp)
	trap 'rm -f "$list" "$dirs" "$self" "$files" "$whole"' EXIT
	shopt -s nullglob dotglob
	while IFS= read -r -d '' p; do
		rel=${p#"$mnt"}
		rel=${rel#/}
		if [ -z "$rel" ]; then rel=.; fi
		if [ ! -d "$p" ] || [ -L "$p" ]; then
			printf '%s\0' "$rel" >>"$files"
			continue
		fi
		printf '%s/\0' "$rel" >>"$dirs"
		printf '%s\0' "$rel" >>"$self"
		if [ ! -d "$dest/$rel" ]; then
			printf '%s/\0' "$rel" >>"$whole"
			continue
		fi
		for c in "$p"/*/; do
			c=${c%/}
			[ -L "$c" ] || [ -d "$dest/$rel/${c##*/}" ] || printf '%s/\0' "$rel/${c##*/}" >>"$whole"
		done
	done <"$list"
	if [ -s "$dirs" ]; then
		"${RSYNC[@]}" --delete --from0 --files-from="$dirs" "$mnt/" "$dest/"
	fi
	if [ -s "$whole" ]; then
		"${RSYNC[@]}" --delete -r --from0 --files-from="$whole" "$mnt/" "$dest/"
		links_of_whole "$whole" >>"$files"
	fi
	# The listed directories again, without the slash (the directory
	# alone): pass 3 replaces files inside them, and rsync sets their
	# times back at its end.
	cat "$self" >>"$files"
	if [ -s "$files" ]; then
		"${RSYNC[@]}" --ignore-times --from0 --files-from="$files" "$mnt/" "$dest/"
	fi
	echo "rsync-backup: $(tr -cd '\0' <"$list" | wc -c) paths since epoch $(cat "$state"), $(tr -cd '\0' <"$whole" | wc -c) directories new to the mirror copied whole"
	;;
3)
	echo "rsync-backup: full copy" >&2
	"${RSYNC[@]}" --delete "$mnt/" "$dest/"
	;;
*)
	echo "rsync-backup: chj-resolve failed (exit $rc)" >&2
	exit 1
	;;
esac
echo "$new" >"$state"
