#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Check a command's JSON output against docs/json.md's vocabulary.

    json-vocab.py DOC COMMAND [--all] < OUTPUT

COMMAND is a first column of DOC's key table (status, changes, dump,
chj-resolve).  OUTPUT is one JSON document, or JSON Lines.  Every key found
at any depth must be one the table lists for COMMAND (a key or an old key),
in the one key style; with --all, every key and old key listed must also
appear somewhere.  Exit 1 with the differences named.
"""
import json
import re
import sys

STYLE = re.compile(r"^[a-z][a-z0-9_]*$")


def vocabulary(doc, command):
    keys, old = set(), set()
    for line in open(doc, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] != command:
            continue
        keys.add(cells[1].strip("`"))
        if cells[3]:
            old.add(cells[3].strip("`"))
    return keys, old


def keys_of(o, out):
    if isinstance(o, dict):
        for k, v in o.items():
            out.add(k)
            keys_of(v, out)
    elif isinstance(o, list):
        for v in o:
            keys_of(v, out)
    return out


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    doc, command, want_all = sys.argv[1], sys.argv[2], "--all" in sys.argv[3:]
    keys, old = vocabulary(doc, command)
    if not keys:
        raise SystemExit(f"json-vocab: {doc}: no keys for {command}")
    text = sys.stdin.read()
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    seen = set()
    for d in docs:
        keys_of(d, seen)
    bad = []
    for k in sorted(seen - keys - old):
        bad.append(f"{command}: key {k!r} printed, not in {doc}")
    for k in sorted(keys):
        if not STYLE.match(k):
            bad.append(f"{command}: key {k!r} in {doc} is not in the key style")
    if want_all:
        for k in sorted((keys | old) - seen):
            bad.append(f"{command}: key {k!r} in {doc}, not printed")
    for b in bad:
        print("json-vocab: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
