#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""mklog: a dm-log-writes log of superblock writes, for order-check's
self-test (tests/order/selftest.sh) of --log.

    mklog.py META_IMG OUT ITEM...

META_IMG is metadata formatted by `chj format` (format 2); its superblock
is the template.  Each ITEM, in log order:
    mark:LABEL              a mark
    flush                   an empty flush
    sb:SEQ:EPOCH:CHUNKS[:fua]  a superblock write of seq SEQ to block
                            SEQ % 2, current epoch EPOCH, its intent map
                            marking CHUNKS (comma list, or -)
The log is written by tests/logwrites/lwlog.py (format: lwlog.h).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "logwrites"))
from lwlog import FUA, Log, crc32c  # noqa: E402

BLK = 4096
SB_BYTES = 512


def superblock(tmpl, seq, epoch, chunks):
    b = bytearray(tmpl)
    struct.pack_into("<Q", b, 16, seq)
    struct.pack_into("<Q", b, 104, epoch)
    struct.pack_into("<I", b, 0, crc32c(bytes(b[4:SB_BYTES])))
    intent = b[SB_BYTES:]
    struct.pack_into("<Q", intent, 8, seq)
    for i in range(24, len(intent)):
        intent[i] = 0
    for c in chunks:
        intent[24 + c // 8] |= 1 << (c % 8)
    struct.pack_into("<I", intent, 0, crc32c(bytes(intent[4:])))
    b[SB_BYTES:] = intent
    return bytes(b)


def main():
    meta, out, items = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(meta, "rb") as f:
        raw = f.read(2 * BLK)
    seqs = [struct.unpack_from("<Q", raw, c * BLK + 16)[0] for c in (0, 1)]
    tmpl = raw[seqs.index(max(seqs)) * BLK:][:BLK]
    lg = Log()
    for it in items:
        kind, _, rest = it.partition(":")
        if kind == "mark":
            lg.mark(rest)
        elif kind == "flush":
            lg.flush()
        elif kind == "sb":
            f = rest.split(":")
            seq, epoch = int(f[0]), int(f[1])
            chunks = [] if f[2] == "-" else [int(c) for c in f[2].split(",")]
            flags = FUA if len(f) > 3 and f[3] == "fua" else 0
            lg.write((seq % 2) * 8, superblock(tmpl, seq, epoch, chunks), flags)
        else:
            sys.exit("mklog: unknown item " + it)
    lg.save(out)

main()
