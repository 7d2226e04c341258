#!/bin/bash
# Harness self-test: a test that outlives its vm-timeout is killed and
# failed; before that vm-guest reports what runs (hang_report: the
# processes, this sleep among them), and QEMU where the vCPUs are
# (vm-cpu-dump: idle, as the guest only sleeps; named when this build
# directory has the kernel's symbols, which the first boot of a kernel
# takes).
# vm-expect: fail
# vm-expect-output: timed out after 20s
# vm-expect-output: hang: .* sleep 600
# vm-expect-output: vm-cpu-dump: vCPU 0: kernel mode, RIP [0-9a-f]+
# vm-mem: 1024
# vm-timeout: 20
sleep 600
