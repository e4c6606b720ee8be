#!/usr/bin/env python3
"""What `gavel exec` adds to a command: the same command run by bash alone
and as the hook rewrote it (`bash -c` of the line that runs it under the
launcher beside GAVEL, `gavel-exec`, else `gavel exec`), decided once and
allowed under a sandbox, interleaved, in one run.

Usage: bench_exec.py GAVEL [--against PREVIOUS_GAVEL] [--runs N] [--floor]

Each case is a command allowed by a rule naming a profile (read-only or
workspace-write); each round decides a call through the Claude Code hook
(not timed), then runs `bash -c COMMAND` and the hook's rewritten line (and,
with --against, the previous release's, each decided by its own hook), in
an order that rotates each round. Prints the median wall time of each and
what each adds to bash alone. With --floor (and a C compiler), two static C
launchers run the command in the same rotation, the floor of any launcher
measured in the same hour: one that only executes it, and one that first
makes a user and mount namespace. Standard library only.
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


FLOOR_C = r"""
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
#ifdef NS
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) { perror("unshare"); return 1; }
#endif
    execvp(argv[1], argv + 1);
    perror("execvp");
    return 127;
}
"""


def floors(root):
    """The two floor launchers, compiled static into root: exec only, and
    a user and mount namespace then exec."""
    source = os.path.join(root, "floor.c")
    with open(source, "w") as f:
        f.write(FLOOR_C)
    built = []
    for name, flags in [("floor-exec", []), ("floor-userns", ["-DNS"])]:
        out = os.path.join(root, name)
        subprocess.run(["cc", "-O2", "-static", *flags, "-o", out, source], check=True)
        built.append((name, out))
    return built


def main(argv):
    if not argv:
        sys.exit(__doc__)
    gavels = [os.path.abspath(argv[0])]
    if "--against" in argv:
        gavels.insert(0, os.path.abspath(argv[argv.index("--against") + 1]))
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 200
    root = tempfile.mkdtemp(prefix="gavel-bench-exec-")
    try:
        floor = floors(root) if "--floor" in argv else []
        rows = []
        for n, (name, command, profile) in enumerate(CASES):
            ws = os.path.join(root, f"ws{n}")
            os.makedirs(os.path.join(ws, ".git", "hooks"))
            for path, text in [("a.txt", "hello\n"), (".git/config", "[core]\n"),
                               ("gavel.toml", POLICY.format(profile=profile))]:
                with open(os.path.join(ws, path), "w") as f:
                    f.write(text)
            env = dict(os.environ, GAVEL_CHECKPOINT_EVERY="0")

            def decide(gavel, db, call_id):
                """The hook's rewritten line for a fresh call (not timed)."""
                event = {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                         "tool_input": {"command": command}, "tool_use_id": call_id,
                         "session_id": "bench", "cwd": ws}
                hook = subprocess.run([gavel, "hook", "claude-code", "--workspace", ws, "--db", db],
                                      input=json.dumps(event), cwd=ws, capture_output=True,
                                      text=True, env=env)
                if '"allow"' not in hook.stdout:
                    sys.exit(f"not allowed: {hook.stdout} {hook.stderr}")
                return json.loads(hook.stdout)["hookSpecificOutput"]["updatedInput"]["command"]

            times = [[] for _ in range(len(gavels) + 1 + len(floor))]
            for round_ in range(runs):
                # Each round runs a call of its own, as a client does: the
                # hook's ticket is taken by the launcher's first run.
                argvs = [["bash", "-c", command]] + [
                    ["bash", "-c", decide(g, os.path.join(root, f"audit{n}-{i}.db"), f"bench{n}-{round_}")]
                    for i, g in enumerate(gavels)] + [
                    ["bash", "-c", f"{path} {command}"] for _, path in floor]
                order = list(range(len(argvs)))
                shift = round_ % len(order)
                for k in order[shift:] + order[:shift]:
                    times[k].append(timed(argvs[k], ws))
            rows.append((name, profile, [statistics.median(t) * 1000 for t in times]))
        print(f"{runs} rounds, interleaved; median wall time\n")
        names = [f"`gavel exec`, {w}" for w in ["previous", "now"][-len(gavels):]]
        names += [f"floor: {name}" for name, _ in floor]
        print("| command | profile | bash alone | " + " | ".join(names)
              + " | " + " | ".join(f"added, {w}" for w in names) + " |")
        print("|---|---|---|" + "---|" * (2 * len(names)))
        for name, profile, (plain, *wrapped) in rows:
            print(f"| {name} | {profile} | {plain:.2f} ms | "
                  + " | ".join(f"{w:.2f} ms" for w in wrapped) + " | "
                  + " | ".join(f"{w - plain:+.2f} ms" for w in wrapped) + " |")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main(sys.argv[1:])
