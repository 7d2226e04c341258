#!/bin/bash
# make demo: chj at work in the VM, in under a minute.  A tracked device on
# a file-backed disk, ext4 filled with a copy of /usr/share/doc, a
# checkpoint, some changes -- one of which keeps its size and mtime -- and
# chj-resolve's answer next to rsync's quick check.  Also run by make check,
# so it asserts what it shows.
# vm-disks: 32M 256M
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
export PATH=$CHJ_ROOT/userspace:$PATH
M=/tmp/demo
say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "1. Track a disk: chj create (formats the metadata, creates /dev/mapper/demo)"
run chj create demo /dev/vda /dev/vdb
run chj status demo

say "2. A filesystem on it, filled with a real tree"
# Initialise inode tables and journal now, not lazily after mount: lazy
# init writes them later, and chj (rightly) reports their inodes changed.
mkfs.ext4 -q -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/demo
mkdir -p $M
# noatime: otherwise the backup's reads update atimes, which really are
# inode changes, and chj reports every inode read as changed.
mount -o noatime /dev/mapper/demo $M
# /usr/share/doc without its few large files: thousands of files, quickly.
(cd /usr/share && find doc \( -type d -o -size -12k \) -print0 | cpio -0pdm --quiet $M)
sync
echo "$(find $M -type f | wc -l) files, $(du -sh $M | cut -f1)"

say "3. Checkpoint (a backup would copy the tree now)"
E=$(chj checkpoint demo)
echo "\$ chj checkpoint demo"
echo "$E        <- remember this epoch"
rsync -a $M/ /tmp/backup/

say "4. Change things"
f=$(find $M/doc -name 'copyright' -size +2k -print -quit)
run sh -c "echo '# local note' >> $M/doc/bash/README"
touch -r "$f" /tmp/stamp
echo "\$ (overwrite 4 bytes of ${f#$M/} in place, then touch -r: same size, same mtime)"
printf 'XXXX' | dd of="$f" bs=1 seek=100 conv=notrunc status=none
touch -r /tmp/stamp "$f"
run rm -r $M/doc/coreutils
run mv $M/doc/e2fsprogs $M/doc/e2fsprogs-old
run sh -c "echo hello > $M/doc/NEWS.local"
sync

say "5. What changed since epoch $E?"
echo "\$ chj-resolve --since $E /dev/mapper/demo"
chj-resolve --since "$E" --stats /dev/mapper/demo >/tmp/chj.list 2>/tmp/chj.stats
n=$(wc -l </tmp/chj.list)
head -n 20 /tmp/chj.list | sed "s|^|  |"
[ "$n" -le 20 ] || echo "  ... and $((n - 20)) more"
echo "  (--stats: $(grep -iE 'regions|attributed' /tmp/chj.stats | head -n 3 | tr -s ' \n' ' '))"
echo "\$ rsync -an --itemize-changes --delete $M/ /tmp/backup/   (quick check: size + mtime)"
rsync -an --itemize-changes --delete $M/ /tmp/backup/ | grep -v '^\.d' | sed 's|^|  |' | tee /tmp/rsync.list

say "The difference"
grep -qxF "$f" /tmp/chj.list || fail "chj-resolve missed ${f#$M/}"
if grep -q " ${f#$M/}\$" /tmp/rsync.list; then fail "rsync saw the mtime-preserving edit"; fi
for p in "$M/doc/bash/README" "$M/doc/NEWS.local" "$M/doc/e2fsprogs-old" "$M/doc"; do
	grep -qxF "$p" /tmp/chj.list || fail "chj-resolve missed $p"
done
echo "chj-resolve lists ${f#$M/}; rsync's quick check skips it, because its size"
echo "and mtime were put back -- the backup would silently keep the old content."
echo "chj-resolve listed $(wc -l </tmp/chj.list) paths of $(find $M | wc -l); deletions and renames show as their"
echo "changed directories ($M/doc), which a backup tool rescans."
umount $M
chj remove demo
