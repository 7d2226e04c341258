#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Ground truth for chj-resolve tests, computed independently of it.

  fstruth.py snap ROOT OUT
      Record every path under ROOT (not crossing mounts): type, inode, size,
      mode, uid, gid, nlink, mtime, ctime, xattrs, a content hash (files),
      the target (symlinks) and the sorted entry names (directories).

  fstruth.py check BEFORE AFTER RESOLVE_OUT... --mount M [--writes F] [--snap]
      The truly changed set: every path of AFTER that is new, names another
      inode, or whose record differs, and every directory whose entries
      changed.  Fails (exit 1) if any of it is missing from one of
      chj-resolve's outputs (-0 or --json, told apart by their first
      byte).  Prints the false positives (listed but unchanged) and the
      precision.  With --writes F (lines "PATH OFFSET LENGTH", PATH relative
      to M), the ranges of PATH in each --json output must cover every such
      byte range.  --snap: first snapshot M into AFTER (one process less).

  fstruth.py diffimg A B [UNIT] > ranges
      Sector ranges ("START LEN") of the UNIT-byte blocks (default 4096)
      where two images differ: a change map for host tests, where there is
      no dm-chj.  It misses blocks rewritten with the same content; a
      larger UNIT (btrfs: its node size) makes up for that where the
      resolver relies on whole blocks being marked.
"""
import hashlib
import json
import os
import stat
import sys


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return []
    out = []
    for n in sorted(names):
        try:
            v = os.getxattr(path, n, follow_symlinks=False)
        except OSError:
            v = b"?"
        out.append([n, hashlib.sha256(v).hexdigest()])
    return out


ZERO = bytes(65536)


def content_hash(path):
    """Hash of the content: 64 KiB blocks that are not all zeros, with their
    index.  Holes are skipped (SEEK_DATA), and read the same as zeros.
    One hash object per file, fed each block whole: a hash object per block
    (OpenSSL's constructor) was a sixth of a snapshot under TCG."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                pos = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, pos, os.SEEK_HOLE)
            pos -= pos % 65536
            while pos < end:
                b = os.pread(fd, 65536, pos)
                if not b:
                    break
                if b != ZERO[:len(b)]:
                    h.update(pos.to_bytes(8, "little"))
                    h.update(len(b).to_bytes(4, "little"))
                    h.update(b)
                pos += 65536
    finally:
        os.close(fd)
    return h.hexdigest()


def record(path, rel, st):
    r = {
        "ino": st.st_ino, "mode": st.st_mode, "uid": st.st_uid,
        "gid": st.st_gid, "nlink": st.st_nlink, "mtime": st.st_mtime_ns,
        "ctime": st.st_ctime_ns,
        "xattrs": xattrs(path),
    }
    if stat.S_ISREG(st.st_mode):
        r["size"] = st.st_size
        r["hash"] = content_hash(path)
    elif stat.S_ISLNK(st.st_mode):
        r["target"] = os.fsdecode(os.readlink(path))
    elif stat.S_ISDIR(st.st_mode):
        r["entries"] = sorted(os.fsdecode(e) for e in os.listdir(os.fsencode(path)))
        if st.st_ino == 2 and rel:
            # btrfs's stand-in for a subvolume nested in a snapshot: made
            # up in memory, with the time it was (re)instantiated.
            del r["mtime"], r["ctime"]
    return r


def mount_points(root):
    """Mount points strictly under root (from mountinfo)."""
    pts = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()[4]
            p = p.encode().decode("unicode_escape").encode("latin-1").decode(
                "utf-8", "surrogateescape")
            if p.startswith(root.rstrip("/") + "/"):
                pts.add(p)
    return pts


def snap(root, out):
    root = os.path.abspath(root).rstrip("/") or "/"
    skip = mount_points(root)
    recs = {}
    recs[""] = record(root, "", os.lstat(root))
    stack = [""]
    # Paths joined with "/" by hand: os.path.join was a fifth of a snapshot
    # under TCG.  (root has no trailing "/", rel no leading one.)
    top = root if root != "/" else ""
    while stack:
        d = stack.pop()
        full = top + "/" + d if d else root
        for name in os.listdir(os.fsencode(full)):
            name = os.fsdecode(name)
            rel = d + "/" + name if d else name
            path = top + "/" + rel
            if path in skip:
                continue    # another filesystem mounted here
            st = os.lstat(path)
            recs[rel] = record(path, rel, st)
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
    with open(out, "w") as f:
        f.write(json.dumps(recs, sort_keys=True))    # the C encoder: dump() is not
    print(f"snap: {len(recs)} paths under {root}")


def load(p):
    with open(p) as f:
        return json.load(f)


def resolve_output(path, mount):
    """Relative paths (and JSON records) from chj-resolve's output; whether
    it is JSON."""
    mount = os.path.abspath(mount)
    listed, recs = set(), {}
    data = open(path, "rb").read()
    is_json = data[:1] == b"{"
    if is_json:
        for line in data.decode("utf-8", "surrogateescape").splitlines():
            if not line.strip():
                continue
            o = json.loads(line)
            # docs/json.md: a ranges array's unit is its object's "unit".
            if "ranges" in o and o.get("unit") != "bytes":
                raise SystemExit(f"check: ranges without \"unit\": \"bytes\": {line!r}")
            listed.add(o["path"])
            recs[o["path"]] = o
    else:
        for p in data.split(b"\0"):
            if p:
                listed.add(os.fsdecode(p))
    rel = set()
    relrecs = {}
    for p in listed:
        if p == mount:
            r = ""
        elif p.startswith(mount.rstrip("/") + "/"):
            r = p[len(mount.rstrip("/")) + 1:]
        else:
            raise SystemExit(f"check: output path outside the mount: {p!r}")
        rel.add(r)
        if p in recs:
            relrecs[r] = recs[p]
    return rel, relrecs, is_json


def covered(ranges, off, length):
    end = off + length
    pos = off
    for r in sorted(ranges, key=lambda x: x["start"]):
        if r["start"] <= pos < r["start"] + r["length"]:
            pos = r["start"] + r["length"]
            if pos >= end:
                return True
    return pos >= end


def check(before, after, outs, mount, writes):
    b, a = load(before), load(after)
    truth = {}
    by_ino = {}
    for rel, rb in b.items():
        by_ino.setdefault(rb["ino"], []).append(rb)
    moved = set()
    for rel in sorted(a):   # parents before children
        ra = a[rel]
        rb = b.get(rel)
        parent = os.path.dirname(rel)
        # (Inode 2 directories are btrfs's stand-ins for a nested
        # subvolume inside a snapshot: part of the new snapshot, no inode.)
        if rb is None and rel and (truth.get(parent) == "new path" or parent in moved) and \
                (any(x == ra for x in by_ino.get(ra["ino"], [])) or
                 (ra["ino"] == 2 and stat.S_ISDIR(ra["mode"]))):
            # Unchanged, under a new or renamed directory: listing that
            # directory is what tells a backup to read it whole.
            moved.add(rel)
            continue
        if rb is None:
            truth[rel] = "new path"
        elif rb["ino"] != ra["ino"]:
            truth[rel] = "other inode"
        elif rb != ra:
            diff = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
            truth[rel] = "changed " + ",".join(diff)
    ok = True
    for out in outs:
        ok = check_one(truth, a, out, mount, writes) and ok
    return 0 if ok else 1


def check_one(truth, a, out, mount, writes):
    listed, recs, is_json = resolve_output(out, mount)
    missing = sorted(set(truth) - listed)
    fp = sorted(p for p in listed - set(truth) if p in a)
    gone = sorted(p for p in listed if p not in a)
    ok = True
    for p in missing:
        print(f"MISSING: /{p}: {truth[p]}")
        ok = False
    if writes and is_json:
        for line in open(writes):
            p, off, ln = line.split()
            r = recs.get(p)
            if r is None:
                print(f"MISSING: /{p}: written, not in the --json output")
                ok = False
                continue
            if not covered(r.get("ranges", []), int(off), int(ln)):
                print(f"UNCOVERED: /{p}: bytes {off}+{ln} not in its ranges")
                ok = False
    prec = len(truth) / len(listed) if listed else 1.0
    print(f"check {os.path.basename(out)}: truly changed {len(truth)}, listed {len(listed)}, "
          f"missing {len(missing)}, false positives {len(fp)}, listed but gone {len(gone)}, "
          f"precision {prec:.2f}")
    if fp:
        print("false positives (first 20): " + " ".join("/" + p for p in fp[:20]))
    return ok


def diffimg(pa, pb, region=4096):
    sa, sb = os.path.getsize(pa), os.path.getsize(pb)
    n = max(sa, sb)
    fa, fb = open(pa, "rb"), open(pb, "rb")
    start = None
    chunk = 1 << 20
    pos = 0
    out = sys.stdout
    while pos < n:
        da, db = fa.read(chunk), fb.read(chunk)
        if da == db and len(da) == chunk:
            if start is not None:
                out.write(f"{start // 512} {(pos - start) // 512}\n")
                start = None
            pos += chunk
            continue
        for o in range(0, max(len(da), len(db), chunk), region):
            if pos + o >= n:
                break
            if da[o:o + region] != db[o:o + region]:
                if start is None:
                    start = pos + o
            elif start is not None:
                out.write(f"{start // 512} {(pos + o - start) // 512}\n")
                start = None
        pos += chunk
    if start is not None:
        out.write(f"{start // 512} {(n - start) // 512}\n")


def main():
    a = sys.argv[1:]
    if a[:1] == ["snap"] and len(a) == 3:
        snap(a[1], a[2])
    elif a[:1] == ["diffimg"] and len(a) in (3, 4):
        diffimg(a[1], a[2], int(a[3]) if len(a) == 4 else 4096)
    elif a[:1] == ["check"] and "--mount" in a[4:] and a.index("--mount") + 1 < len(a):
        m = a.index("--mount")
        writes = None
        if "--writes" in a[m:]:
            writes = a[a.index("--writes") + 1]
        if "--snap" in a[m:]:
            snap(a[m + 1], a[2])
        sys.exit(check(a[1], a[2], a[3:m], a[m + 1], writes))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
