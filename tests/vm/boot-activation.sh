#!/bin/bash
# Boot-time activation, installed as the README says (`make install`, the
# default PREFIX=/usr/local): the installed chj-generator turns chjtab lines
# into units whose ExecStart runs the installed chj; running them unchanged
# (twice: chj create is idempotent) yields working tracked devices that keep
# their marks across a crash.  An origin mounted directly cannot be tracked behind its back:
# dm-chj claims it exclusively, so activation fails loudly while it is
# mounted, and mounting it while tracked fails.
# vm-disks: 32M 128M
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
CHJ=/usr/local/sbin/chj
GEN=/usr/lib/systemd/system-generators/chj-generator

# make install into a staging DESTDIR (the repo is read-only here, and was
# built on the host: -o skips rebuilding it), then the staged trees mounted
# where make install puts them, so the paths are the installed ones.
install_as_readme() {
	local kver
	kver=$(make -s -C "$CHJ_ROOT" -o module -o userspace install DESTDIR=/tmp/inst \
		>/tmp/install.log 2>&1 && ls /tmp/inst/lib/modules) ||
		{ cat /tmp/install.log; fail "make install"; }
	[ -x /tmp/inst$CHJ ] || fail "make install did not put chj at $CHJ"
	cmp /tmp/inst/lib/modules/"$kver"/updates/dm-chj.ko "$CHJ_ROOT/dm-target/dm-chj.ko" ||
		fail "installed module differs"
	mount --bind /tmp/inst/usr/local /usr/local
	mount --bind /tmp/inst/usr/lib/systemd/system-generators /usr/lib/systemd/system-generators
	[ -x "$GEN" ] || fail "generator not installed at $GEN"
}

# The ExecStart lines of the generated units, as systemd would run them.
activate() {
	local dir
	dir=$(mktemp -d)
	printf '# test chjtab\ndata /dev/vda /dev/vdb region-size=4K\n\nbroken /dev/vda\n' >/tmp/chjtab
	CHJTAB=/tmp/chjtab "$GEN" "$dir" 2>"$dir/err"
	grep -q "chjtab:4: expected NAME" "$dir/err" || fail "bad line not reported"
	[ -L "$dir/local-fs.target.requires/chj-data.service" ] || fail "unit not wanted by local-fs.target"
	grep -q '^Before=local-fs-pre.target' "$dir/chj-data.service" || fail "unit not ordered before local-fs-pre"
	grep -q "^ExecStart=$CHJ create data " "$dir/chj-data.service" ||
		fail "ExecStart does not run the installed chj: $(grep ExecStart "$dir/chj-data.service")"
	for _ in 1 2; do
		sed -n 's/^ExecStart=//p' "$dir/chj-data.service" | sh -e || return 1
	done
	dm_node data >/dev/null
}

install_as_readme
case $CHJ_BOOT in
1)
	activate || fail "activation"
	mkfs.ext4 -q /dev/mapper/data
	$CHJ checkpoint data >/dev/null
	wr /dev/mapper/data 65536 4
	st data marked >"$CHJ_OUT/marked"
	vm_crash
	;;
2)
	activate || fail "activation after the crash"
	# Format 2: the chunk marked at the crash counts whole (a coarse epoch).
	assert_eq 2 "$(st data cur)" "epoch after crash + activation"
	[ "$(st data marked)" -ge "$(cat "$CHJ_OUT/marked")" ] ||
		fail "marks after crash + activation: $(st data marked), $(cat "$CHJ_OUT/marked") before"
	log "the origin cannot be mounted directly while tracked"
	mkdir -p /tmp/m
	if mount -o ro,noload /dev/vdb /tmp/m 2>/dev/null; then fail "origin mounted behind the tracker"; fi
	log "an origin mounted directly cannot be activated"
	$CHJ remove data
	mount -o ro,noload /dev/vdb /tmp/m
	if activate 2>/tmp/err; then fail "activation over a mounted origin"; fi
	grep -q "EBUSY" /tmp/err || { cat /tmp/err; fail "no clear error"; }
	umount /tmp/m
	activate || fail "activation after unmount"
	log "ok"
	;;
esac
