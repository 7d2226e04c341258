# shellcheck shell=bash
# Helpers for dm-chj VM tests, sourced after lib.sh.

# (These parse with bash's own read and case: under TCG every awk or tr is
# a process start of 50 ms or more.)

# st NAME FIELD: one field of the chj status line.  Fields:
#   rs cur old marked nr jused jblocks mode
st() {
	local line rs cur old marked jused mode
	line=$(dmsetup status "$1") || fail "dmsetup status $1"
	# 0 LEN chj RS CUR OLD MARKED/NR JUSED/JB MODE
	read -r _ _ _ rs cur old marked jused mode _ <<<"$line"
	case $2 in
	rs) echo "$rs" ;;
	cur) echo "$cur" ;;
	old) echo "$old" ;;
	marked) echo "${marked%%/*}" ;;
	nr) echo "${marked#*/}" ;;
	jused) echo "${jused%%/*}" ;;
	jblocks) echo "${jused#*/}" ;;
	mode) echo "$mode" ;;
	*) fail "st: unknown field $2" ;;
	esac
}

# chj_stat NAME KEY: one counter of the "stats" message (docs/dm-chj.txt).
chj_stat() {
	local line kv
	line=$(dmsetup message "$1" 0 stats) || fail "dmsetup message $1 0 stats"
	for kv in $line; do
		if [ "${kv%%=*}" = "$2" ]; then
			echo "${kv#*=}"
			return 0
		fi
	done
	fail "chj_stat: no $2 in '$line'"
}

# status_mode NAME: the mode word (last field).
status_mode() {
	local line f
	line=$(dmsetup status "$1") || fail "dmsetup status $1"
	read -ra f <<<"$line"
	echo "${f[-1]}"
}

# wr DEV OFFSET_KiB COUNT_KiB: write random data, O_DIRECT, 4 KiB blocks.
wr() {
	dd if=/dev/urandom of="$1" bs=4096 seek=$(($2 / 4)) count=$(($3 / 4)) \
		oflag=direct conv=notrunc status=none
}

# chj_table META ORIGIN RS [LEN]: a chj table line over the whole origin.
chj_table() {
	echo "0 ${4:-$(sectors "$2")} chj $1 $2 $3"
}

# must_refuse WHAT TABLE EXPECTED_LOG: dmsetup create must fail and the
# kernel log must say EXPECTED_LOG.
must_refuse() {
	dmesg -C
	if dmsetup create refused --table "$2" 2>/dev/null; then
		dmsetup remove refused
		fail "$1: table was accepted: $2"
	fi
	grep -q "$3" <<<"$(dmesg)" || { dmesg | tail -5; fail "$1: kernel log lacks '$3'"; }
	log "refused as expected: $1"
}
