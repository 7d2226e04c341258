#!/bin/bash
# Not a test (tests/vm/manual/: make check does not run it): a reproducer of
# the hang CI's order-controls met twice, in the stock kernel under QEMU's
# multi-threaded TCG, with no dm-chj in the I/O path.  The block tracepoints
# are enabled and disabled under random writes (fio, QD16, on brd); each
# toggle patches kernel text (text_poke_bp: int3 at the site, IPIs, the new
# bytes, the int3 removed).  On 2026-12-06 it hung after about 200 rounds
# (10 s): vCPU 0 trapping, over and over, on an int3 in
# submit_bio_noacct_nocheck (the block_bio_queue site) that the patch had
# already removed from memory (a stale translation), while the patching
# task waited in synchronize_srcu; soft lockups, then vm-timeout, with
# the hang report and vm-cpu-dump saying so.  Expected to FAIL (time out);
# a pass after many minutes says this QEMU no longer shows it.
#   scripts/vm-test tcg-textpoke-hang
# vm-timeout: 400
# vm-mem: 1024
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
brd_setup 1 65536
fio --name=a --filename=/dev/ram0 --rw=randwrite --bs=4k --ioengine=libaio --iodepth=16 --direct=1 \
	--time_based=1 --runtime=330 >/dev/null 2>&1 &
start=$SECONDS
n=0
while [ $((SECONDS - start)) -lt 300 ]; do
	for e in block_bio_queue block_bio_complete block_rq_issue block_rq_complete; do
		echo 1 >$T/events/block/$e/enable
	done
	for e in block_bio_queue block_bio_complete block_rq_issue block_rq_complete; do
		echo 0 >$T/events/block/$e/enable
	done
	n=$((n + 1))
	[ $((n % 100)) != 0 ] || log "$n rounds"
done
log "$n rounds of toggling, no hang (this QEMU may not show it)"
kill %1 2>/dev/null || true
wait || true
