# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Writing dm-log-writes logs, and chj's CRC-32C, for the self-tests of
lw-replay (selftest.py) and order-check (tests/order/mklog.py).  The log's
format: lwlog.h."""
import struct

LW_MAGIC = 0x6a736677736872
FLUSH, FUA, DISCARD, MARK, META = 1, 2, 4, 8, 16


def crc32c(data):
    if not hasattr(crc32c, "table"):
        t = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            t.append(c)
        crc32c.table = t
    t = crc32c.table
    crc = 0xFFFFFFFF
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


class Log:
    def __init__(self):
        self.entries = []

    def write(self, sector, data, flags=0):
        assert len(data) % 512 == 0
        self.entries.append((sector, len(data) // 512, flags, b"", data))

    def flush(self):
        self.entries.append((0, 0, FLUSH, b"", b""))

    def discard(self, sector, n):
        self.entries.append((sector, n, DISCARD, b"", b""))

    def mark(self, label):
        self.entries.append((0, 0, MARK, label.encode(), b""))

    def save(self, path):
        with open(path, "wb") as f:
            f.write(struct.pack("<QQQI", LW_MAGIC, 1, len(self.entries) + 1, 512).ljust(512, b"\0"))
            for sector, n, flags, label, data in self.entries:
                hdr = struct.pack("<QQQQ", sector, n, flags, len(label)) + label
                f.write(hdr.ljust(512, b"\0"))
                f.write(data)
            end = b"dm-log-writes-end"
            f.write((struct.pack("<QQQQ", 0, 0, MARK, len(end)) + end).ljust(512, b"\0"))
