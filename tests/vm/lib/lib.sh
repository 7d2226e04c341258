# shellcheck shell=bash
# Helpers for the VM scripts (tests/vm/*.sh and the others scripts/vm-test
# runs: scripts/lib/vm-scripts.sh), which run as root in the guest under
# bash with the harness's environment:
#   CHJ_OUT   writable results dir (build/vm/NAME/out on the host)
#   CHJ_ROOT  the repo (read-only), CHJ_TEST the test name, CHJ_SCRIPT its
#             script (a path in the repo)
#   CHJ_BOOT  1 on the first boot, 2 after the first vm_crash, ...
# The host's root is mounted read-only; /tmp, /var/tmp, /run, /dev/shm are
# tmpfs.  There is no udev: DM_DISABLE_UDEV=1 is set, and dm nodes under
# /dev/mapper are made with dm_node (dmsetup mknodes).
#
# Sourcing this turns on errexit, nounset and pipefail: any failing command
# fails the test, with the command and line printed by the ERR trap.
set -eEuo pipefail
# ...also inside $(...), so "dev=$(dm_create ...)" stops at the first error.
shopt -s inherit_errexit
_lib_on_err() { # STATUS LINE FILE
	# Bash runs the ERR trap even under "set +e": only speak when errexit is on.
	[[ $- != *e* ]] || echo "FAIL: ${3##*/}:$2: \"$BASH_COMMAND\" exited $1" >&2
}
trap '_lib_on_err $? $LINENO "${BASH_SOURCE[0]}"' ERR

# Print a progress line.
# short: true in a short run (VM_SHORT=1: make check's second kernel), where
# a test with several configurations runs only the one its header names.
short() { [ "${CHJ_SHORT:-0}" = 1 ]; }

# log MSG: a step of the test, stamped with the guest's uptime (no fork:
# read is a builtin), so a slow step shows in the console log.
log() {
	local up _
	read -r up _ </proc/uptime
	echo "--- [$up] $*"
}

# fail MSG: print MSG and fail the test (from a subshell, only it exits).
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
	[ "$1" = "$2" ] || fail "${3:-value}: expected '$1', got '$2'"
}

# brd_setup COUNT SIZE_KiB: COUNT RAM disks /dev/ram0.. of SIZE_KiB each,
# zero-filled (brd allocates pages on first write and reads zeros before).
brd_setup() {
	if [ -d /sys/module/brd ]; then rmmod brd; fi
	modprobe brd rd_nr="$1" rd_size="$2"
	[ -b /dev/ram$(($1 - 1)) ] || fail "brd_setup: /dev/ram$(($1 - 1)) did not appear"
}

# dm_node NAME: create /dev/mapper/NAME (no udev in the guest) and print it.
dm_node() {
	dmsetup mknodes "$1"
	[ -b "/dev/mapper/$1" ] || fail "dm_node: /dev/mapper/$1 missing"
	echo "/dev/mapper/$1"
}

# dm_create NAME TABLE: create a dm device and print its /dev/mapper path.
# (With udev disabled libdevmapper makes the node itself: dm_node, one more
# dmsetup at 65 ms under TCG, only for a node that is missing.)
dm_create() {
	dmsetup create "$1" --table "$2"
	if [ -b "/dev/mapper/$1" ]; then echo "/dev/mapper/$1"; else dm_node "$1"; fi
}

# use_module KO: dm_chj replaced by the build in KO (a broken control, an
# older commit's; $CHJ_KO is this tree's).  No dm-chj table may be loaded.
use_module() {
	rmmod dm_chj
	insmod "$1"
}

# dm_sysdir NAME: set DM_SYSDIR to the sysfs directory (/sys/block/dm-N) of
# dm device NAME; false if there is none.  (No process, and none to read
# its output: each costs 50 ms or more under TCG.)
dm_sysdir() {
	local f n
	for f in /sys/block/dm-*/dm/name; do
		if read -r n <"$f" && [ "$n" = "$1" ]; then
			DM_SYSDIR=${f%/dm/name}
			return 0
		fi
	done
	return 1
}

# dm_writes NAME: set DM_WRITES to the number of writes dm device NAME has
# completed (the fifth field of its sysfs stat); for polling until a
# writer's I/O flows, without a process per poll.
dm_writes() {
	dm_sysdir "$1" || fail "no dm device $1"
	# shellcheck disable=SC2034 # read by the caller
	read -r _ _ _ _ DM_WRITES _ <"$DM_SYSDIR/stat"
}

# sectors DEV: size of a block device in 512-byte sectors, from sysfs (dm
# devices by their name there): blockdev only for what sysfs does not
# name so, as a process costs 50 ms or more under TCG.
sectors() {
	local d=$1 n
	case $d in
	/dev/mapper/*)
		if dm_sysdir "${d#/dev/mapper/}" && read -r n <"$DM_SYSDIR/size"; then
			echo "$n"
			return 0
		fi ;;
	/dev/*)
		if [ -r "/sys/class/block/${d#/dev/}/size" ]; then
			read -r n <"/sys/class/block/${d#/dev/}/size"
			echo "$n"
			return 0
		fi ;;
	esac
	blockdev --getsz "$d"
}

# vm_crash: reset the guest now, without syncing anything, like a power cut.
# The harness boots again on the same disk files with CHJ_BOOT+1.  Sync what
# the test must see after the crash before calling this.
vm_crash() {
	log "crash at the end of boot $CHJ_BOOT"
	dmesg >"$CHJ_OUT/dmesg-$CHJ_BOOT.txt"
	echo "$CHJ_BOOT" >"$CHJ_OUT/reboot"
	# Only the results share is synced (9p: written straight to the host).
	sync -f "$CHJ_OUT/reboot"
	echo b >/proc/sysrq-trigger
	sleep 30
	fail "vm_crash: the sysrq reset did not happen"
}
