#!/bin/bash
# chj-resolve on XFS without the reverse-mapping btree (the FIEMAP walk):
# resolve-xfs's ground-truth test, over two epochs, reflinks on.
# vm-disks: 64M 1G
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

resolve_xfs 0 FIEMAP
