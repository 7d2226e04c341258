#!/bin/bash
# chj-resolve on XFS without the reverse-mapping btree (the FIEMAP walk):
# resolve-xfs's ground-truth test, over two epochs, reflinks on.
# vm-disks: 64M 1G
# vm-timeout: 300
# shellcheck source=tests/vm/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib.sh"
# shellcheck source=tests/vm/_chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_chj.sh"
# shellcheck source=tests/vm/_resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/_resolve.sh"

resolve_xfs 0 FIEMAP
