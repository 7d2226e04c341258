# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The chj-resolve test workload (workload.py), shared by the host test (loop
# devices) and the VM tests (the real target).  Source it, then:
#   wl_populate MNT          build the tree (then sync and checkpoint)
#   wl_modify MNT WRITES [ROUND]
#                            change it (round 1, or 2 after a second
#                            checkpoint); WRITES gets "PATH OFFSET LENGTH"
#                            lines, the ranges written in place (the --json
#                            check)
# WL_SMALL (default 2000) small files; WL_IMAGE_MB (default 256) image size;
# WL_NEED_CLONE=1 fails unless the filesystem shares blocks (reflinks).
WL_PY=$(dirname "${BASH_SOURCE[0]}")/workload.py
# -S: no site module (standard library only), 0.07-0.1 s less per start
# under TCG.

wl_populate() { python3 -S "$WL_PY" populate "$1"; }
wl_modify() { python3 -S "$WL_PY" modify "$1" "$2" "${3:-1}"; }
