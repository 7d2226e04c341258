# shellcheck shell=bash
# Helpers for the dm-log-writes crash-point tests (crash-logwrites.sh,
# manual/crash-logwrites-broken.sh), sourced after lib.sh and chj.sh.
#
# The stack: /dev/ram0 under log-writes "lw" (log on /dev/ram1), split by
# dm-linear into metadata "lwm" (LW_META_S sectors) and origin "lwo"
# (LW_ORIG_S sectors), optionally dm-delay "lwd" on the metadata, chj "c"
# over them.  log-writes starts on an all-zero disk before chj formats, so
# the log holds everything and lw-replay starts from zeros.

LW=$CHJ_ROOT/tests/logwrites/lw-replay
CHJ=$CHJ_ROOT/userspace/chj
[ -x "$LW" ] || fail "$LW is not built: run make"
: "${LW_META_S:=$((8 << 11))}" "${LW_ORIG_S:=$((256 << 11))}"
LW_DEV_S=$((LW_META_S + LW_ORIG_S))

# lw_up RS DELAY_MS: fresh RAM disks and the stack, chj at region size RS;
# metadata writes delayed DELAY_MS by dm-delay unless 0.  A data write
# issued before its mark completed then overtakes the mark in the log.
lw_up() {
	local rs=$1 delay=$2 meta=/dev/mapper/lwm
	brd_setup 2 $((1024 * 1024))	# all-zero: ram0 the device, ram1 the log
	dm_create lw "0 $LW_DEV_S log-writes /dev/ram0 /dev/ram1" >/dev/null
	dm_create lwm "0 $LW_META_S linear /dev/mapper/lw 0" >/dev/null
	dm_create lwo "0 $LW_ORIG_S linear /dev/mapper/lw $LW_META_S" >/dev/null
	if [ "$delay" != 0 ]; then
		meta=$(dm_create lwd "0 $LW_META_S delay /dev/mapper/lwm 0 0 /dev/mapper/lwm 0 $delay")
	fi
	dm_create c "$(chj_table "$meta" /dev/mapper/lwo "$rs")" >/dev/null
}

# lw_mark: end the epoch and mark the log; sets E, the epoch that begins.
lw_mark() {
	E=$(dmsetup message c 0 checkpoint) || fail "checkpoint"
	dmsetup message lw 0 mark base
}

# lw_down: remove the stack (other devices over c first); the log ends.
# Sets LW_LOG_SECTORS, about how much of /dev/ram1 the log uses: read once
# chj is gone (its clean shutdown writes metadata too), short of the few
# entries log-writes' thread has yet to write and its end mark, which
# lw_save_log's margin holds.
lw_down() {
	local lws
	dmsetup remove c
	if dmsetup info lwd >/dev/null 2>&1; then dmsetup remove lwd; fi
	dmsetup remove lwm
	dmsetup remove lwo
	lws=$(dmsetup status lw)
	[[ $lws != *logging_disabled* ]] || fail "log-writes stopped logging (log device full?)"
	# "0 LEN log-writes ENTRIES HIGHEST_SECTOR"
	read -r _ _ _ _ LW_LOG_SECTORS _ <<<"$lws"
	dmsetup remove lw
}

# lw_replay RS [lw-replay options...]: check the log (LW_LOG: /dev/ram1,
# or a log saved with lw_save_log) since the mark.
lw_replay() {
	local rs=$1
	shift
	"$LW" --metadata-sectors "$LW_META_S" --device-sectors "$LW_DEV_S" --since "$E" \
		--mark base --region-sectors "$rs" --chj "$CHJ" "$@" "${LW_LOG:-/dev/ram1}"
}

# lw_expect_fail WHAT RS [options]: the checker must find a violation.
lw_expect_fail() {
	local what=$1 rc=0 out
	shift
	out=$(lw_replay "$@" 2>&1) || rc=$?
	printf '%s\n' "$out" | sed -n 's/^/    /; 1,14p'
	[ $rc = 1 ] || fail "$what: lw-replay exited $rc, expected 1 (violation)"
	grep -q 'VIOLATION at crash point' <<<"$out" || fail "$what: no violation reported"
	log "$what: caught, as it must be"
}

# lw_save_log FILE: copy the log (for lw-replay on the host) to FILE, with
# 16 MiB more than lw_down saw in use (the end mark, entries still queued
# then); sparse: past the log's end the fresh RAM disk holds zeros.
lw_save_log() {
	dd if=/dev/ram1 of="$1" bs=1M count=$((LW_LOG_SECTORS / 2048 + 16)) conv=sparse status=none
	log "log saved: $1 (replay it on the host with tests/logwrites/lw-replay)"
}
