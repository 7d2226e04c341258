# shellcheck shell=bash
# Helpers for dm-chj VM tests, sourced after lib.sh.

# st NAME FIELD: one field of the chj status line.  Fields:
#   rs cur old marked nr jused jblocks mode
st() {
	local line
	line=$(dmsetup status "$1") || fail "dmsetup status $1"
	# 0 LEN chj RS CUR OLD MARKED/NR JUSED/JB MODE
	awk -v f="$2" '{
		split($7, m, "/"); split($8, j, "/")
		v["rs"] = $4; v["cur"] = $5; v["old"] = $6; v["marked"] = m[1]
		v["nr"] = m[2]; v["jused"] = j[1]; v["jblocks"] = j[2]; v["mode"] = $9
		if (!(f in v)) exit 1
		print v[f]
	}' <<<"$line" || fail "st: unknown field $2"
}

# chj_stat NAME KEY: one counter of the "stats" message (docs/dm-chj.txt).
chj_stat() {
	local line
	line=$(dmsetup message "$1" 0 stats) || fail "dmsetup message $1 0 stats"
	tr ' ' '\n' <<<"$line" | awk -F= -v k="$2" '$1 == k { print $2; f = 1 } END { exit !f }' ||
		fail "chj_stat: no $2 in '$line'"
}

# status_mode NAME: the mode word (last field).
status_mode() { dmsetup status "$1" | awk '{print $NF}'; }

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
