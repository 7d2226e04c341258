#!/bin/bash
# chj export: nbdinfo --map=qemu:dirty-bitmap:chj over the export equals chj
# changes --since E --bytes (raw writes, an ext4 workload, a fresh and an
# older epoch, after a guest reset during the epoch); the libnbd example
# backup, run across checkpoints with a dm-snapshot of the origin each time,
# gives an image whose checksum is the snapshot's and reads exactly the dirty
# bytes; bad input fails cleanly and leaves nothing behind.  TLS: backup 2
# over the Unix socket with PSK (--socket-group), backup 3 over TCP on a
# non-loopback (dummy) address with x509 and --tls-authz, each checksum as
# above; clients without TLS, with a wrong key, an unlisted or no
# certificate, or not root (nor in the group) on the socket are refused; so
# is a plain export beyond loopback without --insecure-plain.  The socket's
# mode is the umask's neither way: 0600 under umask 000, 0660 with
# --socket-group under umask 077.
# vm-disks: 16M 32M 32M 64M
# vm-timeout: 240
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/nbd-tls.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/nbd-tls.sh"
CHJ=$CHJ_ROOT/userspace/chj
BACKUP="/usr/bin/python3 $CHJ_ROOT/examples/nbd-image-backup.py"
IMG=/tmp/bk/backup.img
SOCK=/tmp/nbd.sock TMPD=/tmp/exp
PKI=/tmp/bk/pki NET=10.9.9.1
mkdir -p $TMPD /tmp/bk
N=$(sectors /dev/vdb)
step() { log "[${SECONDS}s] $*"; }

# The backup images and the credentials live on their own disk (/dev/vdd),
# across the reset.
[ "$CHJ_BOOT" != 1 ] || mkfs.ext4 -q /dev/vdd
mount /dev/vdd /tmp/bk
if [ "$CHJ_BOOT" = 1 ]; then
	tls_make_pki $PKI $NET
	step "x509 and PSK credentials made"
fi

# The origin is an LV-like snapshot-origin over /dev/vdb, chj on top, so
# dm-snapshot can freeze what the tracked device holds.
dm_create lv "0 $N snapshot-origin /dev/vdb" >/dev/null
$CHJ create data /dev/vda /dev/mapper/lv >/dev/null

snap_take() {
	dmsetup suspend lv
	dm_create snap "0 $N snapshot /dev/vdb /dev/vdc N 8" >/dev/null
	dmsetup resume lv
}

# merged "START LEN" lines (bytes) from "START LEN" lines on stdin
merge() { awk 'NF { if (n && $1 == s + l) l += $2; else { if (n) print s, l; s = $1; l = $2; n = 1 } }
	END { if (n) print s, l }'; }

# export_start SINCE [ARGS...]: serve the snapshot in the background
# (coproc) on ARGS (default --socket $SOCK), URI read from its stdout once
# qemu-nbd listens.
export_start() {
	local since=$1
	shift
	[ $# -gt 0 ] || set -- --socket $SOCK
	coproc EXP { exec $CHJ export data --since "$since" --snapshot /dev/mapper/snap \
		"$@" --tmpdir $TMPD; }
	read -r URI <&"${EXP[0]}" || fail "chj export printed no URI"
	[[ " $* " != *" --socket "* ]] || [ -S $SOCK ] || fail "no socket after the URI"
	[ -z "$(ls -A $TMPD)" ] || fail "the qcow2 wrapper is still in $TMPD while serving"
}
export_stop() {
	local pid=$EXP_PID rc=0
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	assert_eq 0 "$rc" "chj export exit status after SIGTERM"
	[ ! -e $SOCK ] || fail "socket left behind"
	! pgrep -x qemu-nbd >/dev/null || fail "qemu-nbd still running"
}

# map_check SINCE: the served dirty bitmap is exactly chj changes --since.
map_check() {
	$CHJ changes --since "$1" --bytes data | merge >/tmp/want
	nbdinfo --map=qemu:dirty-bitmap:chj "$(client_uri)" | awk '$3 == 1 { print $1, $2 }' | merge >/tmp/got
	diff /tmp/want /tmp/got || fail "dirty bitmap since epoch $1 differs from chj changes"
	[ -s /tmp/want ] || fail "nothing changed since epoch $1: the comparison proves nothing"
	step "bitmap since $1: $(wc -l </tmp/want) extents, as chj changes"
}

# TLS of the next backup: TLS_EXPORT (chj export's words after SINCE),
# TLS_URI (sed: the printed URI into nbdinfo's, credentials added),
# TLS_BACKUP (the example's options), TLS_CHECKS (a command run while
# serving, before the backup).  Unset: the socket, no TLS.
client_uri() { sed "${TLS_URI:-}" <<<"$URI"; }

# backup MODE SINCE: checkpoint, snapshot, export since SINCE, run the
# example, check its image against the snapshot; prints the new epoch into
# $CHJ_OUT/epoch.
backup() {
	local mode=$1 since=$2 new out want sum
	new=$($CHJ checkpoint data)
	snap_take
	# written after the snapshot: in the new epoch, not in this backup
	dd if=/dev/urandom of=/dev/mapper/data bs=4096 seek=100 count=2 oflag=direct conv=notrunc status=none
	export_start "$since" "${TLS_EXPORT[@]}"
	map_check "$since"
	${TLS_CHECKS:-}
	out=$($BACKUP ${mode:+--full} "${TLS_BACKUP[@]}" "$URI" "$IMG")
	step "backup: $out"
	export_stop
	want=$(sha256sum </dev/mapper/snap | cut -d' ' -f1)
	sum=$(awk '{ print $NF }' <<<"$out")
	assert_eq "$want" "$sum" "backup image checksum vs the snapshot"
	if [ -n "$mode" ]; then
		assert_eq $((N * 512)) "$(awk '{ print $6 }' <<<"$out")" "bytes read by a full backup"
	else
		assert_eq "$(awk '{ t += $2 } END { print t }' /tmp/want)" \
			"$(awk '{ print $6 }' <<<"$out")" "bytes read == dirty bytes"
	fi
	dmsetup remove snap
	echo "$new" >"$CHJ_OUT/epoch"
}

TLS_EXPORT=() TLS_BACKUP=()
# What nbdinfo says when the server wants TLS and the client has none:
# libnbd 1.14 (Debian 12) names it; 1.22 (Debian 13) only reports the
# export it never got (the TLS clients of the same server read it).
NO_TLS='requires TLS|server has not returned export size'

# While the PSK export of backup 2 serves: the socket is 0660, group 12345.
psk_checks() {
	local u="nbds+unix://backup1@/?socket=$SOCK&tls-psk-file=$PKI/nobody.psk"
	assert_eq "nbds+unix:///?socket=$SOCK" "$URI" "PSK socket URI"
	assert_eq "660 12345" "$(stat -c '%a %g' $SOCK)" "socket mode and group"
	refused "no TLS" "$NO_TLS" nbdinfo --size "nbd+unix:///?socket=$SOCK"
	refused "wrong PSK" "gnutls_handshake" \
		nbdinfo --size "nbds+unix://backup1@/?socket=$SOCK&tls-psk-file=$PKI/wrong.psk"
	refused "uid nobody, not in the group" "Permission denied" \
		setpriv --reuid=65534 --regid=65534 --clear-groups nbdinfo --size "$u"
	assert_eq $((N * 512)) "$(setpriv --reuid=65534 --regid=65534 --groups=12345 nbdinfo --size "$u")" \
		"size seen by uid nobody in group 12345"
}

# While the x509 export of backup 3 serves on $NET (not loopback).
x509_checks() {
	local u="nbds://$NET:10810/?tls-certificates=$PKI"
	assert_eq "nbds://$NET:10810/" "$URI" "x509 TCP URI"
	refused "no TLS" "$NO_TLS" nbdinfo --size "nbd://$NET:10810/"
	refused "a certificate not in --tls-authz" "gnutls" nbdinfo --size "$u/intruder"
	refused "no client certificate" "gnutls" nbdinfo --size "$u/nocert"
}

case $CHJ_BOOT in
1)
	step "raw writes, a full backup"
	wr /dev/mapper/data 0 1024
	wr /dev/mapper/data 20000 256
	backup full 1
	e1=$(cat "$CHJ_OUT/epoch")

	step "raw writes, sub-region and unaligned: incremental backup 1"
	dd if=/dev/urandom of=/dev/mapper/data bs=512 seek=20007 count=3 oflag=direct conv=notrunc status=none
	wr /dev/mapper/data 8192 64
	wr /dev/mapper/data 32764 4
	backup "" "$e1"
	e2=$(cat "$CHJ_OUT/epoch")

	step "ext4 workload: incremental backup 2, PSK over the socket"
	mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/data
	mkdir -p /tmp/m
	mount /dev/mapper/data /tmp/m
	cp -a /usr/share/doc/bash /usr/share/doc/e2fsprogs /tmp/m/
	head -c 2M /dev/urandom >/tmp/m/blob
	umount /tmp/m
	TLS_EXPORT=(--socket "$SOCK" --socket-group 12345 --tls-psk "$PKI/psk/keys.psk")
	TLS_URI="s|//|//backup1@|; s|\$|\&tls-psk-file=$PKI/psk/keys.psk|"
	TLS_BACKUP=(--tls-psk-file "$PKI/psk/keys.psk" --tls-username backup1)
	TLS_CHECKS=psk_checks
	# umask 077: --socket-group's 0660 does not depend on it either.
	mask=$(umask)
	umask 077
	backup "" "$e2"
	umask "$mask"
	TLS_EXPORT=() TLS_URI="" TLS_BACKUP=() TLS_CHECKS=""
	e3=$(cat "$CHJ_OUT/epoch")
	echo "$e3" >"$CHJ_OUT/e3"

	step "an older epoch: since $e1, chj export run with umask 000"
	snap_take
	mask=$(umask)
	umask 000
	export_start "$e1"
	umask "$mask"
	# 0600 whatever the umask: with 000 qemu-nbd alone would bind it 0777.
	assert_eq "600 0" "$(stat -c '%a %u' $SOCK)" "socket mode and owner under umask 000"
	refused "uid nobody on the 0600 socket" "Permission denied" \
		setpriv --reuid=65534 --regid=65534 --clear-groups nbdinfo --size "nbd+unix:///?socket=$SOCK"
	map_check "$e1"
	export_stop
	dmsetup remove snap

	step "writes, then a guest reset during the epoch"
	e4=$($CHJ checkpoint data)
	echo "$e4" >"$CHJ_OUT/e4"
	dd if=/dev/urandom of=/dev/mapper/data bs=4096 seek=3000 count=5 oflag=direct conv=notrunc,fsync status=none
	dd if=/dev/urandom of=/dev/mapper/data bs=512 seek=59999 count=1 oflag=direct conv=notrunc,fsync status=none
	vm_crash
	;;
2)
	e3=$(cat "$CHJ_OUT/e3") e4=$(cat "$CHJ_OUT/e4")
	step "after the reset: since $e4 holds the writes made before it"
	$CHJ changes --since "$e4" --bytes data >/tmp/crash
	for w in "$((3000 * 4096)) $((5 * 4096))" "$((59999 * 512)) 512"; do
		read -r s l <<<"$w"
		awk -v s="$s" -v l="$l" '$1 <= s && s + l <= $1 + $2 { f = 1 } END { exit !f }' /tmp/crash ||
			fail "write $s+$l before the reset is not in chj changes --since $e4"
	done
	snap_take
	export_start "$e4"
	map_check "$e4"
	export_stop
	export_start 1
	map_check 1
	export_stop
	dmsetup remove snap
	step "incremental backup 3, across the reset: x509 over TCP on $NET (a dummy interface)"
	ip link set lo up
	modprobe dummy
	ip link add d0 type dummy
	ip addr add $NET/24 dev d0
	ip link set d0 up
	TLS_EXPORT=(--tcp "$NET:10810" --tls-creds "$PKI/server" --tls-authz "O=chj,CN=backup1")
	TLS_URI="s|\$|?tls-certificates=$PKI/backup1|"
	TLS_BACKUP=(--tls-certificates "$PKI/backup1")
	TLS_CHECKS=x509_checks
	backup "" "$e3"
	TLS_EXPORT=() TLS_URI="" TLS_BACKUP=() TLS_CHECKS=""

	step "bad input"
	snap_take
	bad() { # EXPECTED_RC MESSAGE ARGS...
		local want=$1 msg=$2 rc=0
		shift 2
		$CHJ export "$@" 2>/tmp/err >/dev/null || rc=$?
		assert_eq "$want" "$rc" "exit status of chj export $*"
		grep -q "^chj: .*$msg" /tmp/err || fail "chj export $*: said '$(cat /tmp/err)', not '$msg'"
		[ -z "$(ls -A $TMPD)" ] || fail "chj export $*: left $(ls $TMPD) behind"
		assert_eq "${SERVERS:-0}" "$(pgrep -c -x qemu-nbd || true)" "qemu-nbd servers after chj export $*"
	}
	S=(--snapshot /dev/mapper/snap --tmpdir "$TMPD")
	bad 3 "newer than the current epoch" data --since 999 "${S[@]}" --socket $SOCK
	bad 3 "full backup" data --since 0 "${S[@]}" --socket $SOCK
	bad 1 "not a chj device" lv --since 1 "${S[@]}" --socket $SOCK
	bad 1 "snapshot is 16777216 bytes" data --since 1 --snapshot /dev/vda --tmpdir $TMPD --socket $SOCK
	bad 1 "is the origin itself" data --since 1 --snapshot /dev/mapper/lv --tmpdir $TMPD --socket $SOCK
	bad 1 "is the tracked device itself" data --since 1 --snapshot /dev/mapper/data --tmpdir $TMPD --socket $SOCK
	bad 2 "finer than the region size" data --since 1 "${S[@]}" --socket $SOCK --granularity 512
	bad 2 "not a loopback address, without TLS: anyone" data --since 1 "${S[@]}" --tcp $NET:10811
	bad 2 "every address (HOST empty), without TLS" data --since 1 "${S[@]}" --tcp :10811
	bad 2 "no such group" data --since 1 "${S[@]}" --socket $SOCK --socket-group no-such-group
	bad 1 "server-cert.pem: No such file" data --since 1 "${S[@]}" --tcp $NET:10811 --tls-creds $PKI/backup1
	echo keep >/tmp/taken
	bad 1 "socket path taken" data --since 1 "${S[@]}" --socket /tmp/taken
	assert_eq keep "$(cat /tmp/taken)" "the file at the taken socket path"
	[ ! -e $SOCK ] || fail "a socket was left behind"

	step "plain TCP on $NET with --insecure-plain"
	export_start 1 --tcp $NET:10811 --insecure-plain
	assert_eq "nbd://$NET:10811/" "$URI" "plain TCP URI"
	assert_eq $((N * 512)) "$(nbdinfo --size "$URI")" "size over plain TCP"
	export_stop

	step "TCP, a coarser granularity, --fork; the port taken"
	$CHJ export data --since "$e4" "${S[@]}" --tcp 127.0.0.1:10809 --granularity 64K \
		--fork --pid-file /tmp/srv.pid >/tmp/uri
	assert_eq "nbd://127.0.0.1:10809/" "$(cat /tmp/uri)" "TCP URI"
	$CHJ changes --since "$e4" --bytes data |
		awk '{ s = int($1 / 65536) * 65536; e = int(($1 + $2 + 65535) / 65536) * 65536; print s, e - s }' |
		merge >/tmp/want
	nbdinfo --map=qemu:dirty-bitmap:chj nbd://127.0.0.1:10809/ | awk '$3 == 1 { print $1, $2 }' | merge >/tmp/got
	diff /tmp/want /tmp/got || fail "64K bitmap is not chj changes rounded outward to 64K"
	SERVERS=1 bad 1 "could not start the export" data --since 1 "${S[@]}" --tcp 127.0.0.1:10809
	kill "$(cat /tmp/srv.pid)"
	dmsetup remove snap
	$CHJ remove data
	dmsetup remove lv
	umount /tmp/bk
	step "ok"
	;;
esac
