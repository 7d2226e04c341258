#!/usr/bin/python3 -S
"""Concurrent SQLite writers in WAL mode (the e2e workload, tests/vm/e2e.sh).

  sqlite-writers.py DB WRITERS TRANSACTIONS SEED

WRITERS processes share DB (journal_mode=WAL, synchronous=NORMAL, as
applications set it); each runs TRANSACTIONS transactions that insert
rows, update and delete others; writer 0 checkpoints the WAL now and
then.  Prints "started" once the first transaction has committed.
"""
import os
import random
import sqlite3
import sys
import traceback


def writer(db, k, n, seed):
    rnd = random.Random(seed * 1000 + k)
    c = sqlite3.connect(db, timeout=60, isolation_level=None)
    c.execute("PRAGMA synchronous=NORMAL")
    for i in range(n):
        c.execute("BEGIN IMMEDIATE")
        for _ in range(5):
            c.execute("INSERT INTO t(w, v, pad) VALUES (?, ?, ?)",
                      (k, rnd.randrange(1000), rnd.randbytes(rnd.randrange(50, 3000))))
        c.execute("UPDATE t SET v = v + 1 WHERE id % 97 = ?", (rnd.randrange(97),))
        c.execute("DELETE FROM t WHERE id IN (SELECT id FROM t WHERE w = ? ORDER BY random() LIMIT 2)", (k,))
        c.execute("COMMIT")
        if k == 0 and i == 0:
            print("started", flush=True)
        if k == 0 and i % 50 == 49:
            c.execute("PRAGMA wal_checkpoint(PASSIVE)")
    c.close()


def main():
    db, writers, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    c = sqlite3.connect(db, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, w INT, v INT, pad BLOB)")
    c.close()
    pids = []
    for k in range(writers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                writer(db, k, n, seed)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    bad = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        bad += status != 0
    sys.exit(1 if bad else 0)


main()
