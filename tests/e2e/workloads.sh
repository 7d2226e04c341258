# shellcheck shell=bash
# The e2e family's workloads (tests/vm/e2e.sh): real programs from Debian's
# packages, each in its own directory of the tracked filesystem M.
#   wl_NAME M N      run workload NAME, cycle N (a seed of its own), and
#                    print "started" once its first write is done (the
#                    crash cycles reset the guest at a random point after it)
#   chk_NAME B SRC   check the backup copy B with the program's own checker;
#                    after a crash the source SRC is checked too and the
#                    backup must answer as the source does
# E2E_LONG=1 sizes them for make check-long.

export HOME=/tmp GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=e2e GIT_AUTHOR_EMAIL=e2e@example.org
export GIT_COMMITTER_NAME=e2e GIT_COMMITTER_EMAIL=e2e@example.org
E2E_DEBS=$CHJ_ROOT/build/e2e/debs
WL_DIR=$CHJ_ROOT/tests/e2e
# dpkg's log where the guest can write (/var/log is the host's, read-only).
dpkg_() { dpkg --log=/tmp/dpkg.log "$@"; }
git_() { git -c safe.directory='*' -c gc.auto=0 "$@"; }
long() { [ "${E2E_LONG:-0}" = 1 ]; }

# wl_seed M: the tree the first full backup copies: documentation trees,
# hard links, xattrs, an ACL, other owners, a sparse file.
wl_seed() {
	local s=$1/seed
	# On btrfs a subvolume (wl_fsown snapshots it).
	if [ "$(findmnt -n -o FSTYPE --target "$1")" = btrfs ]; then
		btrfs -q subvolume create "$s"
	else
		mkdir -p "$s"
	fi
	cp -a /usr/share/doc/bash /usr/share/doc/coreutils /usr/share/doc/rsync "$s/"
	ln "$s/bash/copyright" "$s/copyright-link"
	ln "$s/coreutils/copyright" "$s/two-links"
	ln "$s/coreutils/copyright" "$s/two-links-b"
	setfattr -n user.origin -v seed "$s/bash/copyright"
	setfattr -n user.big -v "$(head -c 2000 /dev/zero | tr '\0' x)" "$s/rsync/copyright"
	setfacl -m u:nobody:r "$s/coreutils/copyright"
	chown -R nobody:nogroup "$s/rsync"
	head -c 300000 /dev/urandom >"$s/data.bin"
	# A sparse file, as a VM image is: 8 MiB, three 64 KiB extents.
	truncate -s 8M "$s/sparse.img"
	for o in 0 3 7; do
		head -c 65536 /dev/urandom | dd of="$s/sparse.img" bs=64k seek=$((o * 16)) conv=notrunc status=none
	done
	mkdir -p "$s/tree-0/a/b"
	echo deep >"$s/tree-0/a/b/t"
	echo top >"$s/tree-0/u"
}

# wl_edits M N: what a user does by hand, the cases a backup tool most
# easily loses: an xattr changed and one added, an ACL changed, a new hard
# link and a removed one, a same-size rewrite with the mtime put back, a
# punched hole, a block written into a sparse file's hole, rename (a file,
# a directory tree), delete, chmod, chown.
wl_edits() {
	local s=$1/seed n=$2
	[ -d "$s" ] || return 0
	setfattr -n user.origin -v "edit $n" "$s/bash/copyright"
	setfattr -n "user.n$n" -v "$n" "$s/coreutils/copyright"
	setfacl -m "u:daemon:rw,g:nogroup:r" "$s/data.bin"
	ln "$s/bash/copyright" "$s/new-link-$n"
	rm -f "$s/two-links-b"
	touch -r "$s/data.bin" /tmp/e2e-ref
	printf 'edit %06d' "$n" | dd of="$s/data.bin" bs=1 seek=5000 conv=notrunc status=none
	touch -r /tmp/e2e-ref "$s/data.bin"
	fallocate -p -o 65536 -l 8192 "$s/data.bin"
	head -c 4096 /dev/urandom | dd of="$s/sparse.img" bs=4096 seek=$((600 + n % 400)) conv=notrunc status=none
	echo "cycle $n" >"$s/renamed-from"
	mv "$s/renamed-from" "$s/renamed-$n"
	rm -f "$s/renamed-$((n - 1))"
	# A directory tree renamed: its unchanged contents must follow.
	mv "$s"/tree-* "$s/tree-$n"
	chmod 640 "$s/bash/copyright"
	chown daemon "$s/coreutils/copyright"
}

# wl_git M N: clone of a local repository (this one), commits that edit,
# add and delete files, branch switches, then git gc.
wl_git() {
	local r=$1/git/repo n=$2 i files commits=8 k
	long && commits=150
	mkdir -p "$1/git"
	[ -d "$r" ] || git_ clone -q --no-hardlinks "$CHJ_ROOT" "$r"
	cd "$r" || fail "no $r"
	mapfile -t files < <(git_ ls-files '*.c' '*.h' '*.md' '*.sh')
	for ((i = 1; i <= commits; i++)); do
		k=$(((n * 131 + i * 17) % ${#files[@]}))
		echo "e2e cycle $n commit $i" >>"${files[$k]}"
		if ((i % 4 == 0)); then head -c 3000 /dev/urandom | base64 >"e2e-$n-$i.txt"; fi
		if ((i % 9 == 0)); then git_ rm -q "${files[$(((k + 1) % ${#files[@]}))]}" || true; fi
		git_ add -A
		git_ commit -q -m "e2e cycle $n commit $i"
		((i > 1)) || echo started
		if ((i % 8 == 0)); then
			git_ checkout -q -b "e2e-$n-$i" HEAD~3
			echo "branch $n $i" >"branch-$n-$i"
			git_ add -A
			git_ commit -q -m "on branch e2e-$n-$i"
			git_ checkout -q -
		fi
	done
	if long; then git_ gc -q --aggressive --prune=now; else git_ gc -q --prune=now; fi
	cd /
}

chk_git() {
	local b=$1/git/repo s=$2/git/repo rb=0 rs=0
	[ -d "$b" ] || return 0
	git_ -C "$b" fsck --full --no-progress >/tmp/fsck-bk 2>&1 || rb=$?
	if [ -z "$2" ]; then
		[ $rb = 0 ] || { cat /tmp/fsck-bk; fail "git fsck --full on the backup exited $rb"; }
		return 0
	fi
	# After a reset: the backup answers as the recovered source does (a
	# clone the reset cut short is no repository on either side).
	git_ -C "$s" fsck --full --no-progress >/tmp/fsck-src 2>&1 || rs=$?
	if [ "$rb" != "$rs" ]; then
		cat /tmp/fsck-bk /tmp/fsck-src
		fail "git fsck: backup exits $rb, source $rs"
	fi
	if [ "$rs" != 0 ]; then
		echo "note: git fsck on the recovered source exited $rs (the same on the backup):"
		head -n 5 /tmp/fsck-src
		# git does not fsync loose objects and packs by default: after
		# a power cut they can be empty, and later git commands fail on
		# them.  The user clones again: the removal is a change the next
		# incremental must carry (and wl_git clones afresh).
		rm -rf "$s"
	fi
}

# wl_sqlite M N: concurrent writers on one database in WAL mode.
wl_sqlite() {
	local w=4 tx=60
	long && tx=300
	mkdir -p "$1/sqlite"
	python3 -S "$WL_DIR/sqlite-writers.py" "$1/sqlite/app.db" "$w" "$tx" "$2"
}

# chk_sqlite B SRC: PRAGMA integrity_check on a copy of each database (a
# reader would recover a WAL into the file it checks).
chk_sqlite() {
	local d
	[ -f "$1/sqlite/app.db" ] || return 0
	for d in "$1" ${2:+"$2"}; do
		rm -rf /tmp/sqlchk && cp_noatime "$d/sqlite" /tmp/sqlchk
		assert_eq ok "$(sqlite3 /tmp/sqlchk/app.db 'PRAGMA integrity_check')" "integrity_check of $d"
		sqlite3 /tmp/sqlchk/app.db 'SELECT count(*), sum(v) FROM t' >"/tmp/sqlsum-${d//\//_}"
	done
	[ -z "$2" ] || cmp -s "/tmp/sqlsum-${1//\//_}" "/tmp/sqlsum-${2//\//_}" ||
		fail "sqlite: the backup's rows differ from the source's"
}

# wl_dpkg M N: packages installed, removed and reinstalled with dpkg --root
# (those without maintainer scripts: nothing to run in the root), the
# others unpacked with dpkg -x, the previous cycle's unpacked trees deleted.
# The first install of a cycle is an upgrade in place when the packages are
# there already (dpkg unpacks beside and renames over).
wl_dpkg() {
	local r=$1/dpkg/root x=$1/dpkg/x deb p ctrl inst=() some=()
	mkdir -p "$r/var/lib/dpkg/info" "$r/var/lib/dpkg/updates" "$r/var/lib/dpkg/triggers" "$x"
	[ -f "$r/var/lib/dpkg/status" ] || : >"$r/var/lib/dpkg/status"
	for deb in "$E2E_DEBS"/*.deb; do
		# make check: the smaller ones (dpkg fsyncs every file it unpacks).
		long || [[ ${deb##*/} =~ ^(fonts-dejavu-core|libjs-underscore|python3-six|xml-core|libjs-jquery)_ ]] ||
			continue
		ctrl=$(dpkg-deb --ctrl-tarfile "$deb" | tar -t)
		if [[ $ctrl =~ (inst|rm)($'\n'|$) ]]; then
			some+=("$deb")
		else
			inst+=("$deb")
		fi
	done
	if [ ${#inst[@]} = 0 ] || [ ${#some[@]} = 0 ]; then fail "no .debs in $E2E_DEBS (make e2e-debs)"; fi
	dpkg_ --root="$r" --force-depends -i "${inst[@]}" >/dev/null
	echo started
	if long; then
		for p in git-man manpages; do dpkg_ --root="$r" -r "$p" >/dev/null; done
		dpkg_ --root="$r" -P iso-codes >/dev/null
	fi
	rm -rf "${x:?}"/*
	for deb in "${some[@]}"; do
		p=${deb##*/}
		dpkg -x "$deb" "$x/${p%%_*}"
	done
	# A reinstall: every file unpacked beside and renamed over.
	dpkg_ --root="$r" --force-depends -i "${inst[@]}" >/dev/null
	dpkg_ --root="$r" -r libjs-underscore >/dev/null
}

# chk_dpkg B SRC: dpkg --verify (every installed file against its md5sum).
chk_dpkg() {
	local d
	[ -d "$1/dpkg/root" ] || return 0
	dpkg --root="$1/dpkg/root" --verify >/tmp/dpkg-verify-bk 2>&1 || true
	if [ -z "$2" ]; then
		[ ! -s /tmp/dpkg-verify-bk ] || { cat /tmp/dpkg-verify-bk; fail "dpkg --verify on the backup"; }
		return 0
	fi
	d=$2/dpkg/root
	dpkg --root="$d" --verify >/tmp/dpkg-verify-src 2>&1 || true
	cmp -s /tmp/dpkg-verify-bk /tmp/dpkg-verify-src ||
		{ diff /tmp/dpkg-verify-src /tmp/dpkg-verify-bk; fail "dpkg --verify: the backup answers otherwise than the source"; }
}

# wl_pg M N: PostgreSQL as its own user: initdb (the first time), the
# server started, pgbench's initialisation and a timed run, a clean stop.
PG_BIN=
for PG_BIN in /usr/lib/postgresql/*/bin; do :; done	# the newest
pgu() { runuser -u postgres -- "$@"; }
pg_start() { # DATA SOCKDIR
	mkdir -p "$2" && chown postgres "$2"
	pgu "$PG_BIN/pg_ctl" -D "$1" -s -w -t 300 -l "$2/log" -o "-k $2 -c listen_addresses=" start
}
pg_stop() { pgu "$PG_BIN/pg_ctl" -D "$1" -s -w -t 300 -m fast stop; }
wl_pg() {
	local d=$1/pg/data sock=/tmp/pg-sock scale=1 t=10
	long && scale=2 t=30
	mkdir -p "$1/pg"
	chown postgres "$1/pg"
	[ -d "$d" ] || pgu "$PG_BIN/initdb" -D "$d" -A trust -U postgres >/dev/null
	pg_start "$d" "$sock"
	echo started
	pgu "$PG_BIN/pgbench" -h "$sock" -q -i -s "$scale" postgres >/dev/null 2>&1
	pgu "$PG_BIN/pgbench" -h "$sock" -c 4 -j 2 -T "$t" postgres >/dev/null
	pg_stop "$d"
}

# pg_dump_of DATA NAME: a PostgreSQL started on a copy of DATA (in /tmp: the
# start recovers, and writes), its pg_dump in /tmp/NAME.sql.
pg_dump_of() {
	local c=/tmp/pgcopy-$2 sock=/tmp/pg-sock-$2
	rm -rf "$c" && cp_noatime "$1" "$c"
	rm -f "$c/postmaster.pid"	# the reset's: no server runs on the copy
	pg_start "$c" "$sock"
	# Less the \restrict lines, a random key per run (pg_dump 15.14 on).
	pgu "$PG_BIN/pg_dump" -h "$sock" postgres | grep -v '^\\\(un\)\?restrict ' >"/tmp/$2.sql"
	pg_stop "$c"
	rm -rf "$c"
}

# chk_pg B SRC: pg_dump of the backup equals pg_dump of the source.
chk_pg() {
	local s=${2:-/tmp/m/$E2E_FS}
	[ -d "$1/pg/data" ] || return 0
	pg_dump_of "$1/pg/data" pg-bk
	pg_dump_of "$s/pg/data" pg-src
	cmp -s /tmp/pg-bk.sql /tmp/pg-src.sql || fail "pg_dump of the backup differs from the source's"
	grep -q "COPY public.pgbench_accounts" /tmp/pg-bk.sql || fail "pg_dump of the backup has no pgbench_accounts"
}

# wl_image M N: a disk image written as a guest writes one: O_DIRECT 4 KiB
# writes at random offsets (fio), a hole punched, a range allocated; then its own
# image backup from the ranges (examples/image-backup.sh --file: chj-resolve
# --json's ranges, then verified by checksum) in chk_image.
wl_image() {
	local f=$1/image/disk.img writes=2M
	long && writes=16M
	mkdir -p "$1/image"
	[ -f "$f" ] || truncate -s 64M "$f"
	dd if=/dev/urandom of="$f" bs=4096 seek=$((RANDOM % 16384)) count=1 conv=notrunc oflag=direct status=none
	echo started
	# The guest: fio's random 4 KiB O_DIRECT writes (one process; a dd each
	# costs 0.1 s under TCG), some of them fsync'd.
	fio --name=guest --filename="$f" --rw=randwrite --bs=4k --direct=1 --size=64M \
		--io_size="$writes" --fsync=16 --randseed=$((RANDOM * 32768 + $2)) --output=/dev/null
	fallocate -p -o $(((RANDOM % 60) * 1048576)) -l 1048576 "$f"
	fallocate -o $(((RANDOM % 60) * 1048576)) -l 2097152 "$f"
}
chk_image() {
	[ -f "$1/image/disk.img" ] || return 0
	"$EX/image-backup.sh" --file "/tmp/m/$E2E_FS/image/disk.img" "c-$E2E_FS" "/tmp/bk/$E2E_FS-image.bak" >/tmp/img.out
	grep -q verified /tmp/img.out || { cat /tmp/img.out; fail "image backup of disk.img not verified"; }
	cmp "$1/image/disk.img" "/tmp/bk/$E2E_FS-image.bak" || fail "the image backup differs from the rsync copy"
	sync -f /tmp/bk
}

# wl_fsown M N: what the filesystem does by itself or for an admin: a file
# cloned (reflink where the filesystem has it) and deduplicated (XFS), a
# snapshot of the seed taken and the previous one deleted, a balance
# (btrfs), e4defrag (ext4), fstrim.
wl_fsown() {
	local o=$1/own n=$2 fs
	fs=$(findmnt -n -o FSTYPE --target "$1")
	mkdir -p "$o"
	head -c 2M /dev/urandom >"$o/base-$n"
	echo started
	cp --reflink=auto "$o/base-$n" "$o/clone-$n"
	cp "$o/base-$n" "$o/copy-$n"
	rm -f "$o/base-$((n - 2))" "$o/clone-$((n - 3))"
	case $fs in
	xfs) xfs_io -c "dedupe $o/base-$n 0 0 2097152" "$o/copy-$n" >/dev/null ;;
	btrfs)
		btrfs -q subvolume snapshot "$1/seed" "$1/snap-$n"
		if [ -d "$1/snap-$((n - 1))" ]; then btrfs -q subvolume delete "$1/snap-$((n - 1))"; fi
		btrfs -q balance start -dusage=60 "$1" >/dev/null ;;
	ext4) e4defrag "$o" >/dev/null ;;
	esac
	fstrim "$1"
}
chk_fsown() { :; }
