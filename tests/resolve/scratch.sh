# shellcheck shell=bash
# Sourced by the host tests of tests/resolve, with here= their directory:
# the preamble they share and a scratch directory for one loop-device
# filesystem, removed at exit (KEEP=1 keeps it).
#   . "$here/scratch.sh" NAME
# sets root (the tree), RESOLVE (chj-resolve-test: chj-resolve with the
# test hooks, CHJ_RESOLVE_CHANGES; CHJ_RESOLVE_TEST names another build of
# it, scripts/run-checks: UBSan's), TRUTH (fstruth.py, the ground truth),
# work ($TMPDIR/chj-NAME.XXXXXX), mnt ($work/mnt), img ($work/dev.img)
# and loop (empty: the caller attaches the image), defines
#   fail MSG...       "FAIL: NAME: MSG" and exit 1 (a test may redefine it)
#   detach_loop DEV   detach DEV, tolerating one the kernel already
#                     detached (noted on stderr)
# and traps EXIT to unmount mnt, detach loop and remove work.
root=$(cd "${here:?scratch.sh: here= the test directory}/../.." && pwd)
RESOLVE=${CHJ_RESOLVE_TEST:-$root/userspace/chj-resolve-test}
TRUTH=$here/fstruth.py
scratch_name=${1:?scratch.sh: a name}
fail() { echo "FAIL: $scratch_name: $*"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/chj-$scratch_name.XXXXXX")
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
