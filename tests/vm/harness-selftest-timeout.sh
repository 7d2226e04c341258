#!/bin/bash
# Harness self-test: a test that outlives its vm-timeout is killed and failed.
# vm-expect: fail
# vm-expect-output: timed out after 15s
# vm-timeout: 15
sleep 600
