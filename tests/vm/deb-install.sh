#!/bin/bash
# The Debian packages (make deb: build/deb/chj_*.deb, dm-chj-dkms_*.deb)
# installed as a user installs them, used, and removed:
#   - apt-get install ./chj_*.deb ./dm-chj-dkms_*.deb, offline, on the
#     guest's system: the host's root, read-only, with an overlay (tmpfs
#     upper) over it that the test chroots into, so dpkg's database and
#     everything the packages install live in the guest only;
#   - DKMS built the module for the running kernel at install (the
#     package's postinst), and it is the tree's module (version, srcversion);
#     modprobe loads it from /lib/modules/KVER/updates/dkms;
#   - the quick start runs from /usr/sbin (chj create, mkfs, mount,
#     checkpoint, changes, chj-resolve lists the file written);
#   - boot activation through the packaged generator
#     (/usr/lib/systemd/system-generators/chj-generator, /etc/chjtab): its
#     unit's ExecStart runs /usr/sbin/chj and brings the device back with
#     its epochs;
#   - a second kernel's headers, installed after the package, make DKMS
#     build the module for that kernel: its headers are hidden at install
#     (the build link /lib/modules/K2/build removed in the overlay), then
#     put back and the headers package's postinst run, as dpkg runs it when
#     linux-headers-K2 is installed (linux-run-hooks: the dkms hook in
#     /etc/kernel/header_postinst.d/);
#   - apt-get remove, then dpkg --purge: every file the packages installed is
#     gone after remove, and after purge nothing is left that was not
#     there before the install (the overlay's upper directory, listed
#     before and after, checked against the lower root), beside dpkg's and
#     apt's own records.
# vm-disks: 32M 128M
# The guest's install runs DKMS's build under TCG: 344 s for 6.1 alone
# (measured on a loaded host), so this test runs in make check-long only.
# vm-long-only: yes
# vm-timeout: 1500
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"

read -r kver </proc/sys/kernel/osrelease
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$CHJ_ROOT/dkms.conf")
debs=("$CHJ_ROOT"/build/deb/chj_"$ver"_*.deb "$CHJ_ROOT"/build/deb/dm-chj-dkms_"$ver"_all.deb)
for d in "${debs[@]}"; do
	[ -f "$d" ] || fail "no $d: run 'make deb'"
done
# The second kernel: another one with headers (Debian 12's 6.12).
k2=
for d in /lib/modules/*/build; do
	k=${d#/lib/modules/}
	k=${k%/build}
	[ "$k" = "$kver" ] || [ ! -e "$d/include" ] || k2=$k
done

OV=/tmp/ov
R=$OV/root
mkdir -p "$OV/upper" "$OV/work" "$R"
mount -t overlay overlay -o "lowerdir=/,upperdir=$OV/upper,workdir=$OV/work" "$R"
for d in proc sys dev run; do mount --rbind "/$d" "$R/$d"; done
mount -t tmpfs tmpfs "$R/tmp"
# in_ov CMD...: CMD in the overlay root, with a clean environment.
in_ov() {
	chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive DM_DISABLE_UDEV=1 "$@"
}
# upper_list: what the overlay holds that the lower root does not, one
# "TYPE PATH" a line (c: a whiteout, a file of the lower root deleted).
upper_list() {
	(cd "$OV/upper" && find . -mindepth 1 \( -type c -printf 'c %P\n' \) -o \( ! -type d -printf 'f %P\n' \)) | sort
}
# The records dpkg, apt and their triggers keep of what was installed and
# removed (not the packages' files): ignored in the before/after lists.
# var/lib/dkms/mok.key and mok.pub: the signing key dkms makes at its first
# build, dkms's own and shared by every DKMS package (dkms's purge, not
# dm-chj-dkms's, removes it).
RECORDS='^(c|f) (var/lib/dkms/mok\.(key|pub)$|var/lib/dpkg/|var/lib/apt/|var/cache/apt/|var/cache/debconf/|var/cache/man/|var/cache/ldconfig/|var/log/|etc/ld\.so\.cache$)'

if [ -n "$k2" ]; then
	log "second kernel $k2: its headers hidden until after the install"
	k2link=$(readlink "$R/lib/modules/$k2/build")
	rm "$R/lib/modules/$k2/build"
else
	log "no second kernel with headers installed: the header hook step is skipped (make deps installs 6.12's)"
fi
# depmod (which dkms runs after each build and removal) reads every module
# of the kernel: over 9p through the overlay under TCG that took more than
# 300 s for 6.1's 4000.  The stock modules are hidden from it (an empty
# tmpfs over /lib/modules/K/kernel in the overlay), so it indexes dm-chj's
# alone; the modules dm-chj needs are loaded already (vm-guest).
for k in $kver $k2; do mount -t tmpfs tmpfs "$R/lib/modules/$k/kernel"; done
# The guest's system is the host's root, where chj-resolve may have run from
# the tree (its caches in /var/cache/chj-resolve: seen after host runs of
# chj-resolve-test): the purge removes that directory, rightly for the
# package, so it would read as a system file deleted.  A system that never
# had chj is what the packages are installed on: the directory is hidden
# (a whiteout in the overlay, in the before list like the after's).
rm -rf "$R/var/cache/chj-resolve"
upper_list >"$OV/before"

log "apt-get install ./chj_*.deb ./dm-chj-dkms_*.deb (offline)"
mkdir -p "$R/tmp/debs"
cp "${debs[@]}" "$R/tmp/debs/"
start=$SECONDS
in_ov apt-get install -y -q --no-install-recommends \
	/tmp/debs/"${debs[0]##*/}" /tmp/debs/"${debs[1]##*/}" >"$CHJ_OUT/install.log" 2>&1 ||
	{ cat "$CHJ_OUT/install.log"; fail "apt-get install of the packages"; }
log "installed in $((SECONDS - start)) s (DKMS's build for $kver included)"
for p in chj dm-chj-dkms; do
	in_ov dpkg-query -W -f='${Status}\n' "$p" | grep -qx 'install ok installed' || fail "$p is not installed"
	in_ov dpkg -L "$p" >>"$OV/files"
done
for f in /usr/sbin/chj /usr/sbin/chj-resolve /usr/share/man/man8/chj.8.gz /usr/share/man/man8/chj-resolve.8.gz \
	/usr/lib/systemd/system-generators/chj-generator /usr/share/doc/chj/examples/rsync-backup.sh \
	/usr/share/doc/chj/chjtab.example "/usr/src/dm-chj-$ver/dkms.conf"; do
	grep -qx "$f" "$OV/files" || fail "$f is not in the packages"
	[ -e "$R$f" ] || fail "$f not installed"
done

log "DKMS built dm-chj $ver for $kver, and it is the tree's module"
in_ov dkms status dm-chj | tee "$CHJ_OUT/dkms-status"
grep -q "^dm-chj/$ver, $kver, [^:]*: installed" "$CHJ_OUT/dkms-status" || fail "dkms status: not installed for $kver"
ko=$(ls "$R/lib/modules/$kver/updates/dkms/"dm-chj.ko*)
assert_eq "$ver" "$(modinfo -F version "$ko")" "version of the DKMS module"
want=$(cat /sys/module/dm_chj/srcversion)
assert_eq "$want" "$(modinfo -F srcversion "$ko")" "srcversion of the DKMS module (the tree's: $CHJ_KO)"
rmmod dm_chj
in_ov modprobe dm-chj
[ -d /sys/module/dm_chj ] || fail "modprobe dm-chj in the installed system loaded nothing"
in_ov modinfo -n dm-chj | grep -q "/lib/modules/$kver/updates/dkms/dm-chj.ko" ||
	fail "modprobe finds dm-chj at $(in_ov modinfo -n dm-chj), not DKMS's"
[ -z "$k2" ] || ! in_ov dkms status dm-chj -k "$k2" | grep -q installed ||
	fail "DKMS built for $k2, whose headers were hidden"

log "the quick start, from /usr/sbin"
assert_eq /usr/sbin/chj "$(in_ov sh -c 'command -v chj')" "chj on PATH"
assert_eq /usr/sbin/chj-resolve "$(in_ov sh -c 'command -v chj-resolve')" "chj-resolve on PATH"
in_ov chj metadata-size --origin-size 100G | grep -Eq '^metadata size ' || fail "chj metadata-size"
in_ov chj create data /dev/vda /dev/vdb >/dev/null
[ -b /dev/mapper/data ] || dm_node data >/dev/null
in_ov mkfs.ext4 -q -E lazy_itable_init=0 /dev/mapper/data
mkdir -p "$R/tmp/srv"
in_ov mount -o noatime /dev/mapper/data /tmp/srv
in_ov sh -c 'seq 1 2000 >/tmp/srv/old.txt && sync'
assert_eq 2 "$(in_ov chj checkpoint data)" "chj checkpoint"
in_ov sh -c 'seq 1 5000 >/tmp/srv/new.txt && sync'
in_ov chj changes --since 2 data >"$CHJ_OUT/changes"
[ -s "$CHJ_OUT/changes" ] || fail "chj changes --since 2: nothing after a write"
in_ov chj-resolve --since 2 /dev/mapper/data >"$CHJ_OUT/resolve"
grep -qx '/tmp/srv/new.txt' "$CHJ_OUT/resolve" || { cat "$CHJ_OUT/resolve"; fail "chj-resolve does not list new.txt"; }
in_ov umount /tmp/srv
in_ov chj remove data

log "boot activation through the packaged generator and /etc/chjtab"
printf 'data /dev/vda /dev/vdb region-size=4K\n' >"$R/etc/chjtab"
mkdir -p "$R/tmp/gen"
in_ov /usr/lib/systemd/system-generators/chj-generator /tmp/gen
unit=$R/tmp/gen/chj-data.service
[ -L "$R/tmp/gen/local-fs.target.requires/chj-data.service" ] || fail "no unit wanted by local-fs.target"
grep -q '^ExecStart=/usr/sbin/chj create data ' "$unit" || fail "ExecStart: $(grep ExecStart "$unit")"
sed -n 's/^ExecStart=//p' "$unit" >"$R/tmp/exec"
in_ov sh -e /tmp/exec
[ -b /dev/mapper/data ] || dm_node data >/dev/null
assert_eq 2 "$(st data cur)" "epoch after activation (the checkpoint kept)"
in_ov chj remove data
rm "$R/etc/chjtab"

if [ -n "$k2" ]; then
	log "the headers of $k2 installed: their postinst's dkms hook builds dm-chj for $k2"
	ln -s "$k2link" "$R/lib/modules/$k2/build"
	start=$SECONDS
	in_ov "/var/lib/dpkg/info/linux-headers-$k2.postinst" configure >"$CHJ_OUT/headers-postinst.log" 2>&1 ||
		{ cat "$CHJ_OUT/headers-postinst.log"; fail "linux-headers-$k2's postinst"; }
	log "DKMS's build for $k2: $((SECONDS - start)) s"
	in_ov dkms status dm-chj -k "$k2" | grep -q "^dm-chj/$ver, $k2, [^:]*: installed" ||
		{ cat "$CHJ_OUT/headers-postinst.log"; fail "dkms status: dm-chj not installed for $k2"; }
	ko2=$(ls "$R/lib/modules/$k2/updates/dkms/"dm-chj.ko*)
	magic=$(modinfo -F vermagic "$ko2")
	assert_eq "$k2" "${magic%% *}" "vermagic of the module DKMS built for $k2"
	rm "$R/lib/modules/$k2/build"
fi

log "apt-get remove: every file of the packages is gone"
rmmod dm_chj
in_ov apt-get remove -y -q chj dm-chj-dkms >"$CHJ_OUT/remove.log" 2>&1 ||
	{ cat "$CHJ_OUT/remove.log"; fail "apt-get remove"; }
left=0
while IFS= read -r f; do
	[ -d "$R$f" ] || [ ! -e "$R$f" ] || { echo "left after remove: $f"; left=1; }
done <"$OV/files"
[ $left = 0 ] || fail "apt-get remove left files of the packages"
ls "$R/lib/modules/"*/updates/dkms/dm-chj.ko* 2>/dev/null && fail "a DKMS module is left after remove"
[ ! -e "$R/var/lib/dkms/dm-chj" ] || fail "/var/lib/dkms/dm-chj is left after remove"

log "dpkg --purge: nothing left that was not there before the install"
# dpkg, not apt-get: packages installed from local files and removed
# without conffiles are unknown to apt ("Unable to locate package") once
# removed; dpkg --purge drops whatever dpkg still records of them.
in_ov dpkg --purge chj dm-chj-dkms >"$CHJ_OUT/purge.log" 2>&1 ||
	{ cat "$CHJ_OUT/purge.log"; fail "dpkg --purge"; }
in_ov dpkg-query -W -f='${db:Status-Abbrev}' chj dm-chj-dkms 2>/dev/null | grep -q 'i' &&
	fail "dpkg still knows the packages after purge"
rm -r "$R/tmp/debs"
upper_list >"$OV/after"
comm -13 <(grep -Ev "$RECORDS" "$OV/before") <(grep -Ev "$RECORDS" "$OV/after") >"$OV/new"
# A file of the lower root copied up (modified) is not new: only what the
# lower root has not, or a deletion of what it has.
: >"$CHJ_OUT/left"
while read -r type f; do
	if [ "$type" = c ] || [ ! -e "/$f" ]; then echo "$type $f" >>"$CHJ_OUT/left"; fi
done <"$OV/new"
if [ -s "$CHJ_OUT/left" ]; then
	cat "$CHJ_OUT/left"
	fail "purge left files behind (f) or deleted the system's (c) (above)"
fi
log ok
