#!/bin/bash
# Harness self-test: a test that outlives its vm-timeout is killed and
# failed, and 20 s before that vm-guest reports what runs (hang_report:
# the processes, this sleep among them).
# vm-expect: fail
# vm-expect-output: hang: .* sleep 600
# vm-timeout: 30
sleep 600
