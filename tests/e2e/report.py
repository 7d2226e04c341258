#!/usr/bin/python3 -S
"""One line of the e2e report (tests/vm/e2e.sh): what truly changed, what
chj-resolve listed, what rsync copied.

  report.py FS WORKLOAD WHEN MOUNT TRUTH LIST RESOLVE_MS RSYNC_OUT

TRUTH is rsync's itemized comparison of source and backup taken before the
incremental (-n -c -H -A -X --delete -i): the paths that truly differ.
LIST is chj-resolve's -0 output (absolute paths), RESOLVE_MS its run time,
RSYNC_OUT the example's output with rsync's --stats.  Prints
  e2e FS WORKLOAD WHEN changed=N deleted=N listed=N hit=N precision=P
      unlisted=N copied=BYTES full=BYTES resolve_ms=N
where hit is the listed paths that truly changed, precision hit/listed,
unlisted the changed paths not listed themselves (copied only because
their directory was listed: rsync takes a listed directory's entries).
"""
import os
import re
import sys


def truth_paths(path):
    changed, deleted = set(), set()
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            line = line.rstrip("\n")
            if len(line) < 13:
                continue
            flags, name = line[:11], line[12:]
            if flags[0] == "h" and " => " in name:
                name = name.split(" => ")[0]       # a hard link: NAME => TARGET
            elif flags[1] == "L" and " -> " in name:
                name = name.split(" -> ")[0]       # a symlink: NAME -> TARGET
            name = name.rstrip("/") or "."
            if name.startswith("./"):
                name = name[2:]
            if flags.startswith("*deleting"):
                deleted.add(name)
            else:
                changed.add(name)
    return changed, deleted


def listed_paths(path, mount):
    with open(path, "rb") as f:
        raw = f.read()
    out = set()
    for p in raw.split(b"\0"):
        if not p:
            continue
        p = os.fsdecode(p)
        rel = os.path.relpath(p, mount)
        out.add("." if rel == "." else rel)
    return out


def full_size(mount):
    seen, total = set(), 0
    for d, dirs, files in os.walk(mount):
        for n in files:
            st = os.lstat(os.path.join(d, n))
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def main():
    fs, wl, when, mount, truth, lst, ms, rsync_out = sys.argv[1:9]
    changed, deleted = truth_paths(truth)
    listed = listed_paths(lst, mount)
    hit = listed & changed
    with open(rsync_out) as f:
        m = re.search(r"Total transferred file size: ([\d,]+)", f.read())
    copied = int(m.group(1).replace(",", "")) if m else -1
    with open(ms) as f:
        resolve_ms = int(f.read())
    prec = len(hit) / len(listed) if listed else 1.0
    print(f"e2e {fs} {wl} {when} changed={len(changed)} deleted={len(deleted)} "
          f"listed={len(listed)} hit={len(hit)} precision={prec:.2f} "
          f"unlisted={len(changed - listed)} copied={copied} full={full_size(mount)} "
          f"resolve_ms={resolve_ms}")
    for p in sorted(changed - listed)[:5]:
        print(f"  unlisted: {p}")


main()
