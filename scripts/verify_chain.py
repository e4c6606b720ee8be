#!/usr/bin/env python3
"""Verify a gavel audit log from docs/record-format.md and docs/checkpoints.md alone.

Usage: verify_chain.py [--json] [--checkpoint FILE] [--public-key KEY.pub ...] DB
       verify_chain.py [--json] [--checkpoint FILE] [--public-key KEY.pub ...] --export FILE
       verify_chain.py [--json] [--public-key KEY.pub ... [--policy K-of-N]] [--policy TLOG-POLICY] --receipt FILE
       verify_chain.py --conformance fixtures/conformance   run the conformance suite (docs/receipts.md)
       verify_chain.py --vector      print the documented test vectors
Prints the first problem (or `ok: N rows`), or with --json the report of
`gavel verify --json`. Exit 0 intact, 1 tampered, 2 could not verify.
Standard library only, except that --public-key needs the `cryptography` package.
"""
import base64
import datetime
import hashlib
import json
import sqlite3
import struct
import sys

APPLICATION_ID = 0x6761766C
SCHEMA = 8
FORMATS = (1, 2)
WHO = ("user", "host", "client", "session", "agent")


class Refused(Exception):
    """The input cannot be verified at all (exit 2)."""


class Bad(Exception):
    def __init__(self, problem, seq=None, detail=""):
        super().__init__(problem)
        self.problem, self.seq, self.detail = problem, seq, detail


# ---- record-format.md: encoding --------------------------------------------

def lp(b):
    return struct.pack(">Q", len(b)) + b


def opt(v):
    return b"\x00" if v is None else b"\x01" + lp(v.encode())


def enc(fmt, who, seq, log_id, ts_us, kind, call_id, tool, action, rule_id, approval, status, payload):
    tag = b"gavel/event/v1" if fmt == 1 else b"gavel/event/v2"
    out = (lp(tag) + struct.pack(">Q", seq) + lp(log_id) + struct.pack(">q", ts_us)
           + lp(kind.encode()) + lp(call_id.encode()) + opt(tool) + opt(action) + opt(rule_id)
           + opt(approval) + opt(status))
    if fmt != 1:
        out += b"".join(opt(w) for w in who)
    return out + lp(payload)


def leaf(fmt, who, *fields):
    return hashlib.sha256(b"\x00" + enc(fmt, who, *fields)).digest()


# ---- record-format.md: "JSON as gavel reads it" -----------------------------

MAX_DEPTH = 127  # arrays and objects open at once


def too_deep(text):
    depth, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif c in "]}":
            depth -= 1
    return False


def no_lone_surrogate(v):
    if isinstance(v, str):
        if any("\ud800" <= c <= "\udfff" for c in v):
            raise ValueError("lone surrogate")
    elif isinstance(v, list):
        for x in v:
            no_lone_surrogate(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            no_lone_surrogate(k)
            no_lone_surrogate(x)


def loads(text):
    """JSON as gavel reads it (ValueError when it is not JSON): RFC 8259, at
    most 127 levels deep, no lone surrogate, finite numbers; integers in
    -2**63 .. 2**64-1 stay integers, other numbers are doubles; a repeated
    member keeps its last value."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8")
    if too_deep(text):
        raise ValueError("nested too deep")

    def double(s):
        try:
            f = float(s)
        except OverflowError:
            raise ValueError("number out of range")
        if f in (float("inf"), float("-inf")):
            raise ValueError("number out of range")
        return f

    def num(s):
        n = int(s)
        return n if -2**63 <= n < 2**64 else double(s)

    def nope(_):
        raise ValueError("not JSON")
    v = json.loads(text, parse_int=num, parse_float=double, parse_constant=nope)
    no_lone_surrogate(v)
    return v


def switch_of(kind, payload):
    """For a `format` row: the format its payload names (-1 when it names none)."""
    if kind != "format":
        return None
    try:
        v = loads(payload)
    except (ValueError, RecursionError):
        return -1
    f = v.get("format") if isinstance(v, dict) else None
    return f if isinstance(f, int) and not isinstance(f, bool) else -1


def genesis(log_id, origin, fmt):
    return hashlib.sha256(lp(b"gavel/genesis/v1") + lp(log_id) + lp(origin.encode()) + struct.pack(">I", fmt)).digest()


def link(prev, lf):
    return hashlib.sha256(b"gavel/chain/v1" + prev + lf).digest()


def merkle_root(leaves):
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + merkle_root(leaves[:k]) + merkle_root(leaves[k:])).digest()


def vector():
    log_id = bytes(range(16))
    row = (1, log_id, 1764676800000000, "decision", "call-1", "bash", "deny", "bash.hard_deny", None, None,
           b'{"action":"deny"}')
    leaves = []
    for fmt, who in ((1, (None,) * 5), (2, ("alice", "build-01", "claude-code", "s-1", None))):
        g = genesis(log_id, "gavel test", fmt)
        lf = leaf(fmt, who, *row)
        print(f"format {fmt}")
        print("genesis =", g.hex())
        print("leaf    =", lf.hex())
        print("chain   =", link(g, lf).hex())
        leaves.append(lf)
    print("two-leaf Merkle root =", merkle_root(leaves).hex())


# ---- checkpoints.md: notes and keys ----------------------------------------

def b64(text):
    raw = base64.b64decode(text, validate=True)
    if base64.b64encode(raw).decode() != text:
        raise ValueError("non-canonical base64")
    return raw


def parse_body(body):
    """origin, size, root of a note body (ending in its newline)."""
    if not body.endswith("\n") or any(c < " " and c != "\n" for c in body):
        raise ValueError("malformed body")
    lines = body[:-1].split("\n")
    if len(lines) < 3 or not lines[0] or any(not l for l in lines[3:]):
        raise ValueError("malformed body")
    size = lines[1]
    if not size.isascii() or not size.isdigit() or (len(size) > 1 and size[0] == "0") or int(size) >= 2**64:
        raise ValueError("malformed size")
    root = b64(lines[2])
    if len(root) != 32:
        raise ValueError("root is not 32 bytes")
    return lines[0], int(size), root


# Unicode White_Space: what "white space" means in a key name and a blank export line.
WHITE_SPACE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {
    chr(c) for c in range(0x2000, 0x200B)}


def key_name_ok(name):
    """checkpoints.md, "Keys": non-empty, no white space, no `+`, no control character (Cc)."""
    return bool(name) and not any(
        c in WHITE_SPACE or c == "+" or c < " " or "\x7f" <= c <= "\x9f" for c in name)


def split_note(note):
    """The signed text and the (name, key id, signature) lines of a note."""
    if any(c < " " and c != "\n" for c in note):
        raise ValueError("control character")
    split = note.rfind("\n\n")
    if split < 0:
        raise ValueError("no blank line")
    text, sigs = note[:split + 1], note[split + 2:]
    if not sigs.endswith("\n"):
        raise ValueError("no signature lines")
    lines = []
    for line in sigs[:-1].split("\n"):
        if not line.startswith("\u2014 ") or " " not in line[2:]:
            raise ValueError("bad signature line")
        name, blob = line[2:].split(" ", 1)
        if not key_name_ok(name):
            raise ValueError("bad key name")
        blob = b64(blob)
        if len(blob) < 5:
            raise ValueError("short signature")
        lines.append((name, blob[:4], blob[4:]))
    if len(lines) > 100:
        raise ValueError("too many signatures")
    return text, lines


# The canonical encodings of the 8 Ed25519 points of small order.
SMALL_ORDER = {bytes.fromhex(h) for h in (
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
)}


def on_curve(public):
    """Whether 32 bytes are a strict Ed25519 public key (checkpoints.md, "Keys"):
    RFC 8032's decoding (y below p, x^2 = (y^2-1)/(d y^2+1) has a root, and no
    sign bit on an x of 0), and not one of the 8 points of small order."""
    p = 2**255 - 19
    d = -121665 * pow(121666, p - 2, p) % p
    y = int.from_bytes(public, "little") & (2**255 - 1)
    sign = public[31] >> 7
    if y >= p or public in SMALL_ORDER:
        return False
    x2 = (y * y - 1) * pow(d * y * y + 1, p - 2, p) % p
    if x2 == 0:
        return sign == 0
    return pow(x2, (p - 1) // 2, p) == 1


def read_key(path):
    """A verifier key file (checkpoints.md, "Keys"); anything wrong with it is exit 2."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8").strip("".join(WHITE_SPACE))
        if text.startswith("PRIVATE+KEY+"):
            raise ValueError("a signer key, not a verifier key")
        name, key_id, key_b64 = text.split("+", 2)
        if not key_name_ok(name) or len(key_id) != 8 or any(c not in "0123456789abcdefABCDEF" for c in key_id):
            raise ValueError("bad name or key id")
        key = b64(key_b64)
        if len(key) != 33 or key[0] != 1 or not on_curve(key[1:]):
            raise ValueError("not an Ed25519 verifier key")
    except (OSError, ValueError) as e:
        raise Refused(f"{path}: {e}")
    kid = hashlib.sha256(name.encode() + b"\n" + key).digest()[:4]
    if kid.hex() != key_id.lower():
        raise Refused(f"{path}: key id does not match")
    return name, kid, key[1:]


def open_note(note, keys):
    """The checkpoint of a note: signed by one of `keys` when any is given, else only parsed."""
    text, lines = split_note(note)
    if keys:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        for name, kid, public in keys:
            mine = [s for n, i, s in lines if n == name and i == kid]
            try:
                for sig in mine:
                    Ed25519PublicKey.from_public_bytes(public).verify(sig, text.encode())
            except Exception:
                continue
            if mine:
                return parse_body(text)
        raise ValueError("no valid signature by a given key")
    return parse_body(text)


# ---- record-format.md: verifying --------------------------------------------

def check_notes(origin, log_id, fmt, stored_genesis, given, stored, keys):
    """Steps 1 (origin, genesis) to 3; what each checkpoint vouches for, given first."""
    if origin != "gavel/" + log_id.hex():
        raise Bad("identity_mismatch")
    if genesis(log_id, origin, fmt) != stored_genesis:
        raise Bad("identity_mismatch")
    vouched, given_cp = [], None
    if given is not None:
        try:
            given_cp = open_note(given, keys)
        except ValueError as e:
            raise Bad("checkpoint_signature", None, str(e))
        if given_cp[0] != origin:
            raise Bad("checkpoint_origin")
        vouched.append((given_cp[1], given_cp[2]))
    for size, root, note in stored:
        if size is None or root is None or note is None:
            raise Bad("checkpoint_mismatch")
        try:
            cp = parse_body(split_note(note)[0])
        except ValueError:
            raise Bad("checkpoint_mismatch")
        if cp[1] != size or cp[2] != root:
            raise Bad("checkpoint_mismatch")
        if cp[0] != origin:
            raise Bad("checkpoint_origin")
        if keys:
            try:
                open_note(note, keys)
            except ValueError:
                raise Bad("checkpoint_signature")
        vouched.append((cp[1], cp[2]))
    return vouched, given_cp


class Chain:
    """Step 4, row by row, then step 5."""

    def __init__(self, g, fmt):
        self.prev, self.rows, self.leaves, self.format = g, 0, [], fmt

    def row(self, seq, typed, row_log_id_ok, lf, stored_leaf, stored_chain, fmt=None, switch=None):
        i = self.rows + 1
        if seq != i:
            raise Bad("seq_gap", i)
        if not typed:
            raise Bad("content_mismatch", i)
        if fmt is not None and fmt != self.format:
            raise Bad("content_mismatch", i)
        if not row_log_id_ok:
            raise Bad("log_id_mismatch", i)
        if lf != stored_leaf:
            raise Bad("content_mismatch", i)
        nxt = link(self.prev, lf)
        if nxt != stored_chain:
            raise Bad("chain_break", i)
        if switch is not None:
            # The one switch there is: a format-1 log continued as format 2.
            if self.format != 1 or switch != 2:
                raise Bad("unknown_format", i)
            self.format = 2
        self.prev, self.rows = nxt, i
        self.leaves.append(lf)

    def finish(self, vouched):
        n = self.rows
        for size, root in vouched:
            if size > n:
                raise Bad("checkpoint_truncated", n + 1)
            if merkle_root(self.leaves[:size]) != root:
                raise Bad("checkpoint_root_mismatch")


def utf8(v):
    return v.decode("utf-8") if isinstance(v, bytes) else None


def sqlite_refused(e):
    return Refused(f"cannot read the database: {e}")


def verify_db(path, given, keys, report):
    """record-format.md, "Files" and checks 1 to 5 on a database."""
    import os
    try:
        with open(path, "rb") as f:
            header = f.read(100)
    except OSError as e:
        raise Refused(str(e))
    wal = os.path.exists(path + "-wal")
    if not wal:
        # The header decides, unless a -wal file makes it stale.
        if not header:
            raise Refused("empty file")
        if len(header) < 100 or header[:16] != b"SQLite format 3\x00":
            raise Refused("not a SQLite database")
        if struct.unpack(">i", header[68:72])[0] != APPLICATION_ID:
            raise Refused("not a gavel database")
        if struct.unpack(">i", header[60:64])[0] > SCHEMA:
            raise Refused("a newer schema than this verifier knows")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        db.text_factory = bytes
        app_id, schema, objects = db.execute(
            "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version),"
            " (SELECT count(*) FROM sqlite_master)").fetchone()
    except sqlite3.Error as e:
        raise sqlite_refused(e)
    if app_id != APPLICATION_ID or schema > SCHEMA:
        raise Refused("not a gavel database this verifier knows")
    report["_db"] = (db, schema)
    # Step 1: the identity, up to its format.
    try:
        meta = db.execute("SELECT id, typeof(id), log_id, typeof(log_id), origin, typeof(origin), format, typeof(format),"
                          " typeof(created_us), genesis, typeof(genesis) FROM log_meta").fetchall()
    except sqlite3.Error:
        raise Bad("identity_mismatch")
    if not meta:
        raise Bad("identity_mismatch")
    mid, tid, log_id, tlog, origin, torigin, fmt, tfmt, tcreated, stored_genesis, tgen = meta[0]
    if (tid, tlog, torigin, tfmt, tcreated, tgen) != (b"integer", b"blob", b"text", b"integer", b"integer", b"blob") \
            or mid != 1:
        raise Bad("identity_mismatch")
    try:
        origin = origin.decode("utf-8")
    except UnicodeDecodeError:
        raise Bad("identity_mismatch")
    if len(stored_genesis) != 32 or len(meta) > 1:
        raise Bad("identity_mismatch")
    if fmt not in FORMATS:
        raise Bad("unknown_format")
    report["_identity_read"] = True
    stored = []
    try:
        checkpoint_rows = db.execute(
            "SELECT size, typeof(size), root, typeof(root), note, typeof(note) FROM checkpoints ORDER BY id").fetchall()
    except sqlite3.Error as e:
        raise sqlite_refused(e)
    for size, tsize, root, troot, note, tnote in checkpoint_rows:
        try:
            note = note.decode("utf-8") if tnote == b"text" else None
        except UnicodeDecodeError:
            note = None
        stored.append((size if tsize == b"integer" and size >= 0 else None,
                       root if troot == b"blob" else None, note))
    report["stored_checkpoints"] = len(stored)
    vouched, given_cp = check_notes(origin, log_id, fmt, stored_genesis, given, stored, keys)
    if given_cp is not None:
        report["checkpoint"] = {"origin": given_cp[0], "size": given_cp[1], "holds": False}
    chain = Chain(stored_genesis, fmt)
    report["_chain"] = chain
    want = ["blob", "integer", "text", "text", "text?", "text?", "text?", "text?", "text?", "blob", "blob", "blob",
            *["text?"] * 5]
    try:
        for r in db.execute(f"SELECT seq, {event_columns(schema)} FROM events ORDER BY seq"):
            seq, vals, types = r[0], r[1::2], [t.decode() if isinstance(t, bytes) else t for t in r[2::2]]
            typed = all(t == w or (w == "text?" and t in ("text", "null")) for t, w in zip(types, want))
            # Format 1 does not hash the provenance columns: they must be NULL there.
            if chain.format == 1 and any(v is not None for v in vals[12:17]):
                typed = False
            lf = stored_leaf = stored_chain = switch = None
            if typed:
                try:
                    text = [None if v is None else v.decode("utf-8") for v in vals[2:9]]
                    who = [None if v is None else v.decode("utf-8") for v in vals[12:17]]
                except UnicodeDecodeError:
                    typed = False
            if typed:
                lf = leaf(chain.format, who, seq, vals[0], vals[1], *text, vals[9])
                stored_leaf, stored_chain = vals[10], vals[11]
                switch = switch_of(text[0], vals[9])
            chain.row(seq, typed, typed and vals[0] == log_id, lf, stored_leaf, stored_chain, None, switch)
    except sqlite3.Error as e:
        raise sqlite_refused(e)
    chain.finish(vouched)
    return chain


EVENT_COLUMNS = ["log_id", "ts_us", "kind", "call_id", "tool", "action", "rule_id", "approval", "status", "payload",
                 "leaf", "chain", *WHO]


def event_columns(schema):
    """Each column and its typeof(); below schema 4 the provenance columns are not read: NULL."""
    return ", ".join(f"{c}, typeof({c})" if c not in WHO or schema >= 4 else "NULL, 'null'" for c in EVENT_COLUMNS)


def begins_mid_session(report):
    """record-format.md, "The report": the note about a log a hook began mid-session."""
    db, schema = report["_db"]
    try:
        row = db.execute(f"SELECT {event_columns(schema)} FROM events ORDER BY seq LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    vals, types = row[0::2], [t.decode() if isinstance(t, bytes) else t for t in row[1::2]]
    want = ["blob", "integer", "text", "text", "text?", "text?", "text?", "text?", "text?", "blob", "blob", "blob",
            *["text?"] * 5]
    if not all(t == w or (w == "text?" and t in ("text", "null")) for t, w in zip(types, want)):
        return None
    try:
        for v, t in zip(vals, types):
            if t == "text":
                v.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if vals[2] != b"lifecycle":
        return None
    try:
        payload = loads(vals[9])
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict) or payload.get("event") != "LogStartedMidSession":
        return None
    data = payload.get("data")
    data = data if isinstance(data, dict) else {}
    return {"session_id": data.get("session_id"), "client": data.get("client")}


# ---- record-format.md: exports ----------------------------------------------

def unhex(v):
    if not isinstance(v, str) or len(v) % 2 or any(c not in "0123456789abcdef" for c in v):
        return None
    return bytes.fromhex(v)


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return False


def ts_text(ts_us):
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=ts_us)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0")


def event_row(v, log_id):
    """seq, typed, log id ok, leaf, stored leaf, stored chain, format, switch of an event line."""
    seq = v.get("seq") if isinstance(v, dict) else None
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 or v.get("record") != "event":
        return None
    bad = (seq, False, False, None, None, None, None, None)
    # Lines from before format 2 carry no `format` (absent or null): they are format 1.
    fmt = v.get("format")
    fmt = 1 if fmt is None else fmt
    if isinstance(fmt, bool) or fmt not in FORMATS:
        return bad
    who = [v.get(k) for k in WHO]
    if not all(w is None or isinstance(w, str) for w in who) or (fmt == 1 and any(w is not None for w in who)):
        return bad
    ts_us = v.get("ts_us")
    strs = [v.get(k) for k in ("kind", "call_id")]
    opts = [v.get(k) for k in ("tool", "action", "rule_id", "approval", "status")]
    raw, hx = v.get("payload_raw"), v.get("payload_hex")
    hashes = [unhex(v.get(k)) for k in ("log_id", "leaf", "chain")]
    if not isinstance(ts_us, int) or isinstance(ts_us, bool) or not -2**63 <= ts_us < 2**63 \
            or not all(isinstance(s, str) for s in strs) or not all(o is None or isinstance(o, str) for o in opts) \
            or None in hashes:
        return bad
    if isinstance(raw, str) and hx is None:
        try:
            payload = raw.encode("utf-8")
        except UnicodeEncodeError:
            return bad
    elif raw is None and unhex(hx) is not None:
        payload = unhex(hx)
    else:
        return bad
    try:
        parsed = loads(payload)
    except (ValueError, RecursionError):
        parsed = None
    if not same(v.get("payload"), parsed):
        return bad
    if -62135596800000000 <= ts_us < 253402300800000000 and v.get("ts") != ts_text(ts_us):
        return bad
    try:
        lf = leaf(fmt, who, seq, hashes[0], ts_us, *strs, *opts, payload)
    except UnicodeEncodeError:
        return bad
    return (seq, True, hashes[0] == log_id, lf, hashes[1], hashes[2], fmt, switch_of(strs[0], payload))


def export_lines(path):
    """record-format.md, "Reading the file": (number, text) of each line not skipped, read lazily;
    a line that is not UTF-8 is exit 2 when it is reached."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Refused(str(e))
    parts = data.split(b"\n")
    for number, part in enumerate(parts, 1):
        if number == len(parts) and not part:
            return
        if number < len(parts) and part.endswith(b"\r"):
            part = part[:-1]
        try:
            text = part.decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"line {number} is not UTF-8")
        if all(c in WHITE_SPACE for c in text):
            continue
        yield number, text


def parse_line(text):
    """A line's object; a line that is not JSON, or not an object, has no members."""
    try:
        v = loads(text)
    except (ValueError, RecursionError):
        return {}
    return v if isinstance(v, dict) else {}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def verify_export(path, given, keys, report):
    lines = export_lines(path)
    first = next(lines, None)
    if first is None:
        raise Refused("empty export")
    try:
        h = loads(first[1])
    except (ValueError, RecursionError):
        raise Refused("the first line is not JSON")
    if not isinstance(h, dict) or h.get("record") != "header" or h.get("export") != "gavel":
        raise Refused("not a gavel export")
    log_id, g = unhex(h.get("log_id")), unhex(h.get("genesis"))
    if log_id is None or g is None or len(g) != 32 or not isinstance(h.get("origin"), str) \
            or not isinstance(h.get("whole_chain"), bool):
        raise Refused("malformed export header")
    whole = h["whole_chain"]
    report["whole_chain"] = whole
    if not whole and given is not None:
        raise Refused("a filtered export cannot prove a checkpoint")
    # A `format` that is no integer (absent, null, "2", 2.0) names no known format.
    if not is_int(h.get("format")) or h["format"] not in FORMATS:
        raise Bad("unknown_format")
    # Checkpoint lines: right after the header, until the first line that is not one.
    stored, pending = [], None
    for _, text in lines:
        c = parse_line(text)
        if c.get("record") != "checkpoint":
            pending = c
            break
        size = c.get("size")
        stored.append((size if is_int(size) and 0 <= size < 2**63 else None,
                       unhex(c.get("root")), c.get("note") if isinstance(c.get("note"), str) else None))
    if not whole and stored:
        raise Refused("a filtered export carries checkpoints")
    report["stored_checkpoints"] = len(stored)
    vouched, given_cp = check_notes(h["origin"], log_id, h["format"], g, given, stored, keys)
    if given_cp is not None:
        report["checkpoint"] = {"origin": given_cp[0], "size": given_cp[1], "holds": False}

    def event_values():
        if pending is not None:
            yield pending
        for _, text in lines:
            yield parse_line(text)
    values = event_values()
    if whole:
        chain = Chain(g, h["format"])
        report["_chain"] = chain
        for v in values:
            r = event_row(v, log_id)
            if r is None:
                seq = v.get("seq") if isinstance(v, dict) else None
                ok_seq = isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0
                r = (seq if ok_seq else chain.rows + 1, False, False, None, None, None, None, None)
            chain.row(*r)
        chain.finish(vouched)
        return chain
    rows, prev = 0, None
    for v in values:
        r = event_row(v, log_id)
        seq = v.get("seq") if isinstance(v, dict) else None
        ok_seq = isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0
        at = seq if ok_seq else (prev[0] + 1 if prev else 1)
        report["rows"] = rows
        if r is None or not r[1] or r[6] < h["format"]:
            raise Bad("content_mismatch", at)
        if (prev is not None and at <= prev[0]) or at == 0:
            raise Bad("seq_gap", at)
        if not r[2]:
            raise Bad("log_id_mismatch", at)
        if r[3] != r[4]:
            raise Bad("content_mismatch", at)
        before = g if at == 1 else (prev[1] if prev is not None and prev[0] + 1 == at else None)
        if before is not None and (len(before) != 32 or link(before, r[3]) != r[5]):
            raise Bad("chain_break", at)
        rows, prev = rows + 1, (at, r[5])
    report["rows"] = rows
    return None


def read_checkpoint_file(path):
    """checkpoints.md: the note is the file's bytes exactly (UTF-8, no newline translation)."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise Refused(f"cannot read checkpoint `{path}`: {e}")


# ---- receipts.md ------------------------------------------------------------

RECEIPT_V1 = "gavel-receipt@v1"
TLOG_PROOF_V1 = "c2sp.org/tlog-proof@v1"


class ReceiptBad(Exception):
    def __init__(self, problem, element, detail=""):
        super().__init__(f"{problem}: {element}: {detail}")
        self.problem, self.element, self.detail = problem, element, detail


def at_line(n, detail):
    return ReceiptBad("malformed", f"line {n}", detail)


def is_decimal(text):
    return text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")


def json_string(text):
    """The call id as gavel writes it: JSON, every Cc character escaped
    (U+007F-U+009F as \\u00xx too), the rest as is."""
    import unicodedata
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cc" else c
                   for c in json.dumps(text, ensure_ascii=False))


def small_decimal(text):
    """A decimal without leading zero below 2**64, or None."""
    if not is_decimal(text) or len(text) > 20 or int(text) >= 2**64:
        return None
    return int(text)


def decode_leaf(data):
    """The fields of enc1/enc2 leaf data (record-format.md), or ValueError."""
    at = 0

    def take(n):
        nonlocal at
        if at + n > len(data):
            raise ValueError("runs past the end")
        out = data[at:at + n]
        at += n
        return out

    def lpb():
        return take(struct.unpack(">Q", take(8))[0])

    def text():
        return lpb().decode("utf-8")

    def option():
        flag = take(1)
        if flag == b"\x00":
            return None
        if flag == b"\x01":
            return text()
        raise ValueError("option byte")

    tag = lpb()
    fmt = {b"gavel/event/v1": 1, b"gavel/event/v2": 2}.get(tag)
    if fmt is None:
        raise ValueError("unknown tag")
    row = {"format": fmt, "seq": struct.unpack(">Q", take(8))[0], "log_id": lpb(),
           "ts_us": struct.unpack(">q", take(8))[0], "kind": text(), "call_id": text()}
    for name in ("tool", "action", "rule_id", "approval", "status") + (WHO if fmt == 2 else ()):
        row[name] = option()
    row["payload"] = lpb()
    if at != len(data):
        raise ValueError("bytes after the payload")
    return row


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion(index, size, leaf_hash, path):
    """RFC 9162 section 2.1.3.2."""
    if index >= size:
        return None
    fn, sn, r = index, size - 1, leaf_hash
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def parse_tlog_proof(chunk):
    """C2SP tlog-proof@v1: (extra, index, path, note), or (relative line, problem)."""
    head, note = chunk.split("\n\n", 1)
    lines = head.split("\n")
    rest = iter(enumerate(lines[1:], start=2))
    item = next(rest, None)
    extra = None
    if item and item[1].startswith("extra "):
        try:
            extra = b64(item[1][6:])
        except ValueError:
            raise ValueError((item[0], "extra is not base64"))
        item = next(rest, None)
    if item is None:
        raise ValueError((3 if extra is not None else 2, "no index line"))
    n, line = item
    index = small_decimal(line[6:]) if line.startswith("index ") else None
    if index is None:
        raise ValueError((n, "not an index line"))
    path = []
    for n, line in rest:
        try:
            h = b64(line)
        except ValueError:
            h = b""
        if len(h) != 32:
            raise ValueError((n, "not a base64 SHA-256 hash"))
        path.append(h)
    return extra, index, path, note


def parse_receipt(raw):
    """The call id and the proofs of a receipt (receipts.md, "The grammar")."""
    import unicodedata
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise at_line(1 + raw[:e.start].count(b"\n"), "not UTF-8")
    for i, c in enumerate(text):
        if c != "\n" and unicodedata.category(c) == "Cc":
            raise at_line(1 + text[:i].count("\n"), "control character")
    if not text.endswith("\n"):
        raise at_line(1 + text.count("\n"), "no final line feed")
    lines = text[:-1].split("\n")

    def line(n):
        return lines[n - 1] if 1 <= n <= len(lines) else None

    if line(1) != RECEIPT_V1:
        raise at_line(1, "not a receipt")
    call = line(2) or ""
    call_id = None
    if call.startswith("call "):
        try:
            value = json.loads(call[5:])
            if isinstance(value, str) and json_string(value) == call[5:]:
                call_id = value
        except (ValueError, RecursionError):
            pass
    if call_id is None:
        raise at_line(2, "not a call line")
    count = (line(3) or "")
    count = count[7:] if count.startswith("events ") else ""
    if small_decimal(count) in (None, 0):
        raise at_line(3, "not an events line")
    if line(4) != "":
        raise at_line(4, "no blank line")
    n, proofs = 5, []
    for _ in range(int(count)):
        start = n
        if line(n) != TLOG_PROOF_V1:
            raise at_line(n, "not a proof")
        n += 1
        if not (line(n) or "").startswith("extra "):
            raise at_line(n, "no extra line")
        while line(n):
            n += 1
        if line(n) is None:
            raise at_line(n, "ends inside a proof")
        n += 1
        if not line(n):
            raise at_line(n, "no checkpoint")
        while line(n):
            n += 1
        if line(n) is None:
            raise at_line(n, "no signatures")
        n += 1
        if not (line(n) or "").startswith("\u2014 "):
            raise at_line(n, "no signature line")
        while (line(n) or "").startswith("\u2014 "):
            n += 1
        chunk = "\n".join(lines[start - 1:n - 1]) + "\n"
        try:
            proofs.append(parse_tlog_proof(chunk))
        except ValueError as e:
            rel, problem = e.args[0]
            raise at_line(start - 1 + rel, problem)
    if n <= len(lines):
        raise at_line(n, "more events than the header says")
    return call_id, proofs


def cosign_key_id(name, public):
    return hashlib.sha256(name.encode() + b"\n\x04" + public).digest()[:4]


ED25519_L = 2**252 + 27742317777372353535851937790883648493


def ed25519_ok(public, signature, message):
    """Strict verification (checkpoints.md, "Keys"): R a canonical point not
    of small order, S below the group order, then the equation."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    if len(signature) != 64 or not on_curve(signature[:32]):
        return False
    if int.from_bytes(signature[32:], "little") >= ED25519_L:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
        return True
    except Exception:
        return False


def trust_from_keys(keys, rule):
    """--public-key keys (name, key id, public), each a log key and a witness; K-of-N."""
    if not keys:
        raise Refused("give the keys to trust")
    k = 1
    if rule is not None:
        k, _, n = rule.partition("-of-")
        if k.isascii() is False or n.isascii() is False:
            raise Refused(f"bad --policy {rule}")
        if not (k.isdigit() and n.isdigit()) or int(n) != len(keys) or not 1 <= int(k) <= int(n):
            raise Refused(f"bad --policy {rule}")
        k = int(k)
    signers = [{"name": name, "kid": kid, "public": public, "log": True, "witness": True, "label": name}
               for name, kid, public in keys]
    return {"signers": signers, "rule": ("k", k)}


def witness_key(text, kinds=(1, 4)):
    name, hexid, key_b64 = text.split("+", 2)
    key = b64(key_b64)
    if len(key) != 33 or key[0] not in kinds or not on_curve(key[1:]) or not key_name_ok(name):
        raise ValueError("not a verifier key")
    kid = (cosign_key_id(name, key[1:]) if key[0] == 4
           else hashlib.sha256(name.encode() + b"\n\x01" + key[1:]).digest()[:4])
    if kid.hex() != hexid.lower():
        raise ValueError("key id does not match")
    return name, key[1:]


def trust_from_policy(text):
    """A C2SP tlog-policy (receipts.md): log, witness, group, quorum lines;
    lines split at LF, no control character but a tab; names defined once,
    before use; a group's members distinct."""
    import unicodedata
    signers, groups, quorum = [], [], None

    def find(name):
        for i, sg in enumerate(signers):
            if sg["witness"] and sg["label"] == name:
                return ("w", i)
        for j, g in enumerate(groups):
            if g["name"] == name:
                return ("g", j)
        return None

    for raw in text.split("\n"):
        if any(unicodedata.category(c) == "Cc" and c != "\t" for c in raw):
            raise Refused("tlog-policy: a control character")
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        try:
            if f[0] == "log" and 2 <= len(f) <= 3:
                name, public = witness_key(f[1], kinds=(1,))
                signers.append({"name": name, "public": public, "log": True, "witness": False,
                                "label": name, "kid": hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]})
            elif f[0] in ("witness", "group") and len(f) > 1 and find(f[1]) is not None:
                raise ValueError(f"`{f[1]}` is defined twice")
            elif f[0] == "witness" and 3 <= len(f) <= 4:
                name, public = witness_key(f[2])
                signers.append({"name": name, "public": public, "log": False, "witness": True,
                                "label": f[1], "kid": hashlib.sha256(name.encode() + b"\n\x01" + public).digest()[:4]})
            elif f[0] == "group" and len(f) >= 4:
                members = []
                for m in f[3:]:
                    member = find(m)
                    if member is None or member in members:
                        raise ValueError(f"bad member `{m}`")
                    members.append(member)
                k = {"any": 1, "all": len(members)}.get(f[2])
                if k is None:
                    if not (f[2].isascii() and f[2].isdigit()):
                        raise ValueError("threshold")
                    k = int(f[2])
                if not 1 <= k <= len(members):
                    raise ValueError("threshold")
                groups.append({"name": f[1], "k": k, "members": members})
            elif f[0] == "quorum" and len(f) == 2 and quorum is None:
                if f[1] == "none":
                    quorum = ("none",)
                else:
                    quorum = find(f[1])
                    if quorum is None:
                        raise ValueError(f"`{f[1]}` is not defined")
            else:
                raise ValueError(line)
        except (ValueError, IndexError) as e:
            raise Refused(f"tlog-policy: {e}")
    if quorum is None or not any(sg["log"] for sg in signers):
        raise Refused("tlog-policy: no quorum or no log")
    return {"signers": signers, "rule": ("policy", (groups, None if quorum == ("none",) else quorum))}


def quorum_holds(groups, quorum, cosigned):
    """Groups name only groups above them: decided in one pass, in order."""
    met = []

    def holds(member):
        kind, i = member
        return i in cosigned if kind == "w" else met[i]

    for g in groups:
        met.append(sum(1 for m in g["members"] if holds(m)) >= g["k"])
    return quorum is None or holds(quorum)


def check_signatures(trust, body, lines, event):
    verified = []
    for k, (name, kid, sig) in enumerate(lines, start=1):
        note = next((i for i, s in enumerate(trust["signers"])
                     if s["log"] and s["name"] == name and s["kid"] == kid), None)
        cos = next((i for i, s in enumerate(trust["signers"])
                    if s["witness"] and s["name"] == name and cosign_key_id(name, s["public"]) == kid), None)
        if note is not None:
            ok = ed25519_ok(trust["signers"][note]["public"], sig, body.encode())
            verified.append((note, None))
        elif cos is not None:
            time = struct.unpack(">Q", sig[:8])[0] if len(sig) >= 8 else 0
            message = f"cosignature/v1\ntime {time}\n{body}".encode()
            ok = len(sig) >= 8 and ed25519_ok(trust["signers"][cos]["public"], sig[8:], message)
            verified.append((cos, time))
        else:
            raise ReceiptBad("unknown_signer", f"{event} signature {k}", f"by `{name}`")
        if not ok:
            raise ReceiptBad("signature", f"{event} signature {k}", f"by `{name}`")
    kind, rule = trust["rule"]
    if kind == "k":
        if len({i for i, _ in verified}) < rule:
            raise ReceiptBad("quorum", f"{event} checkpoint", "too few signers")
    else:
        if not any(t is None and trust["signers"][i]["log"] for i, t in verified):
            raise ReceiptBad("quorum", f"{event} checkpoint", "no log signature")
        cosigned = [i for i, t in verified if t is not None]
        groups, quorum = rule
        if not quorum_holds(groups, quorum, cosigned):
            raise ReceiptBad("quorum", f"{event} checkpoint", "quorum of witnesses")


def verify_receipt(raw, trust):
    """receipts.md, "Checking a receipt": the rows it proves, or ReceiptBad."""
    call_id, proofs = parse_receipt(raw)
    rows = []
    for i, (data, index, path, note) in enumerate(proofs, start=1):
        event = f"event {i}"
        try:
            row = decode_leaf(data)
        except (ValueError, UnicodeDecodeError, struct.error) as e:
            raise ReceiptBad("leaf_data", event, str(e))
        if row["call_id"] != call_id:
            raise ReceiptBad("call_mismatch", event)
        if row["seq"] - 1 != index:
            raise ReceiptBad("index_mismatch", event)
        if rows and row["seq"] <= rows[-1]["seq"]:
            raise ReceiptBad("order", event)
        try:
            body, lines = split_note(note)
            origin, size, root = parse_body(body)
        except ValueError as e:
            raise ReceiptBad("checkpoint_malformed", f"{event} checkpoint", str(e))
        if origin != "gavel/" + row["log_id"].hex():
            raise ReceiptBad("origin_mismatch", f"{event} checkpoint")
        leaf_hash = hashlib.sha256(b"\x00" + data).digest()
        if root_from_inclusion(index, size, leaf_hash, path) != root:
            raise ReceiptBad("inclusion", event)
        check_signatures(trust, body, lines, event)
        rows.append(row)
    return call_id, rows


def receipt_trust(keys, policy, base="."):
    """The trust of --public-key keys and --policy (K-of-N or a tlog-policy file)."""
    import os
    k, sep, n = (policy or "").partition("-of-")
    is_rule = bool(sep) and k.isascii() and k.isdigit() and n.isascii() and n.isdigit()
    if policy is not None and not is_rule:
        if keys:
            raise Refused("keys in the tlog-policy or with --public-key, not both")
        with open(os.path.join(base, policy)) as f:
            return trust_from_policy(f.read())
    return trust_from_keys(keys, policy)


def conformance(suite):
    """Runs every case of fixtures/conformance/cases.json; prints each disagreement."""
    import contextlib
    import io
    import os
    with open(os.path.join(suite, "cases.json")) as f:
        cases = json.load(f)
    wrong = 0
    for case in cases:
        path = os.path.join(suite, case["file"])
        keys = [os.path.join(suite, k) for k in case["keys"]]
        if case["kind"] == "receipt":
            trust = receipt_trust([read_key(k) for k in keys], case["policy"], suite)
            with open(path, "rb") as f:
                raw = f.read()
            try:
                verify_receipt(raw, trust)
                got = {"ok": True}
            except ReceiptBad as e:
                got = {"ok": False, "problem": e.problem, "element": e.element}
        else:
            args = ["--json"] + [a for k in keys for a in ("--public-key", k)]
            args += ["--export", path] if case["kind"] == "export" else [path]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                main(args)
            report = json.loads(out.getvalue())
            got = {"ok": True} if report["ok"] else {
                "ok": False, "problem": report["problem"], "first_bad_seq": report["first_bad_seq"]}
        if got != case["expect"]:
            wrong += 1
            print(f"{case['name']}: expected {case['expect']}, got {got}")
    print(f"{len(cases) - wrong} of {len(cases)} cases agree")
    return 0 if wrong == 0 else 1


def receipt_main(argv):
    as_json, keys, policy, path = False, [], None, None
    it = iter(argv)
    for a in it:
        if a == "--json":
            as_json = True
        elif a == "--public-key":
            keys.append(read_key(next(it)))
        elif a == "--policy":
            policy = next(it)
        elif a == "--receipt":
            path = next(it)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        call_id, rows = verify_receipt(raw, receipt_trust(keys, policy))
    except ReceiptBad as e:
        report = {"ok": False, "problem": e.problem, "element": e.element}
        print(json.dumps(report) if as_json else f"{e.problem}: {e.element}")
        return 1
    print(json.dumps({"ok": True, "call_id": call_id, "events": len(rows)}) if as_json
          else f"ok: call {call_id}: {len(rows)} rows")
    return 0


def main(argv):
    if argv == ["--vector"]:
        vector()
        return 0
    try:
        if argv[:1] == ["--conformance"] and len(argv) == 2:
            return conformance(argv[1])
        if "--receipt" in argv:
            return receipt_main(argv)
    except (Refused, OSError, StopIteration) as e:
        print(f"verify_chain.py: {e}", file=sys.stderr)
        return 2
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    as_json, given, keys, export, db = False, None, [], None, None
    report = {"ok": True, "rows": 0, "first_bad_seq": None, "problem": None, "stored_checkpoints": 0}
    try:
        it = iter(argv)
        for a in it:
            if a == "--json":
                as_json = True
            elif a == "--checkpoint":
                given = read_checkpoint_file(next(it))
            elif a == "--public-key":
                keys.append(read_key(next(it)))
            elif a == "--export":
                export = next(it)
            else:
                db = a
        report["signature_checked"] = bool(keys)
        chain = verify_export(export, given, keys, report) if export else verify_db(db, given, keys, report)
        if chain is not None:
            report["rows"] = chain.rows
            report["head"] = chain.prev.hex()
            if "checkpoint" in report:
                cp = report["checkpoint"]
                cp["holds"] = cp["size"] <= chain.rows and merkle_root(chain.leaves[:cp["size"]]) == base64.b64decode(
                    split_note(given)[0].split("\n")[2])
    except Refused as e:
        print(f"verify_chain.py: {e}", file=sys.stderr)
        return 2
    except StopIteration:
        print("verify_chain.py: an option lacks its value", file=sys.stderr)
        return 2
    except Bad as e:
        chain = report.get("_chain")
        if chain is not None:
            report["rows"] = chain.rows
            if e.problem in ("checkpoint_root_mismatch", "checkpoint_truncated") and "checkpoint" in report:
                cp = report["checkpoint"]
                root = base64.b64decode(split_note(given)[0].split("\n")[2])
                cp["holds"] = cp["size"] <= chain.rows and merkle_root(chain.leaves[:cp["size"]]) == root
        report.update(ok=False, problem=e.problem, first_bad_seq=e.seq)
        if e.problem == "identity_mismatch" or (e.problem == "unknown_format" and e.seq is None):
            # Check 1 failed: no checkpoint was read.
            report["stored_checkpoints"] = 0
            report.pop("checkpoint", None)
        elif e.problem in ("checkpoint_signature", "checkpoint_mismatch", "checkpoint_origin"):
            report.pop("checkpoint", None)
    report.pop("_chain", None)
    # Whether a cut tail would be caught: a checkpoint vouches for a size.
    report["tail_protected"] = "checkpoint" in report or report["stored_checkpoints"] > 0
    if report.pop("_identity_read", False):
        note = begins_mid_session(report)
        if note is not None:
            report["begins_mid_session"] = note
    report.pop("_db", None)
    if as_json:
        print(json.dumps(report, sort_keys=True))
    elif report["ok"]:
        print(f"ok: {report['rows']} rows")
    else:
        at = f" at seq {report['first_bad_seq']}" if report["first_bad_seq"] is not None else ""
        print(f"{report['problem']}{at}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
