# shellcheck shell=bash
# Sourced by the host tests of tests/resolve: a scratch directory for one
# loop-device filesystem, removed at exit (KEEP=1 keeps it).
#   . "$here/scratch.sh" NAME
# sets work ($TMPDIR/chj-NAME.XXXXXX), mnt ($work/mnt), img ($work/dev.img)
# and loop (empty: the caller attaches the image), and traps EXIT to
# unmount mnt, detach loop and remove work.
work=$(mktemp -d "${TMPDIR:-/tmp}/chj-${1:?scratch.sh: a name}.XXXXXX")
mnt=$work/mnt
img=$work/dev.img
loop=
cleanup() {
	set +e
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
