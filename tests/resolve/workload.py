#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""The chj-resolve test workload, in one process (forks are slow under TCG).

  workload.py populate MNT                build the tree (then sync and checkpoint)
  workload.py modify MNT WRITES [ROUND]   change it; WRITES gets "PATH OFFSET
                                          LENGTH" lines: the byte ranges whose
                                          content the round changed in place
                                          (the --json ranges check)
  workload.py exchange A B                renameat2(RENAME_EXCHANGE) of two paths
ROUND 1 (the default) changes the files under d/ and e/, ROUND 2 the same
kinds of files under d2/ and e2/ (after a second checkpoint); both change the
shared ones (small files, the VM image, names with odd characters).
Environment: WL_SMALL (default 2000) small files, WL_IMAGE_MB (default 256)
size of the sparse "VM image", WL_NEED_CLONE=1: fail unless the filesystem
shares blocks (FICLONE, FICLONERANGE).
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
RENAME_EXCHANGE = 2
AT_FDCWD = -100
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
libc.syncfs.argtypes = [ctypes.c_int]
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                           ctypes.c_uint]

SMALL = int(os.environ.get("WL_SMALL", "2000"))
IMAGE_MB = int(os.environ.get("WL_IMAGE_MB", "256"))
NEED_CLONE = os.environ.get("WL_NEED_CLONE") == "1"
# Files of 16-24 KiB under d/ (d2/), one per kind of change.
NAMES = ["touchr", "append", "trunc-shrink", "trunc-grow", "trunc-zero", "chmod", "chown",
         "xattr-set", "xattr-rm", "xattr-big", "xattr-big-rm", "xattr-same-size", "ren-a",
         "mv-src", "del", "hl", "hl-move", "ml", "ul", "odirect", "mmap", "punch", "zero",
         "same", "mtime-only", "repl-src", "repl-dst", "exch-a", "cfr-dst", "sparse-old"]
NEWLINE = "e/new\nline"
BACKSLASH = "e/back\\slash"
ROUNDS = ["", "2"]       # directory suffix of each round's files
NEW_SMALL = 300          # small files each round creates


FICLONE = 0x40049409
FICLONERANGE = 0x4020940d


def syncfs(path):
    """syncfs(2) on the filesystem holding path: not a global sync, which
    on the host also writes back what the VM tests' guests left dirty."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syncfs(fd):
            e = ctypes.get_errno()
            raise OSError(e, f"syncfs {path}")
    finally:
        os.close(fd)


def clone_range(src, dst, src_off, length, dst_off):
    """FICLONERANGE; False where the filesystem cannot share blocks."""
    arg = (ctypes.c_int64 * 4)()
    with open(src, "rb") as s, open(dst, "r+b") as d:
        arg[0], arg[1], arg[2], arg[3] = s.fileno(), src_off, length, dst_off
        try:
            fcntl.ioctl(d.fileno(), FICLONERANGE, arg)
        except OSError:
            if NEED_CLONE:
                raise
            return False
    return True


def reflink_copy(src, dst):
    """cp --reflink=auto."""
    with open(src, "rb") as s, open(dst, "wb") as d:
        try:
            fcntl.ioctl(d.fileno(), FICLONE, s.fileno())
        except OSError:
            if NEED_CLONE:
                raise
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


def pwrite(path, data, off):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def populate_round(m, s, rnd):
    d, e = f"{m}/d{s}", f"{m}/e{s}"
    for sub in [f"d{s}", f"e{s}", f"deep{s}/a/b/c", f"olddir{s}", f"dirmv{s}/sub",
                f"d{s}/dirchmod", f"d{s}/dirxattr", f"d{s}/deltree/x/y"]:
        os.makedirs(os.path.join(m, sub), exist_ok=True)
    for n in NAMES:
        write(f"{d}/{n}", rnd.randbytes(16384 + rnd.randrange(8192)))
    os.setxattr(f"{d}/xattr-rm", "user.old", b"gone")
    # Large values: an ext4 xattr block, an XFS remote value.
    os.setxattr(f"{d}/xattr-big-rm", "user.big", rnd.randbytes(3000))
    os.setxattr(f"{d}/xattr-same-size", "user.v", b"A" * 100)
    write(f"{d}/big", rnd.randbytes(4 << 20))
    write(f"{m}/deep{s}/a/b/c/leaf", rnd.randbytes(3000))
    os.symlink(f"d{s}/same", f"{d}/sym-old")
    os.symlink("same", f"{d}/sym-atomic")
    os.symlink("same", f"{d}/lchown-sym")
    os.symlink("same", f"{d}/sym-del")
    # Second links in a directory no round changes: changing the inode
    # through d/ must list these paths too.
    os.link(f"{d}/ml", f"{m}/keep/ml-link{s}")
    os.link(f"{d}/ul", f"{m}/keep/ul-link{s}")
    write(f"{e}/exch-b", rnd.randbytes(7000))
    write(f"{d}/tiny-grow", b"0123456789")       # inline on ext4 -O inline_data
    for i in range(5):
        write(f"{m}/dirmv{s}/f{i}", rnd.randbytes(3000))
    write(f"{m}/dirmv{s}/sub/g", rnd.randbytes(100))
    for i in range(20):
        write(f"{d}/deltree/x/y/t{i}", rnd.randbytes(200))
    # Preallocated: unwritten extents inside the size, and past EOF.
    write(f"{d}/prealloc", rnd.randbytes(65536))
    fallocate(f"{d}/prealloc", 0, 0, 1 << 20)
    write(f"{d}/prealloc-eof", rnd.randbytes(10000))
    fallocate(f"{d}/prealloc-eof", FALLOC_FL_KEEP_SIZE, 0, 1 << 20)
    # Sparse: data at both ends, a hole in between.
    fd = os.open(f"{d}/sparse-old", os.O_WRONLY | os.O_TRUNC)
    os.pwrite(fd, rnd.randbytes(4096), 0)
    os.pwrite(fd, rnd.randbytes(4096), 1 << 20)
    os.close(fd)
    write(f"{d}/mmap-sparse", b"")
    os.truncate(f"{d}/mmap-sparse", 65536)
    # Reflinks (where the filesystem shares blocks): a copy sharing
    # everything, and a file into which modify clones new data.
    write(f"{d}/rl-src", rnd.randbytes(65536))
    reflink_copy(f"{d}/rl-src", f"{d}/rl-copy")
    write(f"{d}/clone-dst", rnd.randbytes(65536))
    write(f"{d}/empty", b"")
    write(f"{d}/tiny", b"x")


def populate(m):
    rnd = random.Random(1)
    for sub in ["small", "keep"]:
        os.makedirs(os.path.join(m, sub), exist_ok=True)
    for i in range(50):
        write(f"{m}/keep/k{i}", rnd.randbytes(5000))
    for s in ROUNDS:
        populate_round(m, s, rnd)
    for i in range(SMALL):
        write(f"{m}/small/f{i}", f"small file {i}\n".encode())
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
    # Punched by the rounds.
    os.pwrite(fd, rnd.randbytes(2 * 65536), 64 * 65536)
    os.close(fd)


def modify(m, writes_path, rnd_round):
    rnd = random.Random(1 + rnd_round)
    s = ROUNDS[rnd_round - 1]
    writes = open(writes_path, "w")

    def wrote(path, off, length):
        writes.write(f"{os.path.relpath(path, m)} {off} {length}\n")

    d, e = f"{m}/d{s}", f"{m}/e{s}"
    # Same size, mtime and atime restored: mtime/size tools miss it.
    st = os.stat(f"{d}/touchr")
    pwrite(f"{d}/touchr", rnd.randbytes(100), 5000)
    wrote(f"{d}/touchr", 5000, 100)
    os.utime(f"{d}/touchr", ns=(st.st_atime_ns, st.st_mtime_ns))
    size = os.stat(f"{d}/append").st_size
    write(f"{d}/append", b"appended\n", "ab")
    wrote(f"{d}/append", size, 9)
    os.truncate(f"{d}/trunc-shrink", 1000)
    os.truncate(f"{d}/trunc-grow", 100000)
    os.truncate(f"{d}/trunc-zero", 0)
    os.chmod(f"{d}/chmod", 0o600)
    os.chown(f"{d}/chown", 1234, 5678)
    os.setxattr(f"{d}/xattr-set", "user.new", rnd.randbytes(40).hex().encode())
    os.removexattr(f"{d}/xattr-rm", "user.old")
    os.setxattr(f"{d}/xattr-big", "user.big", rnd.randbytes(3000))
    os.removexattr(f"{d}/xattr-big-rm", "user.big")
    os.setxattr(f"{d}/xattr-same-size", "user.v", b"B" * 100)
    os.chmod(f"{d}/dirchmod", 0o700)
    os.setxattr(f"{d}/dirxattr", "user.dir", b"on a directory")
    os.chown(f"{d}/lchown-sym", 4321, 8765, follow_symlinks=False)
    st = os.stat(f"{d}/mtime-only")
    os.utime(f"{d}/mtime-only", ns=(st.st_atime_ns, st.st_mtime_ns - 10**11))
    os.rename(f"{d}/ren-a", f"{d}/ren-b")
    os.rename(f"{d}/mv-src", f"{e}/mv-dst")
    os.rename(f"{d}/repl-src", f"{d}/repl-dst")         # replaces an existing file
    if libc.renameat2(AT_FDCWD, os.fsencode(f"{d}/exch-a"), AT_FDCWD,
                      os.fsencode(f"{e}/exch-b"), RENAME_EXCHANGE):
        raise OSError(ctypes.get_errno(), "renameat2 RENAME_EXCHANGE")
    os.unlink(f"{d}/del")
    os.link(f"{d}/hl", f"{e}/hl2")
    os.link(f"{d}/hl-move", f"{e}/hl-moved")
    os.unlink(f"{d}/hl-move")
    # A file with a second link under keep/: its content changes here, or
    # it loses this link.
    pwrite(f"{d}/ml", rnd.randbytes(64), 0)
    wrote(f"{d}/ml", 0, 64)
    os.unlink(f"{d}/ul")
    os.symlink(f"../d{s}/same", f"{e}/sym-new")
    os.unlink(f"{d}/sym-old")
    os.symlink("d/other", f"{d}/sym-old")
    os.symlink("other", f"{d}/sym-atomic.tmp")
    os.rename(f"{d}/sym-atomic.tmp", f"{d}/sym-atomic")
    os.unlink(f"{d}/sym-del")
    os.mkfifo(f"{d}/fifo-new")
    os.mkdir(f"{d}/newdir")
    write(f"{d}/newdir/file", b"inside\n")
    os.makedirs(f"{d}/newtree/x/y")
    write(f"{d}/newtree/x/y/z", rnd.randbytes(5000))
    os.rmdir(f"{m}/olddir{s}")
    shutil.rmtree(f"{d}/deltree")
    write(f"{d}/falloc", b"")
    fallocate(f"{d}/falloc", 0, 0, 1 << 20)
    fallocate(f"{d}/punch", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192)
    wrote(f"{d}/punch", 4096, 8192)
    try:
        fallocate(f"{d}/zero", FALLOC_FL_ZERO_RANGE, 0, 4096)
        wrote(f"{d}/zero", 0, 4096)
    except OSError:
        pass    # not every filesystem zeroes ranges
    # Into unwritten extents inside the size and past EOF (buffered).
    pwrite(f"{d}/prealloc", rnd.randbytes(4096), 512 << 10)
    wrote(f"{d}/prealloc", 512 << 10, 4096)
    size = os.stat(f"{d}/prealloc-eof").st_size
    write(f"{d}/prealloc-eof", rnd.randbytes(20000), "ab")
    wrote(f"{d}/prealloc-eof", size, 20000)
    # O_DIRECT: one aligned block in place, one into an unwritten extent,
    # one extending a new file.
    buf = mmap.mmap(-1, 4096)
    buf.write(rnd.randbytes(4096))
    for name, off, flags in [("odirect", 8192, 0), ("prealloc", 256 << 10, 0),
                             ("odirect-new", 0, os.O_CREAT)]:
        fd = os.open(f"{d}/{name}", os.O_WRONLY | os.O_DIRECT | flags, 0o644)
        os.pwritev(fd, [buf], off)
        os.close(fd)
        wrote(f"{d}/{name}", off, 4096)
    # mmap: in place, and into a hole (a page fault allocates).
    for name, off in [("mmap", 100), ("mmap-sparse", 32768 + 100)]:
        fd = os.open(f"{d}/{name}", os.O_RDWR)
        mm = mmap.mmap(fd, 65536 if name == "mmap-sparse" else 8192)
        mm[off:off + 10] = b"mmapwrite!"
        mm.flush()
        mm.close()
        os.close(fd)
        wrote(f"{d}/{name}", off, 10)
    # Sparse: a new file with data far out, and a hole filled in an old one.
    fd = os.open(f"{d}/sparse", os.O_WRONLY | os.O_CREAT, 0o644)
    os.pwrite(fd, rnd.randbytes(4096), 1000 * 4096)
    os.close(fd)
    pwrite(f"{d}/sparse-old", rnd.randbytes(4096), 512 << 10)
    wrote(f"{d}/sparse-old", 512 << 10, 4096)
    # Inline data that outgrows the inode (ext4 inline_data).
    write(f"{d}/tiny-grow", rnd.randbytes(8000), "ab")
    wrote(f"{d}/tiny-grow", 10, 8000)
    # Many small files: some changed, some created, deleted and renamed.
    first = 0 if rnd_round == 1 else 50
    for i in range(first, SMALL, 100):
        write(f"{m}/small/f{i}", b"changed\n", "ab")
    for i in range(first + 7, SMALL, 200):
        os.unlink(f"{m}/small/f{i}")
    for i in range(first + 9, SMALL, 200):
        os.rename(f"{m}/small/f{i}", f"{m}/small/r{rnd_round}-f{i}")
    os.makedirs(f"{m}/small-new", exist_ok=True)
    for i in range(NEW_SMALL):
        write(f"{m}/small-new/r{rnd_round}-n{i}", f"new small file {i}\n".encode())
    os.rename(f"{m}/deep{s}/a/b/c/leaf", f"{m}/deep{s}/leaf-moved")
    # A directory renamed with its contents.
    os.rename(f"{m}/dirmv{s}", f"{e}/dirmv-renamed")
    # Copy-on-write of shared blocks: rl-src changes, rl-copy does not.
    pwrite(f"{d}/rl-src", rnd.randbytes(4096), 8192)
    wrote(f"{d}/rl-src", 8192, 4096)
    # New data cloned into an existing file (both own the new blocks),
    # a reflinked copy of new data, and copy_file_range (a reflink where
    # the filesystem can).
    write(f"{d}/rl-new", rnd.randbytes(65536))
    syncfs(d)
    if clone_range(f"{d}/rl-new", f"{d}/clone-dst", 0, 16384, 16384):
        wrote(f"{d}/clone-dst", 16384, 16384)
    reflink_copy(f"{d}/rl-new", f"{e}/rl-new-copy")
    with open(f"{d}/rl-new", "rb") as src, open(f"{d}/cfr-dst", "r+b") as dst:
        n = os.copy_file_range(src.fileno(), dst.fileno(), 8192, 0, 4096)
        wrote(f"{d}/cfr-dst", 4096, n)
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
        wrote(img, off, 4096)
    os.fsync(fd)
    os.close(fd)
    punch = (63 + rnd_round) * 65536
    try:
        fallocate(img, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, punch, 65536)
        wrote(img, punch, 65536)
    except OSError:
        pass
    writes.close()


def main():
    a = sys.argv[1:]
    if a[:1] == ["populate"] and len(a) == 2:
        populate(a[1])
    elif a[:1] == ["modify"] and len(a) in (3, 4):
        modify(a[1], a[2], int(a[3]) if len(a) == 4 else 1)
    elif a[:1] == ["exchange"] and len(a) == 3:
        if libc.renameat2(AT_FDCWD, os.fsencode(a[1]), AT_FDCWD, os.fsencode(a[2]),
                          RENAME_EXCHANGE):
            raise OSError(ctypes.get_errno(), "renameat2 RENAME_EXCHANGE")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
