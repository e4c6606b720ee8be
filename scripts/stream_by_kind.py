#!/usr/bin/env python3
"""The streamed-recording figure (b) split by kind of call.

Generates the benchmark's mix (bench/src/mix.rs, through `gen-input`),
cuts it into one session per kind of call (each call repeated up to
--calls times, with its approval line when it has one), and for each
session times `gavel serve --stdio --durability normal` on a fresh copy of
the workspace, then `baseline-stream` (the one-commit-per-call floor) on
the rows gavel recorded. gavel's time per call is marginal: a session of N
calls and one of 2N, the difference over N, so that its start and its
closing checkpoint are left out as the floor's are. Prints, per kind:
gavel's and the floor's time per call, their ratio (the floor's time over
gavel's, as in bench.sh), and the events per call.

usage: scripts/stream_by_kind.py [--bin DIR] [--gavel BIN] [--calls N]
  DIR holds gavel, gen-input and baseline-stream (default target/dist).
"""

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def kind_of(call):
    """A name for the kind of call: its tool, and for asks, the answer."""
    request = call[0]
    name = request["name"]
    answer = call[1]["approved"] if len(call) > 1 else None
    if name == "read_file":
        path = request["input"].get("path", "")
        return "read_file outside" if path.startswith("/") or ".." in path else "read_file inside"
    if answer is None:
        return name
    return f"{name} asked, {'approved' if answer else 'rejected'}"


def calls_of(lines):
    """The mix's lines grouped into calls: a request and its approval line, if any."""
    calls, i = [], 0
    while i < len(lines):
        call = [lines[i]]
        if i + 1 < len(lines) and lines[i + 1].get("type") == "approval":
            call.append(lines[i + 1])
            i += 1
        calls.append(call)
        i += 1
    return calls


def serve(gavel, tmp, workspace, calls, count, db):
    """Seconds of one `gavel serve` session of `count` of `calls`, on a fresh
    copy of `workspace` and a fresh `db`."""
    session = tmp / "session.jsonl"
    with session.open("w") as out:
        for n in range(count):
            for line in calls[n % len(calls)]:
                out.write(json.dumps({**line, "id": f"{line['id']}_{n}"}) + "\n")
    copy = tmp / "ws-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(workspace, copy, symlinks=True)
    for stale in tmp.glob(db.name + "*"):
        stale.unlink()
    started = time.perf_counter()
    with session.open() as stdin:
        subprocess.run(
            [gavel, "serve", "--stdio", "--db", db, "--workspace", copy, "--durability", "normal"],
            stdin=stdin, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default="target/dist", type=Path)
    parser.add_argument("--gavel", type=Path)
    parser.add_argument("--calls", default=1500, type=int)
    args = parser.parse_args()
    gavel = args.gavel or args.bin / "gavel"

    with tempfile.TemporaryDirectory(prefix="gavel-kinds.") as tmp:
        tmp = Path(tmp)
        workspace = tmp / "ws"
        mix = tmp / "mix.jsonl"
        subprocess.run(
            [args.bin / "gen-input", "--workspace", workspace, "--events", "30000",
             "--id-prefix", "k_", "--out", mix],
            check=True, stdout=subprocess.DEVNULL)
        by_kind = {}
        for call in calls_of([json.loads(line) for line in mix.read_text().splitlines()]):
            by_kind.setdefault(kind_of(call), []).append(call)

        print("| kind of call | gavel per call | floor (b) per call | floor / gavel | events per call |")
        print("|---|---|---|---|---|")
        for kind, calls in sorted(by_kind.items()):
            db, floor_db = tmp / "kind.db", tmp / "floor.db"
            seconds = [serve(gavel, tmp, workspace, calls, n, db) for n in (args.calls, 2 * args.calls)]
            for stale in tmp.glob("floor.db*"):
                stale.unlink()
            floor = json.loads(subprocess.run(
                [args.bin / "baseline-stream", "--source", db, "--out", floor_db],
                check=True, capture_output=True, text=True).stdout)
            floor["seconds"] /= 2
            floor["events"] /= 2
            per_call = (seconds[1] - seconds[0]) / args.calls * 1e6
            floor_per_call = floor["seconds"] / args.calls * 1e6
            print(f"| {kind} | {per_call:.0f} µs | {floor_per_call:.0f} µs "
                  f"| {floor_per_call / per_call:.2f}× | {floor['events'] / args.calls:.2f} |")


if __name__ == "__main__":
    main()
