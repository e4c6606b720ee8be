#!/usr/bin/env python3
"""Time one governed call with two gavel binaries, interleaved, in one run.

Usage: compare_binaries.py OLD NEW [--runs N] [--only TEXT] [--markdown]

`--only TEXT` times only the cases whose name contains TEXT.

Each round runs every case once with OLD and once with NEW (the order
alternates between rounds), each binary against its own workspace and
database (a newer gavel migrates a database an older one then refuses).
Prints, per case, the median wall time and mean CPU time (user + system of
the child) of each binary, and NEW / OLD of each (on a shared, loaded
machine the CPU time is the steadier of the two). Standard library only.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    ("`gavel --version` (process start)", ["--version"], None),
    ("`gavel check read_file` (no recording)", ["check", "read_file", '{"path":"a.txt"}'], None),
    ("`gavel run read_file --durability normal`",
     ["run", "read_file", '{"path":"a.txt"}', "--durability", "normal", "--json"], None),
    ("`gavel run read_file --durability full`",
     ["run", "read_file", '{"path":"a.txt"}', "--json"], None),
    ("`gavel run bash` (asked, `--approve`)",
     ["run", "bash", '{"command":"true"}', "--approve", "--json"], None),
    ("`gavel hook claude-code` PreToolUse `Read`", ["hook", "claude-code"], "hook"),
    # A contained allow (`cat a.txt`, proven read-only: `read-only`) under the
    # preset: a gavel that rewrites answers with the command under `gavel exec`.
    ("`gavel hook claude-code` PreToolUse `Bash` `cat a.txt` (contained allow)",
     ["hook", "claude-code", "--policy", "{preset}"], "hook-bash"),
    # Under each binary's own coding-agent preset: the shell reader, the
    # program models and the facts of a read-only pipeline and of a walk.
    ("`gavel check bash` preset, `git log … | grep … | head`",
     ["check", "bash", '{"command":"git log --oneline -5 | grep -n fix | head -3"}',
      "--policy", "{preset}"], None),
    ("`gavel check bash` preset, `grep -rn --exclude-dir=.gavel foo .`",
     ["check", "bash", '{"command":"grep -rn --exclude-dir=.gavel foo ."}',
      "--policy", "{preset}"], None),
    # An allowed command run: since the sandbox (issue 38), inside `read-only`.
    ("`gavel run bash` preset, `cat a.txt` (run)",
     ["run", "bash", '{"command":"cat a.txt"}', "--policy", "{preset}", "--json"], None),
]


def hook_input(ws, n, kind="hook"):
    tool, tool_input = (("Read", {"file_path": os.path.join(ws, "a.txt")}) if kind == "hook"
                        else ("Bash", {"command": "cat a.txt", "description": "Show a.txt"}))
    return json.dumps({
        "session_id": "bench-session", "transcript_path": "/tmp/t.jsonl", "cwd": ws,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": f"toolu_bench_{n}",
    })


def timed(binary, args, ws, db, stdin):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([binary, *args, "--workspace", ws, "--db", db] if args != ["--version"]
                          else [binary, *args], input=stdin, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"{binary} {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    old, new = argv[0], argv[1]
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 100
    only = argv[argv.index("--only") + 1] if "--only" in argv else ""
    cases = [c for c in CASES if only in c[0]]
    root = tempfile.mkdtemp(prefix="gavel-compare-")
    try:
        places = {}
        for name in ("old", "new"):
            ws = os.path.join(root, name, "ws")
            os.makedirs(ws)
            with open(os.path.join(ws, "a.txt"), "w") as f:
                f.write("hello\n")
            places[name] = (ws, os.path.join(root, name, "audit.db"))
        binaries = {"old": old, "new": new}
        presets = {}
        for name, binary in binaries.items():
            preset = os.path.join(root, name, "preset.toml")
            shown = subprocess.run([binary, "policy", "show", "--preset", "coding-agent"],
                                   capture_output=True, text=True, check=True)
            with open(preset, "w") as f:
                f.write(shown.stdout)
            presets[name] = preset
        times = {(case, name): ([], []) for case, _, _ in cases for name in binaries}
        n = 0
        for round_ in range(runs):
            order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
            for case, args, kind in cases:
                for name in order:
                    n += 1
                    ws, db = places[name]
                    stdin = hook_input(ws, n, kind) if kind else None
                    case_args = [a.replace("{preset}", presets[name]) for a in args]
                    wall, cpu = timed(binaries[name], case_args, ws, db, stdin)
                    times[(case, name)][0].append(wall)
                    times[(case, name)][1].append(cpu)
        print(f"{runs} rounds, interleaved; median wall time, mean CPU time in brackets\n")
        print("| call | before | now | now / before (wall) | now / before (CPU) |")
        print("|---|---|---|---|---|")
        for case, _, _ in cases:
            (ow, oc), (nw, nc) = times[(case, "old")], times[(case, "new")]
            o, m = statistics.median(ow) * 1000, statistics.median(nw) * 1000
            oc, nc = statistics.mean(oc) * 1000, statistics.mean(nc) * 1000
            print(f"| {case} | {o:.2f} ms ({oc:.2f}) | {m:.2f} ms ({nc:.2f}) | {m / o:.2f}× | {nc / oc:.2f}× |")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main(sys.argv[1:])
