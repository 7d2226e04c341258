#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Make a jbd2 journal image (1 KiB blocks) a live log that fits its file.

fuzz-seeds.sh dumps the journal of a frozen ext4: the freeze checkpointed
it, so its superblock says the log is empty (s_start 0), and the journal is
longer (s_maxlen) than the 64 blocks kept.  fuzz_jbd2's walk would then
stop at the superblock, and the fuzzer would never reach the transactions.
The blocks still hold them: this points s_start and s_sequence at the first
descriptor block and sets s_maxlen to the blocks in the file, so that every
seed is walked through its descriptor, data and commit blocks.

    jbd2-seed.py FILE   (rewritten in place)
"""
import struct
import sys

MAGIC, DESCRIPTOR, BS = 0xC03B3998, 1, 1024

path = sys.argv[1]
img = bytearray(open(path, "rb").read())
nblk = len(img) // BS
if struct.unpack_from(">I", img, 0)[0] != MAGIC:
    sys.exit(f"{path}: no jbd2 superblock")
first = struct.unpack_from(">I", img, 20)[0]
for blk in range(first, nblk):
    magic, typ, seq = struct.unpack_from(">III", img, blk * BS)
    if magic == MAGIC and typ == DESCRIPTOR:
        break
else:
    sys.exit(f"{path}: no descriptor block in the first {nblk} blocks")
struct.pack_into(">I", img, 16, nblk)   # s_maxlen
struct.pack_into(">I", img, 24, seq)    # s_sequence
struct.pack_into(">I", img, 28, blk)    # s_start
open(path, "wb").write(img)
print(f"{path}: live log from block {blk}, sequence {seq}, {nblk} blocks")
