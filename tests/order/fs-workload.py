#!/usr/bin/env python3
"""A filesystem workload for the issue-order test, in one process (process
starts are slow under TCG): file churn (create, rename, rewrite, hard link,
delete, directories), fsync-heavy overwrites, and a sqlite database in
autocommit mode (a journal write and fsyncs per statement).

    fs-workload.py DIR [SEED]
"""
import os
import random
import sqlite3
import sys


def churn(d, rnd):
    names = []
    for i in range(60):
        p = os.path.join(d, "f%d" % i)
        with open(p, "wb") as f:
            f.write(rnd.randbytes(rnd.randrange(100, 30000)))
        names.append(p)
    os.sync()
    for r in range(2):
        sub = os.path.join(d, "dir%d" % r)
        os.makedirs(sub, exist_ok=True)
        for i, p in enumerate(names):
            q = p + ".new"
            with open(p, "rb") as f:
                data = f.read()
            with open(q, "wb") as f:
                f.write(data + rnd.randbytes(rnd.randrange(1, 5000)))
            os.rename(q, p)
            if i % 7 == 0:
                os.link(p, os.path.join(sub, "l%d" % i))
            if i % 11 == 0:
                os.truncate(p, rnd.randrange(0, 4096))
        for i in range(0, len(names), 5):
            os.unlink(names[i])
            with open(names[i], "wb") as f:
                f.write(rnd.randbytes(2000))


def fsyncs(d, rnd):
    p = os.path.join(d, "fsync.dat")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, 4 << 20)
        for _ in range(120):
            os.pwrite(fd, rnd.randbytes(4096), rnd.randrange(0, 1024) * 4096)
            os.fsync(fd)
    finally:
        os.close(fd)


def database(d, rnd):
    db = sqlite3.connect(os.path.join(d, "db.sqlite"), isolation_level=None)
    db.execute("create table t(k integer primary key, v blob)")
    for _ in range(80):
        db.execute("insert into t(v) values(?)", (rnd.randbytes(3000),))
    db.execute("update t set v = randomblob(100) where k % 3 = 0")
    db.execute("delete from t where k % 5 = 0")
    db.close()


def main():
    d = sys.argv[1]
    rnd = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    churn(d, rnd)
    fsyncs(d, rnd)
    database(d, rnd)
    os.sync()


if __name__ == "__main__":
    main()
