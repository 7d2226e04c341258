# shellcheck shell=bash
# Sourced by the host tests of tests/resolve: a scratch directory for one
# loop-device filesystem, removed at exit (KEEP=1 keeps it).
#   . "$here/scratch.sh" NAME
# sets work ($TMPDIR/chj-NAME.XXXXXX), mnt ($work/mnt), img ($work/dev.img)
# and loop (empty: the caller attaches the image), and traps EXIT to
# unmount mnt, detach loop and remove work.
#   detach_loop DEV   detach DEV, tolerating one the kernel already
#                     detached (noted on stderr)
work=$(mktemp -d "${TMPDIR:-/tmp}/chj-${1:?scratch.sh: a name}.XXXXXX")
mnt=$work/mnt
img=$work/dev.img
loop=
# Once (make check, Linux 6.18 host) losetup -d found a loop device unbound
# right after its filesystem was unmounted, and the test died in its
# cleanup: a detach is not what the tests check, so an unbound device is
# noted, and a bound one that will not detach still fails.
detach_loop() {
	losetup -d "$1" 2>/dev/null && return
	if losetup "$1" >/dev/null 2>&1; then
		losetup -d "$1"
		return
	fi
	echo "note: $1 was already detached" >&2
}
cleanup() {
	set +e
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loop" ] && detach_loop "$loop"
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
