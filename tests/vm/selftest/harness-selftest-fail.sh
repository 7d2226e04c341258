#!/bin/bash
# Harness self-test: a test script that fails must be reported as a failure.
# scripts/run-checks counts this as PASS only when vm-test fails it.
# vm-expect: fail
# vm-expect-output: test script exited 3
# vm-mem: 1024
# vm-timeout: 60
echo "failing on purpose"
exit 3
