#!/bin/bash
# chj-resolve on XFS over the real target, with the reverse-mapping btree
# (GETFSMAP; resolve-xfs-normap: without it), reflinks on: every truly
# changed file and directory is listed (ground truth from before/after
# snapshots), over two epochs, the --json ranges cover every write
# (scattered ones into a sparse VM image among them), both while the
# changes sit in the XFS log and after a freeze wrote them home; resolves
# while traffic wraps the log (resolve_live).
# vm-disks: 64M 1G
# vm-timeout: 300
# shellcheck source=tests/vm/lib/lib.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/lib.sh"
# shellcheck source=tests/vm/lib/chj.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/chj.sh"
# shellcheck source=tests/vm/lib/resolve.sh disable=SC1091
. "$CHJ_ROOT/tests/vm/lib/resolve.sh"

resolve_xfs 1 GETFSMAP
