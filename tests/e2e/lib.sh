# shellcheck shell=bash
# The e2e family's devices, backup and checks (tests/vm/e2e.sh), sourced
# after tests/vm/lib/lib.sh and chj.sh.  Three chj devices c-ext4, c-xfs,
# c-btrfs: their metadata in 16 MiB slices of vda (dm-linear), their origins
# vdb, vdc, vdd; the backups on vde (ext4, not tracked), which survives the
# resets like the sources: /tmp/bk/FS mirrors /tmp/m/FS, /tmp/bk/FS.epoch is
# the example's epoch file.
# The backup is examples/rsync-backup.sh as a user runs it; the checks are
# peer tools: rsync's own checksum comparison with -H -A -X, find's link
# counts, the filesystems' checkers, git fsck, SQLite's integrity_check,
# dpkg --verify, pg_dump.

E2E_FSES=(ext4 xfs btrfs)
E2E_META_MB=16
export CHJ=$CHJ_ROOT/userspace/chj CHJ_RESOLVE_REAL=$CHJ_ROOT/userspace/chj-resolve
EX=$CHJ_ROOT/examples
# The resolver's state store and name cache where a system keeps them: on a
# disk that survives the reset (/var/cache is read-only in the guest).
export CHJ_RESOLVE_CACHE_DIR=/tmp/bk/cache
# Per cycle: the list, the resolve time, rsync's statistics (e2e_backup).
E2E_RUN=/tmp/e2e-run
REPORT=$CHJ_OUT/report

# e2e_devices: the chj devices (existing metadata keeps its own: chj create
# is idempotent) and the backup disk mounted on /tmp/bk.  FIRST=1 formats vde.
e2e_devices() {
	local i=0 fs orig=(/dev/vdb /dev/vdc /dev/vdd) org
	for fs in "${E2E_FSES[@]}"; do
		org=${orig[$i]}
		dm_create "meta-$fs" "0 $((E2E_META_MB * 2048)) linear /dev/vda $((i * E2E_META_MB * 2048))" >/dev/null
		"$CHJ" create "c-$fs" "/dev/mapper/meta-$fs" "$org" >/dev/null
		mkdir -p "/tmp/m/$fs"
		i=$((i + 1))
	done
	[ "${FIRST:-0}" = 0 ] || mkfs.ext4 -q /dev/vde
	mkdir -p /tmp/bk
	mount /dev/vde /tmp/bk
	mkdir -p /tmp/bk/cache && chmod 700 /tmp/bk/cache
	e2e_wrappers
}

# e2e_wrappers: chj-resolve and rsync as the example calls them, through
# wrappers that record what the report needs: the list and the time of
# the resolve, rsync's --stats.  What the example does is unchanged.
e2e_wrappers() {
	mkdir -p /tmp/e2e-bin "$E2E_RUN"
	cat >/tmp/e2e-bin/chj-resolve <<EOF
#!/bin/bash
s=\$(date +%s%N)
"$CHJ_RESOLVE_REAL" "\$@" | tee "$E2E_RUN/list"
rc=\${PIPESTATUS[0]}
echo \$(( (\$(date +%s%N) - s) / 1000000 )) >"$E2E_RUN/resolve-ms"
exit \$rc
EOF
	cat >/tmp/e2e-bin/rsync <<EOF
#!/bin/bash
exec /usr/bin/rsync --stats "\$@"
EOF
	chmod +x /tmp/e2e-bin/chj-resolve /tmp/e2e-bin/rsync
	export CHJ_RESOLVE=/tmp/e2e-bin/chj-resolve
}

e2e_mkfs() {
	case $1 in
	ext4) mkfs.ext4 -q /dev/mapper/c-ext4 ;;
	xfs) mkfs.xfs -q -f -m rmapbt=1,reflink=1 /dev/mapper/c-xfs ;;
	btrfs) mkfs.btrfs -q -f /dev/mapper/c-btrfs ;;
	esac
}

# e2e_mount FS: mounted as usually (btrfs noatime); after a reset this is
# the recovery (journal or log replay, btrfs's last committed tree).
e2e_mount() {
	local opts=
	[ "$1" = btrfs ] && opts=noatime
	mount ${opts:+-o "$opts"} "/dev/mapper/c-$1" "/tmp/m/$1"
}

# e2e_fsck FS: the filesystem's own checker on the unmounted origin, then
# mounted again.
e2e_fsck() {
	local fs=$1 out=/tmp/fsck-$1.out
	umount "/tmp/m/$fs"
	case $fs in
	ext4) e2fsck -fn /dev/mapper/c-ext4 >"$out" 2>&1 ;;
	xfs) xfs_repair -n /dev/mapper/c-xfs >"$out" 2>&1 ;;
	btrfs) btrfs check --readonly /dev/mapper/c-btrfs >"$out" 2>&1 ;;
	esac || { cat "$out"; fail "$fs: the filesystem checker found errors"; }
	e2e_mount "$fs"
}

# e2e_backup FS: examples/rsync-backup.sh c-FS /tmp/bk/FS (a full copy the first
# time), then the backup disk synced: what the next boot compares against.
e2e_backup() {
	rm -f "$E2E_RUN/list" "$E2E_RUN/resolve-ms"
	PATH=/tmp/e2e-bin:$PATH "$EX/rsync-backup.sh" "c-$1" "/tmp/bk/$1" >"$E2E_RUN/rsync.out"
	sync -f /tmp/bk
}

# e2e_diff FS OUT: the paths where source and backup differ, by rsync's
# own comparison (checksums, hard links, ACLs, xattrs, deletions), one
# itemized line each; empty when the backup equals the source.  Every read
# of the source by the checks keeps its atimes (--open-noatime; cp_noatime):
# the sources are mounted relatime, and a check's first read of a changed
# file would rewrite its inode in the next epoch, a change no user made.
e2e_diff() {
	/usr/bin/rsync -n -a -c -H -A -X --numeric-ids --delete -i --open-noatime "/tmp/m/$1/" "/tmp/bk/$1/" >"$2"
}

# cp_noatime SRC DST: SRC's tree copied to DST (made), as cp -a does,
# reading SRC with O_NOATIME.
cp_noatime() {
	/usr/bin/rsync -aHAX --numeric-ids --open-noatime "$1/" "$2/"
}

# e2e_links FS: the link count of every non-directory the same on both
# sides (rsync -H cannot see a link in the backup that the source lacks).
e2e_links() {
	(cd "/tmp/m/$1" && find . ! -type d -printf '%n %p\n' | sort) >/tmp/links-src
	(cd "/tmp/bk/$1" && find . ! -type d -printf '%n %p\n' | sort) >/tmp/links-bk
	cmp -s /tmp/links-src /tmp/links-bk ||
		{ diff /tmp/links-src /tmp/links-bk | head -n 20; fail "$1: link counts differ"; }
}

# e2e_holes FS: a sparse file stays sparse in the backup.  Where the source
# has a MiB or more of holes, the backup may allocate at most a MiB and an
# eighth more than the source (two filesystems allocate differently; a copy
# that fills the holes allocates the whole size).
e2e_holes() {
	python3 -S - "/tmp/m/$1" "/tmp/bk/$1" <<'EOF'
import os, stat, sys
src, bk = sys.argv[1:3]
bad = []
for d, _, files in os.walk(src):
    for f in files:
        p = os.path.join(d, f)
        s = os.lstat(p)
        if not stat.S_ISREG(s.st_mode) or s.st_size - s.st_blocks * 512 < 1 << 20:
            continue
        b = os.lstat(os.path.join(bk, os.path.relpath(p, src)))
        if b.st_blocks * 512 > s.st_blocks * 512 * 9 // 8 + (1 << 20):
            bad.append(f"{p}: {s.st_size} bytes, {s.st_blocks * 512} allocated, "
                       f"{b.st_blocks * 512} in the backup")
for line in bad[:20]:
    print(line)
sys.exit(1 if bad else 0)
EOF
}

# e2e_incremental FS WORKLOAD WHEN: the truly changed paths (rsync's
# comparison before the incremental), the incremental, then the backup
# must equal the source; one report line.  WHEN: clean or crash.
e2e_incremental() {
	local fs=$1 wl=$2 when=$3 truth=/tmp/truth-$1
	sync -f "/tmp/m/$fs"
	e2e_diff "$fs" "$truth"
	e2e_backup "$fs"
	[ -f "$E2E_RUN/list" ] || fail "$fs: the example made a full copy, not an incremental"
	e2e_diff "$fs" "/tmp/after-$fs"
	# Kept before the verdict: a failed cycle's list is what explains it.
	mkdir -p "$CHJ_OUT/cycles"
	cp "$truth" "$CHJ_OUT/cycles/$fs-$wl-$when.truth"
	cp "$E2E_RUN/list" "$CHJ_OUT/cycles/$fs-$wl-$when.list"
	cp "/tmp/after-$fs" "$CHJ_OUT/cycles/$fs-$wl-$when.after"
	if [ -s "/tmp/after-$fs" ]; then
		head -n 40 "/tmp/after-$fs"
		fail "$fs after $wl ($when): the backup differs from the source in $(wc -l <"/tmp/after-$fs") paths"
	fi
	e2e_links "$fs"
	e2e_holes "$fs" || fail "$fs after $wl ($when): sparse files filled in the backup"
	python3 -S "$CHJ_ROOT/tests/e2e/report.py" "$fs" "$wl" "$when" "/tmp/m/$fs" "$truth" \
		"$E2E_RUN/list" "$E2E_RUN/resolve-ms" "$E2E_RUN/rsync.out" | tee -a "$REPORT"
}
