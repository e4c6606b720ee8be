#!/usr/bin/env python3
"""The per-call cost of one shadow policy (issue 28), in one run.

Usage: shadow_cost.py GAVEL [--runs N] [--markdown]

Times `gavel run read_file` in a workspace under the coding-agent preset,
alone and with `--shadow-policy` naming a copy of the preset (one rule
renamed, so it is a different policy of the same size), the two
interleaved. Prints the median wall time and the mean CPU time (user +
system of the child) of each, and shadow / alone; on a shared, loaded
machine the CPU time is the steadier. Standard library only.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__.strip().splitlines()[2])
    gavel = os.path.abspath(args[0])
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 40
    markdown = "--markdown" in args
    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.join(tmp, "ws")
        os.mkdir(ws)
        with open(os.path.join(ws, "a.txt"), "w") as f:
            f.write("hello\n")
        preset = subprocess.run(
            [gavel, "policy", "show", "--preset", "coding-agent"],
            check=True, capture_output=True, text=True).stdout
        with open(os.path.join(ws, "gavel.toml"), "w") as f:
            f.write(preset)
        shadow = os.path.join(tmp, "next.toml")
        with open(shadow, "w") as f:
            f.write(preset.replace('id = "bash.read_only"', 'id = "bash.read_only_next"', 1))
        base = [gavel, "run", "read_file", '{"path":"a.txt"}', "--workspace", ws,
                "--db", os.path.join(tmp, "audit.db"), "--durability", "normal", "--json"]
        cases = {"alone": base, "one shadow": base + ["--shadow-policy", shadow]}
        for argv in cases.values():  # warm up, and record both policies once
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        wall = {k: [] for k in cases}
        cpu = {k: [] for k in cases}
        names = list(cases)
        for r in range(runs):
            for name in names if r % 2 == 0 else reversed(names):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(cases[name], check=True, stdout=subprocess.DEVNULL)
                wall[name].append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[name].append(after.ru_utime - before.ru_utime
                                 + after.ru_stime - before.ru_stime)
    w = {k: statistics.median(v) * 1000 for k, v in wall.items()}
    c = {k: statistics.mean(v) * 1000 for k, v in cpu.items()}
    rows = [(k, f"{w[k]:.2f} ms", f"{c[k]:.2f} ms") for k in cases]
    ratio = (f"{w['one shadow'] / w['alone']:.3f}x", f"{c['one shadow'] / c['alone']:.3f}x")
    if markdown:
        print(f"{runs} rounds, interleaved")
        print()
        print("| `gavel run read_file`, coding-agent preset | wall (median) | CPU (mean) |")
        print("|---|---|---|")
        for row in rows:
            print(f"| {row[0]} | {row[1]} | {row[2]} |")
        print(f"| one shadow / alone | {ratio[0]} | {ratio[1]} |")
    else:
        for row in rows:
            print(*row, sep="\t")
        print("ratio", *ratio, sep="\t")


if __name__ == "__main__":
    main()
