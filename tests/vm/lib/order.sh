# shellcheck shell=bash
# Issue-order tracing for VM tests (tests/order/order-check), sourced after
# lib.sh and chj.sh.  Block tracepoints with the counter clock give a total
# order of every bio queued and completed on the chj device, its origin and
# its metadata device; markers written to trace_marker tell the checker where
# the checkpoints are.
#
#   order_start NAME      trace NAME's devices (clears the buffer)
#   order_ckpt NAME       a checkpoint the checker knows about (prints epoch)
#   order_premark_begin / order_premark_end   around mark_all and reloads
#                         that may mark all: blocks written there mark every
#                         region they hold
#   order_stop FILE       stop, refuse a trace that lost events, save it
#                         (the events stay enabled, tracing off: order_start)
#   order_check NAME METADATA_PATH FILE [order-check options]
#   order_log_up META LOG  dm-log-writes "olw" over the metadata device META,
#                         logging to LOG; chj's table names ORDER_LW.
#                         order_start marks the log, order_check passes it
#                         (--log: the superblock writes' contents)
#   order_log_down        after chj is removed: refuse a log that stopped
#                         logging, remove olw (its log is then complete)
ORDER_T=/sys/kernel/tracing
ORDER_CHECK=$CHJ_ROOT/tests/order/order-check
ORDER_BUF_KB=${ORDER_BUF_KB:-65536}
ORDER_EVENTS="block_bio_queue block_bio_complete block_rq_issue block_rq_complete"
# What a test using these helpers puts in its header, so that the kernel
# turns the events on while it boots (order_start, below):
#   vm-append: trace_event=block:block_bio_queue,block:block_bio_complete,block:block_rq_issue,block:block_rq_complete

# Every process costs 50-65 ms under TCG (a dmsetup, a grep): these helpers
# read sysfs with bash's own read where they can, and order_start keeps the
# devices it traced for order_check.
ORDER_NAME='' ORDER_DEVS='' ORDER_WC=() ORDER_LOG='' ORDER_LW=''

order_log_up() {
	# A stale log's super must not be read as this one's.
	dd if=/dev/zero of="$2" bs=1M count=1 oflag=direct status=none
	# shellcheck disable=SC2034 # for the tests' tables
	ORDER_LW=$(dm_create olw "0 $(sectors "$1") log-writes $1 $2")
	ORDER_LOG=$2
}

order_log_down() {
	local st
	st=$(dmsetup status olw) || fail "no olw device"
	[[ $st != *logging_disabled* ]] || fail "dm-log-writes stopped logging (log device $ORDER_LOG full?)"
	dmsetup remove olw
}

# _order_devs NAME: "CHJ META ORIGIN" as MAJ:MIN from the live table.
_order_devs() {
	local chj t
	if ! dm_sysdir "$1" || ! read -r chj <"$DM_SYSDIR/dev"; then fail "no dm device $1"; fi
	t=$(dmsetup table "$1") || fail "dmsetup table $1"
	# 0 LEN chj META ORIGIN RS ...
	read -r _ _ target meta origin _ <<<"$t"
	[ "$target" = chj ] || fail "$1 is not a chj device: $t"
	echo "$chj $meta $origin"
}

# _order_kdev MAJ:MIN: the kernel's dev_t encoding the trace filter uses.
_order_kdev() { echo $((${1%%:*} << 20 | ${1##*:})); }

order_start() {
	local devs d filter="" e on
	[ -e $ORDER_T/tracing_on ] || mount -t tracefs nodev $ORDER_T
	echo 0 >$ORDER_T/tracing_on
	echo counter >$ORDER_T/trace_clock
	echo "$ORDER_BUF_KB" >$ORDER_T/buffer_size_kb
	ORDER_DEVS=$(_order_devs "$1")
	ORDER_NAME=$1
	read -ra devs <<<"$ORDER_DEVS"
	# The cache modes, for order_check (the devices may be gone by then).
	ORDER_WC=()
	read -r e <"/sys/dev/block/${devs[1]}/queue/write_cache"
	[ "$e" != "write through" ] || ORDER_WC+=(--meta-write-through)
	read -r e <"/sys/dev/block/${devs[2]}/queue/write_cache"
	[ "$e" != "write through" ] || ORDER_WC+=(--origin-write-through)
	for d in "${devs[@]}"; do
		filter="${filter:+$filter || }dev == $(_order_kdev "$d")"
	done
	# The events are on from boot (the tests' vm-append header, shown by
	# ORDER_EVENTS above) and stay on (order_stop turns tracing off, which records
	# nothing, and leaves them): enabling or disabling one patches kernel
	# text (static keys and calls, through text_poke_bp, which waits for
	# every CPU to answer an IPI), and under multi-threaded TCG that has
	# left a guest with one vCPU spinning in smp_call_function_many_cond
	# (text_poke_bp_batch, from enabling block_bio_queue) and the other at
	# a jump-label NOP with interrupts off, for good (CI, order-controls,
	# 2026-12-06; vm-cpu-dump), and once an Oops on a stray int3 in
	# __schedule (the first event enabled also starts recording task
	# names, a probe on sched_switch; 6.12, 2026-12-06).  At boot the
	# kernel enables them before it starts the second CPU.  Enabled here
	# only for a test without the header.  A filter is data: rewritten for
	# every trace.
	for e in $ORDER_EVENTS; do
		echo "$filter" >"$ORDER_T/events/block/$e/filter"
		read -r on <"$ORDER_T/events/block/$e/enable"
		[ "$on" = 1 ] || echo 1 >"$ORDER_T/events/block/$e/enable"
	done
	: >$ORDER_T/trace
	echo 1 >$ORDER_T/tracing_on
	# The log's entries from here on are the trace's: chj is idle now
	# (no superblock write in flight), so none straddles the mark.
	if [ -n "$ORDER_LOG" ]; then dmsetup message olw 0 mark order-start || fail "log mark"; fi
}

order_mark() { echo "chj-order: $*" >$ORDER_T/trace_marker; }

order_ckpt() {
	local e
	order_mark "checkpoint begin"
	e=$(dmsetup message "$1" 0 checkpoint) || fail "checkpoint $1"
	order_mark "checkpoint end"
	echo "$e"
}

order_premark_begin() { order_mark "premark begin"; }
order_premark_end() { order_mark "premark end"; }

order_stop() {
	local f cpu over k v
	echo 0 >$ORDER_T/tracing_on
	for f in "$ORDER_T"/per_cpu/cpu*/stats; do
		cpu=${f%/stats}
		cpu=${cpu##*/}
		over=0
		while IFS=: read -r k v; do
			case $k in
			overrun | "commit overrun" | "dropped events") over=$((over + v)) ;;
			esac
		done <"$f"
		[ "$over" = 0 ] || fail "the trace lost $over events on $cpu (ORDER_BUF_KB=$ORDER_BUF_KB too small)"
	done
	cat $ORDER_T/trace >"$1"
	: >$ORDER_T/trace
}

# order_check NAME METADATA FILE [options]: run the checker on a saved trace
# of NAME's devices as order_start found them (it traced NAME last), with
# their cache modes then, and the log if order_log_up made one.
order_check() {
	local name=$1 meta_path=$2 file=$3 devs opts=("${ORDER_WC[@]}")
	shift 3
	[ "$name" = "$ORDER_NAME" ] || fail "order_check $name: the last trace was of $ORDER_NAME"
	read -ra devs <<<"$ORDER_DEVS"
	[ -z "$ORDER_LOG" ] || opts+=(--log "$ORDER_LOG")
	"$ORDER_CHECK" --chj "${devs[0]}" --meta "${devs[1]}" --origin "${devs[2]}" \
		--metadata "$meta_path" "${opts[@]}" "$@" "$file"
}
