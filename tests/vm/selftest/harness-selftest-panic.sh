#!/bin/bash
# Harness self-test: a kernel panic (the guest dies with neither a result nor
# a reboot request) is reported as a failure.
# vm-expect: fail
# vm-expect-output: neither a result nor a reboot request
# vm-mem: 1024
# vm-timeout: 60
echo c >/proc/sysrq-trigger
sleep 30
