#!/usr/bin/env python3
"""Per-call cost of session flows: `gavel hook claude-code` in a session that
already holds 1,000 calls, under each binary's own coding-agent preset.

Usage: bench_flows.py OLD NEW [--runs N] [--seed typical|labelled]

`typical`: the session read `.env` first, then 999 calls: reads, `ls`,
web fetches and `curl` (about a fifth labelled `egress`). `labelled`: 1,000
web fetches, every one labelled `egress` and none refused: the most rows a
flow rule's history read can meet in such a session. Each binary gets its
own workspace and database (an older gavel refuses a newer schema); the
rounds interleave the two. Prints the median wall time per case and the
ratio NEW / OLD. Standard library only.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def payload(ws, session, n, tool, tool_input):
    return json.dumps({
        "session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": ws,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_use_id": f"toolu_{session}_{n}",
    })


def hook(binary, ws, db, stdin):
    env = dict(os.environ, GAVEL_CHECKPOINT_EVERY="0")
    start = time.perf_counter()
    out = subprocess.run([binary, "hook", "claude-code", "--workspace", ws, "--db", db],
                         input=stdin.encode(), capture_output=True, env=env)
    wall = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        sys.exit(f"{binary} failed: {out.stderr.decode()}")
    return wall, json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"]


def seed_calls(ws, kind):
    if kind == "labelled":
        return [("WebFetch", {"url": f"https://example.com/{i}", "prompt": "p"}) for i in range(1000)]
    calls = [("Read", {"file_path": os.path.join(ws, ".env")})]
    for i in range(999):
        calls.append([
            ("Read", {"file_path": os.path.join(ws, "a.txt")}),
            ("Bash", {"command": "ls"}),
            ("Read", {"file_path": os.path.join(ws, "a.txt")}),
            ("WebFetch", {"url": f"https://example.com/{i}", "prompt": "p"}),
            ("Bash", {"command": f"curl https://example.com/{i}"}),
        ][i % 5])
    return calls


def main(argv):
    binaries = {"old": argv[1], "new": argv[2]}
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 40
    kind = argv[argv.index("--seed") + 1] if "--seed" in argv else "typical"
    root = tempfile.mkdtemp(prefix="gavel-flows-")
    places = {}
    for name, binary in binaries.items():
        ws = os.path.join(root, name)
        os.makedirs(ws)
        db = os.path.join(root, f"{name}.db")
        preset = subprocess.run([binary, "policy", "show", "--preset", "coding-agent"],
                                capture_output=True, check=True).stdout
        open(os.path.join(ws, "gavel.toml"), "wb").write(preset)
        open(os.path.join(ws, ".env"), "w").write("K=1\n")
        open(os.path.join(ws, "a.txt"), "w").write("a\n")
        for n, (tool, tool_input) in enumerate(seed_calls(ws, kind)):
            hook(binary, ws, db, payload(ws, "bench", n, tool, tool_input))
        places[name] = (ws, db)
    cases = {
        "`Read a.txt` (allow)": lambda ws: ("Read", {"file_path": os.path.join(ws, "a.txt")}),
        "`Bash curl` (egress)": lambda ws: ("Bash", {"command": "curl -d @- https://example.com"}),
    }
    times = {(c, b): [] for c in cases for b in binaries}
    answers = {}
    n = 10_000
    for r in range(runs):
        order = list(binaries) if r % 2 == 0 else list(reversed(binaries))
        for case, make in cases.items():
            for name in order:
                ws, db = places[name]
                tool, tool_input = make(ws)
                n += 1
                wall, answer = hook(binaries[name], ws, db, payload(ws, "bench", n, tool, tool_input))
                times[(case, name)].append(wall)
                answers[(case, name)] = answer
    print(f"Session of 1,000 earlier calls ({kind}), {runs} interleaved rounds\n")
    print("| case | previous | this | this / previous |")
    print("|---|---|---|---|")
    for case in cases:
        o = statistics.median(times[(case, "old")])
        m = statistics.median(times[(case, "new")])
        print(f"| {case}: previous {answers[(case, 'old')]}, this {answers[(case, 'new')]} "
              f"| {o:.2f} ms | {m:.2f} ms | {m / o:.2f}× |")


if __name__ == "__main__":
    main(sys.argv)
