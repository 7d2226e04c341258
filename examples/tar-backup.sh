#!/bin/bash
# Incremental tar archive of what changed since the last run.
#
#   tar-backup.sh NAME ARCHIVE_DIR
#
# Writes ARCHIVE_DIR/chj-EPOCH.tar: a full archive the first time (or when
# the epoch is no longer retained), then one with only the files
# chj-resolve lists.  Directories are archived without recursion
# (--no-recursion): their entries are listed when they changed; a deletion
# shows as a directory whose member is gone.  Lock-step: checkpoint first.
# Archived with what a backup must keep (TAR_KEEP): POSIX format, ACLs and
# every xattr namespace (file capabilities are security.capability), holes
# of sparse files; hard links are stored as links between the names an
# archive holds (chj-resolve lists every name of a changed inode).
# Environment: CHJ, CHJ_RESOLVE (tool paths).
set -euo pipefail
CHJ=${CHJ:-chj}
CHJ_RESOLVE=${CHJ_RESOLVE:-chj-resolve}
[ $# -eq 2 ] || { echo "usage: $0 NAME ARCHIVE_DIR" >&2; exit 2; }
name=$1 dir=$2 state=$2/epoch
mnt=$(findmnt -n -o TARGET --source "/dev/mapper/$name" | head -n 1)
[ -n "$mnt" ] || { echo "tar-backup: /dev/mapper/$name is not mounted" >&2; exit 1; }
mkdir -p "$dir"
# --atime-preserve=system: the files are read with O_NOATIME, so on a
# relatime mount the archive's reads do not rewrite inodes that the next
# run would list (examples/rsync-backup.sh says why).
TAR_KEEP=(--format=posix --acls --xattrs --xattrs-include='*' --sparse --atime-preserve=system)

new=$($CHJ checkpoint "$name")
rc=3
if [ -f "$state" ]; then
	rc=0
	"$CHJ_RESOLVE" -0 --since "$(cat "$state")" "/dev/mapper/$name" >"$dir/list.$new" || rc=$?
fi
case $rc in
0)
	tar "${TAR_KEEP[@]}" --null --no-recursion -C / -cf "$dir/chj-$new.tar" -T "$dir/list.$new"
	;;
3)
	tar "${TAR_KEEP[@]}" -C "$mnt" -cf "$dir/chj-$new.tar" .
	;;
*)
	echo "tar-backup: chj-resolve failed (exit $rc)" >&2
	exit 1
	;;
esac
rm -f "$dir/list.$new"
echo "$new" >"$state"
echo "$dir/chj-$new.tar"
