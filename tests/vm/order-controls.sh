#!/bin/bash
# The issue-order checker's negative controls: dm-chj builds broken on
# purpose from this tree (tests/order/build-broken-targets: issue before the
# chunk mark's write, make the chunk usable before it completes, no FUA on a
# write-back device, no drain at a checkpoint, retire a chunk mark before the
# exact bits are written, let a write pass on an exact bit set in core but
# not durable, carry chunk marks across a checkpoint in core but not on
# disk, retire chunks while writes still pass on them) must each fail
# tests/order/order-check, and this tree's module must pass the same setup
# and workload.  The metadata is under dm-log-writes, so that the checker
# reads what each superblock write marks (order_log_up, --log).
# vm-disks: 64M
# The block events on from boot (tests/vm/lib/order.sh, order_start):
# vm-append: trace_event=block:block_bio_queue,block:block_bio_complete,block:block_rq_issue,block:block_rq_complete
# vm-timeout: 600
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/order.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/order.sh"

BROKEN=$CHJ_ROOT/build/order-broken/$(uname -r)
REAL=$CHJ_KO	# this tree's module for the kernel booted (vm-guest)
TRACE=/tmp/order-trace.txt

fio_c() {
	local name=$1
	shift
	fio --name="$name" --filename=/dev/mapper/c --size=32M --direct=1 \
		--randrepeat=0 --eta=never --output=/dev/null "$@" || fail "fio $name"
}

# setup VARIANT: the devices the variant's bug shows on; sets META ORIGIN RS.
setup() {
	case $1 in
	issue-early) META=/dev/ram1 ORIGIN=/dev/ram0 RS=8 ;;
	publish-early)
		# Slow bitmap writes and many writes per region in flight.
		dm_create md "0 $(sectors /dev/ram1) delay /dev/ram1 0 0 /dev/ram1 0 5" >/dev/null
		META=/dev/mapper/md ORIGIN=/dev/ram0 RS=128 ;;
	no-fua) META=/dev/vda ORIGIN=/dev/ram0 RS=8 ;;
	no-drain)
		# Origin writes that stay in flight for a while.
		dm_create od "0 $(sectors /dev/ram0) delay /dev/ram0 0 0 /dev/ram0 0 20" >/dev/null
		META=/dev/ram1 ORIGIN=/dev/mapper/od RS=8 ;;
	retire-early | retire-busy) META=/dev/ram1 ORIGIN=/dev/ram0 RS=8 ;;
	carry-unwritten)
		# No clean pass (armed with the interval current when it is
		# queued): the chunks are still marked at the checkpoint and
		# after it, whatever the timing.
		echo 60000 >/sys/module/dm_chj/parameters/clean_interval_ms
		META=/dev/ram1 ORIGIN=/dev/ram0 RS=8 ;;
	exact-early)
		# Slow chunk marks, so that writes to a region pile up behind the
		# first one, which waits for its chunk's mark.
		dm_create md "0 $(sectors /dev/ram1) delay /dev/ram1 0 0 /dev/ram1 0 5" >/dev/null
		META=/dev/mapper/md ORIGIN=/dev/ram0 RS=128 ;;
	esac
	dd if=/dev/zero of="$META" bs=1M count=4 oflag=direct status=none
	order_log_up "$META" /dev/ram2
	dm_create c "$(chj_table "$ORDER_LW" "$ORIGIN" "$RS")" >/dev/null
}

# stop: the trace stopped, c and the log removed (the log complete).
stop() {
	order_stop $TRACE
	dmsetup remove c
	order_log_down
}

teardown() {
	echo 1000 >/sys/module/dm_chj/parameters/clean_interval_ms
	dmsetup remove md 2>/dev/null || true
	dmsetup remove od 2>/dev/null || true
}

workload() {
	local pid
	order_ckpt c >/dev/null
	case $1 in
	issue-early) fio_c a --rw=randwrite --bs=4k --ioengine=psync --number_ios=300 ;;
	publish-early)
		fio_c a --rw=write --bs=4k --ioengine=libaio --iodepth=8 --io_size=4M
		fio_c b --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --number_ios=400 ;;
	no-fua) fio_c a --rw=randwrite --bs=4k --ioengine=libaio --iodepth=4 --number_ios=300 ;;
	no-drain)
		fio_c a --rw=randwrite --bs=4k --ioengine=libaio --iodepth=16 --runtime=3 \
			--time_based=1 &
		pid=$!
		for _ in 1 2 3 4 5; do
			sleep 0.4
			order_ckpt c >/dev/null
		done
		wait $pid || fail "fio no-drain" ;;
	retire-early | retire-busy)
		# A burst over a few chunks, then idle until the cleaner (every
		# 100 ms here) has retired every mark: polled, bounded.  For
		# retire-busy, a second burst over the same chunks, which must
		# mark them again.
		echo 100 >/sys/module/dm_chj/parameters/clean_interval_ms
		fio_c a --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --size=12M --number_ios=300
		for _ in $(seq 100); do
			dmsetup message c 0 stats | grep -q ' marked_chunks=0 ' && break
			sleep 0.05
		done
		dmsetup message c 0 stats | grep -q ' marked_chunks=0 ' || fail "no retire in 5 s"
		if [ "$1" = retire-busy ]; then
			fio_c b --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --size=12M --number_ios=300
		fi
		echo 1000 >/sys/module/dm_chj/parameters/clean_interval_ms ;;
	carry-unwritten)
		# Chunks marked, a checkpoint that carries them (carry_marks=Y),
		# then new regions in them in the new epoch.
		echo Y >/sys/module/dm_chj/parameters/carry_marks
		fio_c a --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --size=12M --number_ios=300
		order_ckpt c >/dev/null
		fio_c b --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --size=12M --number_ios=300 ;;
	exact-early)
		# 16 writes per 64 KiB region, 8 in flight: when a region's first
		# write waits for its chunk's mark, the next ones find its exact
		# bit set in core.  Then a rewrite of the same area, after the
		# cleaner proved the bits (the fast path on durable bits).
		fio_c a --rw=write --bs=4k --ioengine=libaio --iodepth=8 --io_size=16M
		fio_c b --rw=randwrite --bs=4k --ioengine=libaio --iodepth=8 --size=16M --number_ios=400 ;;
	esac
}

# run VARIANT MODULE: trace the variant's workload under MODULE; sets OUT, RC.
run() {
	use_module "$2"
	setup "$1"
	order_start c
	workload "$1"
	stop
	RC=0
	OUT=$(order_check c "$META" $TRACE --max-report 3 2>&1) || RC=$?
	teardown
}

brd_setup 3 65536	# ram2: the log
summary=()
for v in issue-early publish-early no-fua no-drain retire-early exact-early carry-unwritten retire-busy; do
	[ -f "$BROKEN/$v/dm-chj.ko" ] || fail "control $v was not built (tests/order/build-broken-targets)"
	log "=== $v: this tree's module on the same setup must pass"
	run "$v" "$REAL"
	printf '%s\n' "$OUT"
	[ $RC = 0 ] || fail "this tree's module failed the $v setup"
	log "=== $v: the broken build must fail"
	run "$v" "$BROKEN/$v/dm-chj.ko"
	printf '%s\n' "$OUT"
	[ $RC = 1 ] || fail "control $v was not caught (order-check exited $RC)"
	line=$(grep -E '^order-check: [0-9]+ violations' <<<"$OUT") || fail "$v: no violation count"
	if [ "$v" = no-drain ] && ! grep -qE ' [1-9][0-9]* (in flight|queued during)' <<<"$line"; then
		fail "no-drain caught, but not as a write straddling the epoch switch: $line"
	fi
	if [ "$v" = retire-early ] && ! grep -qE ' [1-9][0-9]* chunk marks retired early' <<<"$line"; then
		fail "retire-early caught, but not as a mark retired early: $line"
	fi
	case $v in exact-early | carry-unwritten | retire-busy)
		grep -qE '\([1-9][0-9]* at first writes' <<<"$line" ||
			fail "$v caught, but not at first writes: $line" ;;
	esac
	summary+=("$v: ${line#order-check: }")
done
use_module "$REAL"
log "every control caught:"
printf '    %s\n' "${summary[@]}"
