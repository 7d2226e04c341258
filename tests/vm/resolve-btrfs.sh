#!/bin/bash
# chj-resolve on btrfs over the real target (DUP metadata, single data):
# every truly changed file and directory is listed (ground truth from
# before/after snapshots), across subvolumes, a nested subvolume and a
# snapshot taken after the checkpoint, with reflinks, over two epochs; the
# --json ranges cover every write (scattered ones into a sparse VM image
# among them); resolves while traffic runs (resolve_live); a filesystem on
# two devices exits 3 ("full scan needed").
# Mounted noatime, as btrfs usually is.
# vm-disks: 64M 1G 256M
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

extra_populate() {
	local m=$1
	btrfs -q subvolume create "$m/sv"
	mkdir "$m/sv/dir"
	echo a >"$m/sv/a"
	echo b >"$m/sv/b"
	head -c 20000 /dev/urandom >"$m/sv/dir/c"
	btrfs -q subvolume create "$m/sv/inner"
	echo x >"$m/sv/inner/x"
	echo y >"$m/sv/inner/y"
}

# Most of a real filesystem's tree blocks stay untouched across an epoch;
# in this small one everything written just before the checkpoint is
# rewritten after it.  A small subvolume created last and left alone plays
# that part: its tree bounds the generation at the checkpoint, so inodes
# last changed before it are told apart (docs/resolve.md, btrfs).
extra_settle() {
	btrfs -q subvolume create "$1/settled"
	echo s >"$1/settled/s"
}

extra_modify() {
	local m=$1
	echo more >>"$m/sv/a"
	chmod 0600 "$m/sv/dir/c"
	mv "$m/sv/inner/x" "$m/sv/inner/x-renamed"
	btrfs -q subvolume snapshot "$m/sv" "$m/snap"
	echo changed >>"$m/snap/b"
}

# Round 2: in the snapshot, a subvolume and a nested one.
extra_modify2() {
	local m=$1
	echo again >>"$m/sv/b"
	rm "$m/snap/a"
	mv "$m/sv/dir" "$m/sv/dir2"
	cp --reflink=always "$m/sv/dir2/c" "$m/snap/c-copy"
	echo z >"$m/sv/inner/z"
}

# The workload's reflinks must share blocks here.
export WL_NEED_CLONE=1
mnt=/tmp/mnt
mkdir -p $mnt
"$CHJ" create b /dev/vda /dev/vdb
mkfs.btrfs -q -f /dev/mapper/b
mount -o noatime /dev/mapper/b $mnt
resolve_truth_test b $mnt
grep -q "method btrfs" "$CHJ_OUT/out.json.stats" || fail "unexpected method"
# Leaf neighbours told apart by transid, against L and the state store's
# G (issue 38: 1.00 measured with G).
resolve_min_precision 0.95
resolve_live b $mnt btrfs

log "exit 3: a second device joins the filesystem"
btrfs -q device add -f /dev/vdc $mnt
rexpect 3 "$RESOLVE" b
grep -q "spans 2 devices" "$CHJ_OUT/last.err" || fail "no 'spans 2 devices' reason"
[ ! -s "$CHJ_OUT/last.out" ] || fail "exit 3 printed paths"
umount $mnt
"$CHJ" remove b
log "ok"
