#!/bin/bash
# Harness self-test: a guest kernel that stops before vm-guest runs (here: no
# init at all, so the stock kernel panics) is booted again at most twice, each
# stop kept aside, and then reported as a failure: retrying a kernel's own
# boot-time crash never turns a test's failure into a pass, since this script
# never runs.
# vm-expect: fail
# vm-expect-output: console-early-2\.txt
# vm-append: rdinit=/nonexistent-init
# vm-mem: 1024
# vm-timeout: 60
echo "harness-selftest-early: this line must never run"
exit 0
