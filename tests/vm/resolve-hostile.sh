#!/bin/bash
# chj-resolve over the real target on filesystems a user shaped: on ext4,
# XFS and btrfs a changed file under a 4.5 KiB path and one 5000 levels
# deep, and 5000 hard links to a changed file (walk and name cache; the
# host's hostile.sh has 100000); on ext4 a FIFO and a symlink planted as
# the name cache; on XFS, xfs_growfs and a change in the new allocation
# groups, whose byte range must be reported.
# vm-disks: 64M 1G
# vm-timeout: 600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

mnt=/tmp/mnt
mkdir -p $mnt
"$CHJ" create h /dev/vda /dev/vdb

# shape MNT NLINKS: the long path, the deep tree, NLINKS links (made with
# directory fds: no path of them fits PATH_MAX).
shape() {
	python3 - "$1" "$2" <<'EOF'
import os, sys
def down(fd, n, make=True):
    if make:
        os.mkdir(n, dir_fd=fd)
    nfd = os.open(n, os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    return nfd
fd = os.open(sys.argv[1], os.O_DIRECTORY)
for i in range(18):
    fd = down(fd, '%02d' % i + 'L' * 248)
os.close(os.open('f', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
os.close(fd)
fd = down(os.open(sys.argv[1], os.O_DIRECTORY), 'deep')
for i in range(5000):
    fd = down(fd, 'd')
os.close(os.open('g', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
os.close(fd)
d = os.path.join(sys.argv[1], 'links')
os.mkdir(d)
open(d + '/target', 'w').close()
for i in range(int(sys.argv[2])):
    os.link(d + '/target', d + '/l%d' % i)
EOF
}

# listed OUT REL...: each path is in OUT (-0 output), whole.
listed() {
	python3 - "$@" "$mnt" <<'EOF' || fail "$1: a path is missing"
import sys
out = set(open(sys.argv[1], 'rb').read().split(b'\0'))
for rel in sys.argv[2:-1]:
    p = (sys.argv[-1] + '/' + rel).encode()
    if p not in out:
        sys.exit('missing: %s... (%d bytes)' % (rel[:40], len(p)))
EOF
}

long=$(python3 -c "print('/'.join('%02d' % i + 'L' * 248 for i in range(18)) + '/f')")
deep=deep$(printf '/d%.0s' $(seq 5000))/g

for fs in ext4 xfs btrfs; do
	rlog "$fs"
	rm -f "$CHJ_RESOLVE_CACHE_DIR"/*
	case $fs in
	ext4) mkfs.ext4 -q /dev/mapper/h ;;
	xfs) mkfs.xfs -q -f -m rmapbt=1 /dev/mapper/h ;;
	btrfs) mkfs.btrfs -q -f /dev/mapper/h >/dev/null ;;
	esac
	mount /dev/mapper/h $mnt
	e=$("$CHJ" checkpoint h)
	"$RESOLVE" --since "$e" h >/dev/null	# builds the name cache
	nlinks=5000
	shape $mnt $nlinks
	sync
	t0=$SECONDS
	rexpect 0 "$RESOLVE" --since "$e" -0 --stats h
	rlog "$fs: resolve took $((SECONDS - t0))s"
	grep 'name cache' "$CHJ_OUT/last.err" || true
	cp "$CHJ_OUT/last.out" "$CHJ_OUT/$fs.out0"
	listed "$CHJ_OUT/$fs.out0" "$long" "$deep" links/target links/l0 "links/l$((nlinks - 1))"
	if [ $fs = xfs ]; then
		rexpect 0 env CHJ_RESOLVE_CACHE=off "$RESOLVE" --since "$e" -0 h
		cmp "$CHJ_OUT/last.out" "$CHJ_OUT/$fs.out0" || fail "$fs: name cache and walk disagree"
	fi
	if [ $fs = ext4 ]; then
		# A FIFO, then a symlink, as the cache file: a warning, the
		# same answer, no hang (the test's timeout would end it).
		cf=$(ls "$CHJ_RESOLVE_CACHE_DIR"/*.names)
		rm "$cf"
		mkfifo -m 600 "$cf"
		rexpect 0 "$RESOLVE" --since "$e" -0 h
		grep -q 'warning: name cache' "$CHJ_OUT/last.err" || fail "$fs: no warning for a FIFO"
		cmp "$CHJ_OUT/last.out" "$CHJ_OUT/$fs.out0" || fail "$fs: another answer without the cache"
		rm "$cf"
		ln -s /dev/vda "$cf"
		rexpect 0 "$RESOLVE" --since "$e" -0 h
		grep -q 'warning: name cache' "$CHJ_OUT/last.err" || fail "$fs: no warning for a symlink"
		rm -f "$cf"
	fi
	umount $mnt
done

rlog "xfs_growfs, then a change in the new allocation groups"
mkfs.xfs -q -f -m rmapbt=1 -d size=400m /dev/mapper/h
mount /dev/mapper/h $mnt
xfs_growfs $mnt >/dev/null
# 700 MiB written (the old 400 MiB cannot hold it): its end lies in the
# new AGs.  Then, after the checkpoint, 1 MiB there rewritten in place.
xfs_io -f -c 'falloc 0 700m' -c 'pwrite -q -S 1 -b 1m 690m 1m' -c fsync $mnt/big
e=$("$CHJ" checkpoint h)
xfs_io -d -c 'pwrite -q -S 2 -b 1m 690m 1m' $mnt/big
sync
rexpect 0 "$RESOLVE" --since "$e" --json h
python3 - "$CHJ_OUT/last.out" "$mnt/big" <<'EOF' || fail "the change in a new AG is not reported"
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o['path'] == sys.argv[2]:
        a, b = 690 << 20, 691 << 20
        for r in o['ranges']:
            if r['start'] <= a and r['start'] + r['length'] >= b:
                sys.exit(0)
        sys.exit('big listed, ranges %s miss [690 MiB, 691 MiB)' % o['ranges'])
sys.exit('big not listed')
EOF
umount $mnt
"$CHJ" remove h
log "ok"
