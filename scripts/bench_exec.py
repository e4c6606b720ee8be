#!/usr/bin/env python3
"""What `gavel exec` adds to a command: the same command run by bash alone
and as the hook rewrote it (`bash -c` of the line that runs it under the
launcher beside GAVEL, `gavel-exec`, else `gavel exec`), decided once and
allowed under a sandbox, interleaved, in one run.

Usage: bench_exec.py GAVEL [--runs N]

Each case is a command allowed by a rule naming a profile (read-only or
workspace-write); each round decides a call through the Claude Code hook
(not timed), then runs `bash -c COMMAND` and the hook's rewritten line. Prints
the median wall time of each and the difference. Standard library only.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = [
    ("`true`", "true", "read-only"),
    ("`cat a.txt`", "cat a.txt", "read-only"),
    # A write the command names (`> out.txt`) is the policy's to judge,
    # not a sandbox's: the writable profile's cost is measured on `true`.
    ("`true`", "true", "workspace-write"),
]

POLICY = """name = "bench"
[[rules]]
id = "bench.{profile}"
action = "allow"
tools = ["bash"]
commands = [{{ program = ["true"] }}, {{ program = ["cat"] }}, {{ program = ["sh"] }}, {{ program = ["echo"] }}]
sandbox = "{profile}"
reason = "bench"
"""


def timed(argv, cwd):
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode().strip()}")
    return time.perf_counter() - start


def main(argv):
    if not argv:
        sys.exit(__doc__)
    gavel = os.path.abspath(argv[0])
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 200
    root = tempfile.mkdtemp(prefix="gavel-bench-exec-")
    try:
        rows = []
        for n, (name, command, profile) in enumerate(CASES):
            ws = os.path.join(root, f"ws{n}")
            os.makedirs(os.path.join(ws, ".git", "hooks"))
            for path, text in [("a.txt", "hello\n"), (".git/config", "[core]\n"),
                               ("gavel.toml", POLICY.format(profile=profile))]:
                with open(os.path.join(ws, path), "w") as f:
                    f.write(text)
            db = os.path.join(root, f"audit{n}.db")
            common = ["--workspace", ws, "--db", db]
            env = dict(os.environ, GAVEL_CHECKPOINT_EVERY="0")

            def decide(call_id):
                """The hook's rewritten line for a fresh call (not timed)."""
                event = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                         "tool_input": {"command": command}, "tool_use_id": call_id,
                         "session_id": "bench", "cwd": ws}
                hook = subprocess.run([gavel, "hook", "claude-code", *common], input=json.dumps(event),
                                      cwd=ws, capture_output=True, text=True, env=env)
                if '"allow"' not in hook.stdout:
                    sys.exit(f"not allowed: {hook.stdout} {hook.stderr}")
                return json.loads(hook.stdout)["hookSpecificOutput"]["updatedInput"]["command"]

            plain, wrapped = [], []
            for round_ in range(runs):
                # Each round runs a call of its own, as a client does: the
                # hook's ticket is taken by the launcher's first run.
                line = decide(f"bench{n}-{round_}")
                pair = [("plain", ["bash", "-c", command]),
                        ("wrapped", ["bash", "-c", line])]
                if round_ % 2:
                    pair.reverse()
                for which, cmd in pair:
                    (plain if which == "plain" else wrapped).append(timed(cmd, ws))
            p, w = statistics.median(plain) * 1000, statistics.median(wrapped) * 1000
            rows.append((name, profile, p, w))
        print(f"{runs} rounds, interleaved; median wall time\n")
        print("| command | profile | bash alone | through `gavel exec` | added |")
        print("|---|---|---|---|---|")
        for name, profile, p, w in rows:
            print(f"| {name} | {profile} | {p:.2f} ms | {w:.2f} ms | {w - p:+.2f} ms |")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main(sys.argv[1:])
