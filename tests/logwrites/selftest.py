#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Self-test of lw-replay on synthetic dm-log-writes logs.

Each case builds a device image (chj metadata formatted by `chj format` in
sectors [0, M), a zeroed origin after it) and a log written by hand in
dm-log-writes' format, in which a toy tracker sets chj bitmap bits before or
after writing data, with or without FUA.  lw-replay must pass the correct
orders and fail the wrong ones, naming the entry and region.  This proves the
checker catches what it claims to catch, independently of the kernel.

    selftest.py [--lw-replay PATH] [--chj PATH] [--keep DIR] [--quick]
Exits 0 when every case behaved as expected.
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

from lwlog import FUA, META, Log, crc32c

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

M = 2048                # metadata sectors (1 MiB)
ORIGIN = 16384          # origin sectors (8 MiB): 2048 regions of 8 sectors
BLK = 4096
BITMAP_MAGIC = 0x4d424843


class Meta:
    """The formatted metadata image and a toy tracker's view of it."""

    def __init__(self, raw):
        self.raw = bytearray(raw)
        best = None
        for c in (0, 1):
            sb = self.raw[c * BLK:c * BLK + 512]
            seq = struct.unpack_from("<Q", sb, 16)[0]
            if best is None or seq > best[0]:
                best = (seq, c)
        sb = self.raw[best[1] * BLK:best[1] * BLK + 512]
        self.seq = best[0]
        self.bitmap_start = struct.unpack_from("<Q", sb, 72)[0]
        self.epoch = struct.unpack_from("<Q", sb, 104)[0]
        self.bits = bytearray(BLK - 16)

    def bitmap_block(self, regions, epoch=None):
        """Bitmap block 0 with the given regions set in: (sector, data)."""
        for r in regions:
            self.bits[r // 8] |= 1 << (r % 8)
        body = struct.pack("<IQ", BITMAP_MAGIC, self.epoch if epoch is None else epoch) + bytes(self.bits)
        blk = struct.pack("<I", crc32c(body)) + body
        return self.bitmap_start * 8, blk

    def superblock_garbage(self, copy):
        return copy * 8, bytes([0xA5]) * BLK


def data_sector(region):
    return M + region * 8


def payload(region, nsect=8, byte=0x5A):
    return bytes([byte ^ (region & 0xFF)]) * (512 * nsect)


def cases(meta_raw):
    """(name, log, lw-replay extra args, expect rc, expected output regex)."""
    out = []

    def new():
        return Meta(meta_raw), Log()

    # 1. The correct order: mark durably (FUA), then write data.
    m, lg = new()
    lg.mark("base")
    for r in (5, 6, 1000):
        lg.write(*m.bitmap_block([r]), FUA | META)
        lg.write(data_sector(r), payload(r))
    lg.flush()
    out.append(("fua-mark-then-data", lg, [], 0, r"crash points checked: [1-9]"))

    # 2. The same log with a tracker that reports nothing must fail, at
    #    every point where data changed (3 such points: 2 bitmap writes
    #    and the flush after the first data write, plus the end).
    out.append(("fake-empty", lg, ["--fake-empty", "--keep-going"], 1,
                r"violations at 4 of 5 crash points \(4 with changed data\)"))
    out.append(("fake-empty-first", lg, ["--fake-empty"], 1,
                r"VIOLATION at crash point 2 \(before entry 3 .*\n.*origin region 5 "))

    # 3. Data before its mark (FUA data so it is logged first).
    m, lg = new()
    lg.mark("base")
    lg.write(data_sector(7), payload(7), FUA)
    lg.write(*m.bitmap_block([7]), FUA | META)
    lg.flush()
    out.append(("data-before-mark", lg, [], 1,
                r"VIOLATION at crash point 1 \(before entry 2 \(write metadata.*\n"
                r".*origin region 7 \(origin sectors 56\+8.*\n.*last changed by entry 1"))
    # The failure message decodes the metadata (libchj's CRC-32C and byte
    # order): both superblock copies and the bitmap block check out.
    out.append(("data-before-mark-explained", lg, [], 1,
                r"superblock copy 0: valid checksum, seq 0, current epoch 1.*\n"
                r".*superblock copy 1: valid checksum, seq 1,.*\n"
                r".*bitmap block 2: magic ok, checksum ok, epoch 0, bit 7 = 0"))

    # 4. A mark written without FUA is not durable until the next flush:
    #    data written in between is unprotected at the point before it.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.bitmap_block([9]), META)
    lg.write(data_sector(9), payload(9))
    lg.flush()
    lg.write(data_sector(9), payload(9, byte=1))
    out.append(("plain-mark-then-data", lg, [], 1,
                r"VIOLATION at crash point 2 \(before entry 3 \(FLUSH.*\n.*origin region 9 "))
    # ...which keeping every metadata write (a weaker model) hides,
    out.append(("plain-mark-model-all", lg, ["--model", "all"], 0, r"crash points checked: 3 "))
    # and a flush between mark and data makes it correct.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.bitmap_block([9]), META)
    lg.flush()
    lg.write(data_sector(9), payload(9))
    lg.flush()
    out.append(("plain-mark-flush-data", lg, [], 0, r"crash points checked: 4 "))

    # 5. The correct log under model "nofua" (FUA ignored) must fail, and
    #    under model "none" (no metadata after the baseline) too.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.bitmap_block([3]), FUA | META)
    lg.write(data_sector(3), payload(3))
    lg.flush()
    out.append(("model-nofua", lg, ["--model", "nofua"], 1, r"VIOLATION .*before entry 3 \(FLUSH"))
    out.append(("model-none", lg, ["--model", "none"], 1, r"VIOLATION .*before entry 3 \(FLUSH"))
    out.append(("model-durable", lg, [], 0, r"crash points checked: 3 "))

    # 6. Writing data identical to the baseline changes nothing.
    m, lg = new()
    lg.mark("base")
    lg.write(data_sector(11), bytes(4096), FUA)
    lg.flush()
    out.append(("same-content", lg, [], 0, r"crash points checked: 2 "))

    # 7. Data written before the mark is baseline, not change.
    m, lg = new()
    lg.write(data_sector(12), payload(12), FUA)
    lg.flush()
    lg.mark("base")
    lg.flush()
    out.append(("before-baseline", lg, [], 0, r"crash points checked: 2 "))

    # 8. A discard counts as a change (content unknown afterwards).
    m, lg = new()
    lg.mark("base")
    lg.discard(data_sector(20), 16)
    lg.flush()
    out.append(("discard-unmarked", lg, [], 1, r"origin region 20 .*was discarded"))
    m, lg = new()
    lg.mark("base")
    lg.write(*m.bitmap_block([20, 21]), FUA | META)
    lg.discard(data_sector(20), 16)
    lg.flush()
    out.append(("discard-marked", lg, [], 0, r"crash points checked: 3 "))

    # 9. A write of part of a region: the whole region must be reported.
    m, lg = new()
    lg.mark("base")
    lg.write(data_sector(30) + 3, payload(30, 1), FUA)
    out.append(("sub-region-write", lg, [], 1, r"origin region 30 \(origin sectors 240\+8"))

    # 10. A bitmap block of an older epoch counts for nothing.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.bitmap_block([40], epoch=m.epoch - 1 if m.epoch > 1 else 0), FUA | META)
    lg.write(data_sector(40), payload(40))
    lg.flush()
    out.append(("stale-epoch-mark", lg, [], 1, r"origin region 40 (.*\n)+.*epoch 0, bit 40 = 1"))

    # 11. Both superblocks destroyed: chj rejects the crash state.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.superblock_garbage(0), FUA | META)
    lg.write(*m.superblock_garbage(1), FUA | META)
    out.append(("superblocks-garbage", lg, [], 1, r"FAIL at crash point 3 .*rejected the crash state"))
    # One torn copy is fine: the other one still answers.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.superblock_garbage(0), FUA | META)
    out.append(("one-superblock-garbage", lg, [], 0, r"crash points checked: 2 "))

    # 12. Torn writes (--torn): a torn bitmap block fails its checksum and
    #     reads as all changed, which is safe: 3 writes x 3 tear points.
    m, lg = new()
    lg.mark("base")
    for r in (5, 6, 1000):
        lg.write(*m.bitmap_block([r]), FUA | META)
        lg.write(data_sector(r), payload(r))
    lg.flush()
    out.append(("torn-bitmap", lg, ["--torn"], 0, r"9 torn-write states\ncrash points checked: 5 "))
    # A write of both superblock copies at once, after copy 1 was lost:
    # whole, it is fine; torn, neither copy is valid.
    m, lg = new()
    lg.mark("base")
    lg.write(*m.superblock_garbage(1), FUA | META)
    lg.write(0, bytes([0xA5]) * BLK + bytes(m.raw[BLK:2 * BLK]), FUA | META)
    out.append(("sb-pair-whole", lg, [], 0, r"crash points checked: 3 "))
    out.append(("sb-pair-torn", lg, ["--torn"], 1,
                r"FAIL at crash point 2 \(torn write, entry 2 .*\) with that write torn after 1 of 16"
                r" sectors: .*rejected"))

    # 13. A write spanning metadata and origin is a log error.
    m, lg = new()
    lg.write(M - 8, bytes(8192))
    out.append(("spanning-write", lg, [], 2, r"spans the metadata and origin"))

    # 14. A mark that is not in the log.
    m, lg = new()
    lg.flush()
    out.append(("missing-mark", lg, [], 2, r"no mark 'base'"))
    # 15. Numbers are whole numbers (libchj's chj_parse_u64).
    out.append(("bad-number", lg, ["--region-sectors", "8x"], 2,
                r"--region-sectors: not a number: 8x"))
    out.append(("negative-number", lg, ["--region-sectors", "-8"], 2,
                r"--region-sectors: not a number: -8"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lw-replay", default=os.path.join(HERE, "lw-replay"))
    ap.add_argument("--chj", default=os.path.join(ROOT, "userspace", "chj"))
    ap.add_argument("--keep", help="keep the generated files in this directory")
    ap.add_argument("--quick", action="store_true",
                    help="libchj only; skip the runs through the chj command")
    a = ap.parse_args()

    tmp = a.keep or tempfile.mkdtemp(prefix="lw-selftest.")
    os.makedirs(tmp, exist_ok=True)
    meta = os.path.join(tmp, "meta.img")
    with open(meta, "wb") as f:
        f.truncate(M * 512)
    subprocess.run([a.chj, "format", meta, "--origin-size", str(ORIGIN * 512),
                    "--region-size", "4K"], check=True, stdout=subprocess.DEVNULL)
    with open(meta, "rb") as f:
        meta_raw = f.read()
    image = os.path.join(tmp, "device.img")
    with open(image, "wb") as f:
        f.write(meta_raw)
        f.truncate((M + ORIGIN) * 512)

    bad = 0
    runs = 0
    all_cases = cases(meta_raw)
    for name, lg, extra, want_rc, want_re in all_cases:
        logf = os.path.join(tmp, name + ".log")
        lg.save(logf)
        # Through libchj in process, then through the chj command.
        for mode in ([],) if a.quick else ([], ["--cli"]):
            cmd = [a.lw_replay, "--metadata-sectors", str(M), "--image", image,
                   "--since", "1", "--chj", a.chj,
                   "--meta-file", os.path.join(tmp, name + ".meta"),
                   "--mark", "base"] + mode + extra + [logf]
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            ok = p.returncode == want_rc and re.search(want_re, p.stdout)
            runs += 1
            print("%s %s%s (exit %d)" % ("ok  " if ok else "FAIL", name, " --cli" if mode else "",
                                        p.returncode))
            if not ok:
                bad += 1
                print("  expected exit %d and /%s/; command: %s" % (want_rc, want_re, " ".join(cmd)))
                print("  " + p.stdout.replace("\n", "\n  "))
    print("lw-replay selftest: %d of %d runs as expected (%d cases, %s)"
          % (runs - bad, runs, len(all_cases), "libchj" if a.quick else "libchj and chj command"))
    if not a.keep:
        shutil.rmtree(tmp)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
