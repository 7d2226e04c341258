#!/bin/bash
# restic backup of what changed since the last run.
#
#   RESTIC_REPOSITORY=... RESTIC_PASSWORD=... restic-backup.sh NAME
#
# The first run (or one after the epoch was dropped) backs up the whole
# mount point.  Later runs back up only the paths chj-resolve lists
# (--files-from-raw takes its NUL-separated output as is).  restic stores
# each run as its own snapshot of those paths; `restic restore` of the
# latest full snapshot plus the newer ones in order rebuilds the tree.
# Lock-step: checkpoint first.  Environment: CHJ, CHJ_RESOLVE, STATE (the
# file that remembers the epoch; default /var/lib/chj/restic-NAME.epoch).
set -euo pipefail
CHJ=${CHJ:-chj}
CHJ_RESOLVE=${CHJ_RESOLVE:-chj-resolve}
[ $# -eq 1 ] || { echo "usage: $0 NAME" >&2; exit 2; }
name=$1
state=${STATE:-/var/lib/chj/restic-$name.epoch}
mnt=$(findmnt -n -o TARGET --source "/dev/mapper/$name" | head -n 1)
[ -n "$mnt" ] || { echo "restic-backup: /dev/mapper/$name is not mounted" >&2; exit 1; }
mkdir -p "$(dirname "$state")"

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
	if [ -s "$list" ]; then
		restic backup --quiet --tag "chj-epoch-$new" --files-from-raw "$list"
	else
		echo "restic-backup: nothing changed"
	fi
	;;
3) restic backup --quiet --tag "chj-epoch-$new" --tag full "$mnt" ;;
*) echo "restic-backup: chj-resolve failed (exit $rc)" >&2; exit 1 ;;
esac
echo "$new" >"$state"
