#!/bin/bash
# Manual check (not in make check): lw-replay catches deliberately broken
# dm-chj builds on the real kernel stack, and passes this tree's dm-chj on
# the same workload.  First: make -C tests/order (tests/order/build-broken-targets), then
# scripts/vm-test crash-logwrites-broken.
# vm-timeout: 600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
LW_ORIG_S=$((64 << 11))
# shellcheck source=tests/vm/lib/logwrites.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/logwrites.sh"

BROKEN=$CHJ_ROOT/build/order-broken/$(uname -r)
[ -f "$BROKEN/no-fua/dm-chj.ko" ] || fail "run make -C tests/order first"
REAL=$CHJ_KO	# this tree's module for the kernel booted (vm-guest)

# run MODULE RS DELAY_MS: load MODULE, run a short workload under
# log-writes; leaves the log on /dev/ram1 and E set.
run() {
	local ko=$1 rs=$2 delay=$3
	use_module "$ko"
	lw_up "$rs" "$delay"
	dd if=/dev/urandom of=/dev/mapper/c bs=1M count=4 oflag=direct status=none
	lw_mark
	# Sequential FUA at QD8 (several writes per fresh region in flight),
	# random FUA at QD8, random QD1 with an fsync every 16 writes.
	local f="--filename=/dev/mapper/c --direct=1 --size=64M --eta=never --output=/dev/null"
	# shellcheck disable=SC2086
	fio --name=s $f --rw=write --bs=4k --ioengine=libaio --iodepth=8 --sync=1 --io_size=4M
	# shellcheck disable=SC2086
	fio --name=a $f --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --sync=1 --number_ios=400
	# shellcheck disable=SC2086
	fio --name=r $f --rw=randwrite --bs=4k --ioengine=psync --fsync=16 --number_ios=400
	lw_down
}

results=()
for spec in "issue-early 8 0" "publish-early 128 1" "no-fua 8 0" \
	"real 8 0" "real 128 1"; do
	read -r v rs delay <<<"$spec"
	log "=== $v, region size $rs, metadata delay $delay ms"
	if [ "$v" = real ]; then
		run "$REAL" "$rs" "$delay"
		out=$(lw_replay "$rs" 2>&1) || { printf '%s\n' "$out"; fail "the real target failed"; }
		tail -n 1 <<<"$out"
	else
		run "$BROKEN/$v/dm-chj.ko" "$rs" "$delay"
		lw_expect_fail "broken target $v" "$rs"
		out=$(lw_replay "$rs" --keep-going 2>&1) || true
	fi
	results+=("$v rs=$rs delay=${delay}ms: $(grep -E '^violations at' <<<"$out" || tail -n 1 <<<"$out")")
done
log "summary"
printf '    %s\n' "${results[@]}"
