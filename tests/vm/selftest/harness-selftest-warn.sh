#!/bin/bash
# Harness self-test: a kernel WARNING in the guest's log fails the test even
# though the script exits 0.
# vm-expect: fail
# vm-expect-output: kernel log shows a problem
# vm-mem: 1024
# vm-timeout: 60
echo "WARNING: harness self-test, injected on purpose" >/dev/kmsg
exit 0
