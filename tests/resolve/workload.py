#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""The chj-resolve test workload, in one process (forks are slow under TCG).

  workload.py populate MNT          build the tree (then sync and checkpoint)
  workload.py modify MNT WRITES     change it; WRITES gets "PATH OFFSET LENGTH"
                                    lines for the VM image's writes and the
                                    range it punched (the --json check)
Environment: WL_SMALL (default 2000) small files, WL_IMAGE_MB (default 256)
size of the sparse "VM image".
"""
import ctypes
import fcntl
import mmap
import os
import random
import shutil
import sys

FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
FALLOC_FL_ZERO_RANGE = 0x10
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]

SMALL = int(os.environ.get("WL_SMALL", "2000"))
IMAGE_MB = int(os.environ.get("WL_IMAGE_MB", "256"))
NAMES = ["touchr", "append", "trunc-shrink", "trunc-grow", "chmod", "chown", "xattr-set",
         "xattr-rm", "ren-a", "mv-src", "del", "hl", "odirect", "mmap", "punch", "zero",
         "same"]
NEWLINE = "e/new\nline"
BACKSLASH = "e/back\\slash"


FICLONE = 0x40049409
FICLONERANGE = 0x4020940d


def clone_range(src, dst, src_off, length, dst_off):
    """FICLONERANGE; False where the filesystem cannot share blocks."""
    arg = (ctypes.c_int64 * 4)()
    with open(src, "rb") as s, open(dst, "r+b") as d:
        arg[0], arg[1], arg[2], arg[3] = s.fileno(), src_off, length, dst_off
        try:
            fcntl.ioctl(d.fileno(), FICLONERANGE, arg)
        except OSError:
            return False
    return True


def reflink_copy(src, dst):
    """cp --reflink=auto."""
    with open(src, "rb") as s, open(dst, "wb") as d:
        try:
            fcntl.ioctl(d.fileno(), FICLONE, s.fileno())
        except OSError:
            d.write(s.read())


def fallocate(path, mode, off, length):
    fd = os.open(path, os.O_RDWR)
    try:
        if libc.fallocate(fd, mode, off, length):
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def populate(m):
    rnd = random.Random(1)
    for d in ["d", "e", "small", "deep/a/b/c", "olddir", "keep", "dirmv/sub"]:
        os.makedirs(os.path.join(m, d), exist_ok=True)
    for n in NAMES:
        write(f"{m}/d/{n}", rnd.randbytes(16384 + rnd.randrange(8192)))
    os.setxattr(f"{m}/d/xattr-rm", "user.old", b"gone")
    write(f"{m}/d/big", rnd.randbytes(4 << 20))
    write(f"{m}/deep/a/b/c/leaf", rnd.randbytes(3000))
    os.symlink("d/same", f"{m}/d/sym-old")
    for i in range(SMALL):
        write(f"{m}/small/f{i}", f"small file {i}\n".encode())
    for i in range(50):
        write(f"{m}/keep/k{i}", rnd.randbytes(5000))
    for i in range(5):
        write(f"{m}/dirmv/f{i}", rnd.randbytes(3000))
    write(f"{m}/dirmv/sub/g", rnd.randbytes(100))
    # Reflinks (where the filesystem shares blocks): a copy sharing
    # everything, and a file into which modify clones new data.
    write(f"{m}/d/rl-src", rnd.randbytes(65536))
    reflink_copy(f"{m}/d/rl-src", f"{m}/d/rl-copy")
    write(f"{m}/d/clone-dst", rnd.randbytes(65536))
    write(f"{m}/d/empty", b"")
    write(f"{m}/d/tiny", b"x")
    write(f"{m}/{NEWLINE}", b"name with newline")
    write(f"{m}/{BACKSLASH}", b"back\\slash")
    # A sparse "VM image" with some data already in it.
    img = f"{m}/vm.img"
    with open(img, "wb") as f:
        f.truncate(IMAGE_MB << 20)
    fd = os.open(img, os.O_WRONLY)
    size = IMAGE_MB << 20
    for _ in range(64):
        os.pwrite(fd, rnd.randbytes(65536), rnd.randrange(0, size // 65536) * 65536)
    os.pwrite(fd, rnd.randbytes(65536), 64 * 65536)    # punched by modify
    os.close(fd)


def modify(m, writes_path):
    rnd = random.Random(2)
    writes = open(writes_path, "w")
    d = f"{m}/d"
    # Same size, mtime and atime restored: mtime/size tools miss it.
    st = os.stat(f"{d}/touchr")
    fd = os.open(f"{d}/touchr", os.O_WRONLY)
    os.pwrite(fd, rnd.randbytes(100), 5000)
    os.close(fd)
    os.utime(f"{d}/touchr", ns=(st.st_atime_ns, st.st_mtime_ns))
    write(f"{d}/append", b"appended\n", "ab")
    os.truncate(f"{d}/trunc-shrink", 1000)
    os.truncate(f"{d}/trunc-grow", 100000)
    os.chmod(f"{d}/chmod", 0o600)
    os.chown(f"{d}/chown", 1234, 5678)
    os.setxattr(f"{d}/xattr-set", "user.new", rnd.randbytes(40).hex().encode())
    os.removexattr(f"{d}/xattr-rm", "user.old")
    os.rename(f"{d}/ren-a", f"{d}/ren-b")
    os.rename(f"{d}/mv-src", f"{m}/e/mv-dst")
    os.unlink(f"{d}/del")
    os.link(f"{d}/hl", f"{m}/e/hl2")
    os.symlink("../d/same", f"{m}/e/sym-new")
    os.unlink(f"{d}/sym-old")
    os.symlink("d/other", f"{d}/sym-old")
    os.mkdir(f"{d}/newdir")
    write(f"{d}/newdir/file", b"inside\n")
    os.rmdir(f"{m}/olddir")
    write(f"{d}/falloc", b"")
    fallocate(f"{d}/falloc", 0, 0, 1 << 20)
    fallocate(f"{d}/punch", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192)
    try:
        fallocate(f"{d}/zero", FALLOC_FL_ZERO_RANGE, 0, 4096)
    except OSError:
        pass    # not every filesystem zeroes ranges
    # O_DIRECT write of one aligned block.
    buf = mmap.mmap(-1, 4096)
    buf.write(rnd.randbytes(4096))
    fd = os.open(f"{d}/odirect", os.O_WRONLY | os.O_DIRECT)
    os.pwritev(fd, [buf], 8192)
    os.close(fd)
    fd = os.open(f"{d}/mmap", os.O_RDWR)
    mm = mmap.mmap(fd, 8192)
    mm[100:110] = b"mmapwrite!"
    mm.flush()
    mm.close()
    os.close(fd)
    fd = os.open(f"{d}/sparse", os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(fd, rnd.randbytes(4096), 1000 * 4096)
    os.close(fd)
    for i in range(0, SMALL, 100):
        write(f"{m}/small/f{i}", b"changed\n", "ab")
    os.rename(f"{m}/deep/a/b/c/leaf", f"{m}/deep/leaf-moved")
    # A directory renamed with its contents.
    os.rename(f"{m}/dirmv", f"{m}/e/dirmv-renamed")
    # Copy-on-write of shared blocks: rl-src changes, rl-copy does not.
    fd = os.open(f"{d}/rl-src", os.O_WRONLY)
    os.pwrite(fd, rnd.randbytes(4096), 8192)
    os.close(fd)
    # New data cloned into an existing file (both own the new blocks),
    # and a reflinked copy of new data.
    write(f"{d}/rl-new", rnd.randbytes(65536))
    os.sync()
    clone_range(f"{d}/rl-new", f"{d}/clone-dst", 0, 16384, 16384)
    reflink_copy(f"{d}/rl-new", f"{m}/e/rl-new-copy")
    # Names that need escaping in the line output.
    write(f"{m}/{NEWLINE}", b"more\n", "ab")
    write(f"{m}/{BACKSLASH}", b"more\n", "ab")
    # Scattered 4 KiB writes into the image, and a range the guest
    # discards: a punched hole.
    img = f"{m}/vm.img"
    fd = os.open(img, os.O_WRONLY)
    size = os.fstat(fd).st_size
    for _ in range(200):
        off = rnd.randrange(0, size // 4096) * 4096
        os.pwrite(fd, rnd.randbytes(4096), off)
        writes.write(f"vm.img {off} 4096\n")
    os.fsync(fd)
    os.close(fd)
    try:
        fallocate(img, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 64 * 65536, 65536)
        writes.write(f"vm.img {64 * 65536} 65536\n")
    except OSError:
        pass
    writes.close()


def main():
    a = sys.argv[1:]
    if a[:1] == ["populate"] and len(a) == 2:
        populate(a[1])
    elif a[:1] == ["modify"] and len(a) == 3:
        modify(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
