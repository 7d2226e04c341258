#!/bin/bash
# The backup integrations in examples/, end to end on ext4 over dm-chj:
# a full run, then changes (data, a same-size edit with size and mtime put
# back, delete, rename, new directory and symlink, chmod, a VM image file
# written inside, a hole punched and a range zeroed in it), then an
# incremental run of each, verified against the source: the rsync mirror and the image backups equal it byte for byte (the
# mirror with its hard links, by rsync -n -c -HAX), the
# tar and restic increments hold every changed file.
# vm-disks: 32M 64M
# vm-timeout: 400
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
export CHJ=$CHJ_ROOT/userspace/chj CHJ_RESOLVE=$CHJ_ROOT/userspace/chj-resolve
EX=$CHJ_ROOT/examples
export RESTIC_PASSWORD=chj-test RESTIC_REPOSITORY=/tmp/restic RESTIC_CACHE_DIR=/tmp/restic-cache

$CHJ create data /dev/vda /dev/vdb >/dev/null
mkfs.ext4 -q /dev/mapper/data
M=/tmp/m
mkdir -p $M
mount /dev/mapper/data $M
cp -a /usr/share/doc/bash /usr/share/doc/coreutils /usr/share/doc/e2fsprogs $M/
mkdir $M/vm && head -c 16M /dev/urandom >$M/vm/disk.img
echo "quarterly numbers" >$M/report.txt
# Hard links across directories, never changed: a listed directory (links-a
# gets a new entry) or a renamed one (links-c) must not cost them their
# links in the mirror.
mkdir $M/links-a $M/links-b $M/links-c
echo f >$M/links-a/f && ln $M/links-a/f $M/links-b/g
echo m >$M/links-c/m && ln $M/links-c/m $M/links-b/n
sync

log "first runs: full backups"
"$EX/rsync-backup.sh" data /tmp/mirror
"$EX/tar-backup.sh" data /tmp/tar >/dev/null
restic init --quiet
STATE=/tmp/restic.epoch "$EX/restic-backup.sh" data
"$EX/image-backup.sh" --file $M/vm/disk.img data /tmp/disk.bak | tail -n 1

log "changes"
echo "appended" >>$M/bash/README
touch -r $M/report.txt /tmp/ref
printf 'QUARTERLY' | dd of=$M/report.txt conv=notrunc status=none	# same size
touch -r /tmp/ref $M/report.txt					# same mtime
rm $M/coreutils/THANKS.gz 2>/dev/null || rm "$(find $M/coreutils -type f | head -n 1)"
mv $M/e2fsprogs $M/e2fsprogs-renamed
mkdir -p $M/new/dir && echo fresh >$M/new/dir/file && ln -s ../report.txt $M/new/link
chmod 600 $M/bash/README
echo new >$M/links-a/new
mv $M/links-c $M/links-c2
dd if=/dev/urandom of=$M/vm/disk.img bs=4096 seek=1000 count=3 conv=notrunc status=none
dd if=/dev/urandom of=$M/vm/disk.img bs=4096 seek=3000 count=1 conv=notrunc status=none
# Zeros where the backup holds data: a punched hole and a zeroed range (a
# copy that skips zero blocks, dd conv=sparse into the old backup, keeps
# the old bytes there: check-long's e2e found it).
fallocate --punch-hole --offset $((2000 * 4096)) --length $((8 * 4096)) $M/vm/disk.img
dd if=/dev/zero of=$M/vm/disk.img bs=4096 seek=2500 count=2 conv=notrunc status=none
sync

log "rsync's own quick check misses the same-size, same-mtime edit"
if grep -q ' report.txt$' <<<"$(rsync -an --itemize-changes $M/ /tmp/mirror/)"; then
	fail "rsync quick check unexpectedly saw report.txt"
fi

log "incremental runs"
# The never-changed linked files may or may not be listed (a false
# positive where their inode shares a block with a changed one); the
# mirror must keep their links either way.  So the rsync run sees the list
# without them (and without links-b, unchanged too), the answer a resolver
# as exact as can be gives.
cat >/tmp/resolve-exact <<EOF
#!/bin/bash
set -o pipefail
"$CHJ_RESOLVE" "\$@" | grep -zv -e '/links-a/f\$' -e '/links-b\$' -e '/links-b/[gn]\$' -e '/links-c2/m\$'
EOF
chmod +x /tmp/resolve-exact
CHJ_RESOLVE=/tmp/resolve-exact "$EX/rsync-backup.sh" data /tmp/mirror
diff -r --no-dereference $M /tmp/mirror || fail "rsync mirror differs from the source"
# rsync's own comparison, with hard links, ACLs and xattrs: nothing to do.
rsync -n -a -c -H -A -X --delete -i $M/ /tmp/mirror/ >/tmp/rsync-cmp
[ ! -s /tmp/rsync-cmp ] || { cat /tmp/rsync-cmp; fail "rsync -n -c -HAX: the mirror differs from the source"; }
for f in links-b/g links-b/n; do
	[ "$(stat -c %h "/tmp/mirror/$f")" = 2 ] || fail "rsync mirror: $f lost its hard link"
done
[ "$(stat -c %a /tmp/mirror/bash/README)" = 600 ] || fail "mode change not mirrored"
tarball=$("$EX/tar-backup.sh" data /tmp/tar)
tar -tf "$tarball" >/tmp/tarlist
for f in report.txt bash/README new/dir/file new/link vm/disk.img e2fsprogs-renamed; do
	grep -q "${M#/}/$f/\?\$" /tmp/tarlist || fail "tar increment lacks $f"
done
STATE=/tmp/restic.epoch "$EX/restic-backup.sh" data
restic restore --quiet latest --target /tmp/restore
cmp $M/report.txt /tmp/restore$M/report.txt || fail "restic increment has the old report.txt"
"$EX/image-backup.sh" --file $M/vm/disk.img data /tmp/disk.bak | tee /tmp/img.out
grep -q "verified" /tmp/img.out || fail "file image backup not verified"

log "whole-device image backup, quiescent device"
umount $M
"$EX/image-backup.sh" data /tmp/dev.bak | tail -n 1
mount /dev/mapper/data $M
echo more >>$M/bash/README
dd if=/dev/zero of=$M/vm/disk.img bs=4096 seek=3500 count=4 conv=notrunc oflag=direct status=none
umount $M
"$EX/image-backup.sh" data /tmp/dev.bak | tee /tmp/dev.out
grep -q "ranges.*since epoch" /tmp/dev.out || fail "device backup was not incremental"
grep -q "verified" /tmp/dev.out || fail "device image backup not verified"
$CHJ remove data
log "ok"
