#!/usr/bin/env python3
"""Verify a gavel audit database from docs/record-format.md alone.

Usage: verify_chain.py DB        check every row, print the first problem
       verify_chain.py --vector  print the documented test vector
Exit 0 intact, 1 tampered.
"""
import hashlib
import sqlite3
import struct
import sys


def lp(b):
    return struct.pack(">Q", len(b)) + b


def opt(v):
    return b"\x00" if v is None else b"\x01" + lp(v.encode())


def enc(seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload):
    return (lp(b"gavel/event/v1") + struct.pack(">Q", seq) + lp(log_id) + struct.pack(">q", ts_us)
            + lp(kind.encode()) + lp(call_id.encode()) + opt(tool) + opt(action) + opt(rule_id)
            + opt(approval) + opt(status) + lp(payload))


def leaf(*fields):
    return hashlib.sha256(b"\x00" + enc(*fields)).digest()


def genesis(log_id, origin, fmt):
    return hashlib.sha256(lp(b"gavel/genesis/v1") + lp(log_id) + lp(origin.encode()) + struct.pack(">I", fmt)).digest()


def link(prev, lf):
    return hashlib.sha256(b"gavel/chain/v1" + prev + lf).digest()


def vector():
    log_id = bytes(range(16))
    g = genesis(log_id, "gavel test", 1)
    lf = leaf(1, log_id, 1764676800000000, "decision", "call-1", "bash", "deny", "bash.hard_deny", None, None, b'{"action":"deny"}')
    print("genesis =", g.hex())
    print("leaf    =", lf.hex())
    print("chain   =", link(g, lf).hex())


def verify(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    log_id, origin, fmt, stored_genesis = db.execute("SELECT log_id, origin, format, genesis FROM log_meta").fetchone()
    prev = genesis(log_id, origin, fmt)
    if prev != stored_genesis:
        print("identity_mismatch")
        return 1
    rows = db.execute("SELECT seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload, leaf, chain FROM events ORDER BY seq")
    n = 0
    for row in rows:
        n += 1
        seq, row_log, *fields, payload, stored_leaf, stored_chain = row
        if seq != n:
            print(f"seq_gap at seq {n}")
            return 1
        if row_log != log_id:
            print(f"log_id_mismatch at seq {seq}")
            return 1
        lf = leaf(seq, row_log, *fields, bytes(payload))
        if lf != stored_leaf:
            print(f"content_mismatch at seq {seq}")
            return 1
        prev = link(prev, lf)
        if prev != stored_chain:
            print(f"chain_break at seq {seq}")
            return 1
    print(f"ok: {n} rows")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--vector"]:
        vector()
    else:
        sys.exit(verify(sys.argv[1]))
