#!/usr/bin/env python3
"""The table of scripts/bench.sh: reads the measurements it left in WORK/m
and criterion's estimates, prints one table (figure | gavel | baseline |
ratio | target | met?) with the machine and the size breakdown, and, given a
docs file, writes the same between its `bench:begin` and `bench:end` markers.

usage: report.py WORK CRITERION_DIR DOCS_FILE|- [BASELINE_JSON SAVE VERSION]

With BASELINE_JSON, it also prints the per-call and stream ratios beside
those of the previous release: measured in the same run when the script
timed GAVEL_PREVIOUS_BIN, else as stored in BASELINE_JSON; with SAVE = 1 it
stores this run's ratios there.
"""

import json
import os
import statistics
import sys

work, criterion, docs = sys.argv[1:4]
baseline_file = sys.argv[4] if len(sys.argv) > 4 else None
save = len(sys.argv) > 5 and sys.argv[5] == "1"
version = sys.argv[6] if len(sys.argv) > 6 else "gavel"
m = os.path.join(work, "m")


def load(name):
    path = os.path.join(m, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def estimate(group, function):
    """Criterion's median time per iteration, in nanoseconds."""
    path = os.path.join(criterion, group, function, "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def ms(seconds):
    return f"{seconds * 1000:.2f} ms"


def per_s(rate):
    return f"{rate:,.0f} ev/s"


def us(ns):
    return f"{ns / 1000:.2f} µs" if ns >= 1000 else f"{ns:.0f} ns"


features = load("features")
machine = load("machine")
size = load("size")
rows = []  # figure, gavel, baseline, ratio, target, met


def row(figure, gavel, baseline, ratio, target, op, bound):
    if ratio is None:
        rows.append((figure, gavel, baseline, "–", target, "skipped"))
        return
    met = ratio <= bound if op == "<=" else ratio >= bound
    rows.append((figure, gavel, baseline, f"{ratio:.2f}×", target, "yes" if met else "NO"))


call_full, call_normal = load("call_full"), load("call_normal")
for durability, baseline in (("full", call_full), ("normal", call_normal)):
    run = load(f"run_{durability}")
    row(
        f"`gavel run read_file` (durability {durability}) vs (a)",
        ms(run["median_s"]),
        ms(baseline["median_s"]),
        run["median_s"] / baseline["median_s"],
        "≤ 1.3×",
        "<=",
        1.3,
    )
hook = load("hook_full")
if hook:
    row(
        "`gavel hook claude-code` PreToolUse (full) vs (a)",
        ms(hook["median_s"]),
        ms(call_full["median_s"]),
        hook["median_s"] / call_full["median_s"],
        "≤ 1.3×",
        "<=",
        1.3,
    )
else:
    row("`gavel hook claude-code` PreToolUse vs (a)", "not on this build", ms(call_full["median_s"]), None, "≤ 1.3×", "", 0)
for key, what in [
    ("run_resident", "`gavel run read_file` (full), resident `serve --socket` answering, vs (a)"),
    ("hook_resident", "`gavel hook claude-code` PreToolUse (full), resident `serve --socket` answering, vs (a)"),
]:
    resident = load(key)
    if resident:
        row(
            what,
            ms(resident["median_s"]),
            ms(call_full["median_s"]),
            resident["median_s"] / call_full["median_s"],
            "≤ 1.3×",
            "<=",
            1.3,
        )

stream = load("stream")
g, b = statistics.median(stream["gavel"]), statistics.median(stream["baseline"])
how = "`gavel serve --stdio --durability normal`" if features["serve"] else "in-process runner + store (serve missing)"
row(f"streamed recording: {how} vs (b)", per_s(g), per_s(b), g / b, "≥ 0.8×", ">=", 0.8)

events = size["events"]
scan = load("scan")
scan_rate = events / scan["median_s"]
for name, target, bound in (("verify", "≥ 1.3×", 1.3), ("replay", "≥ 0.5×", 0.5)):
    t = load(name)
    row(
        f"`gavel {name}` on {events:,} events vs (c)",
        per_s(events / t["median_s"]) + f" ({t['median_s']:.2f} s)",
        per_s(scan_rate) + f" ({scan['median_s']:.2f} s)",
        (events / t["median_s"]) / scan_rate,
        target,
        ">=",
        bound,
    )

log, sqlite = load("log"), load("sqlite")
row(
    "`gavel log --rule bash.hard_deny --limit 50` vs (d) `sqlite3`",
    ms(log["median_s"]),
    ms(sqlite["median_s"]),
    log["median_s"] / sqlite["median_s"],
    "≤ 2×",
    "<=",
    2.0,
)

ours = estimate("decide", "gavel")
n_requests = 12  # mix::decide_requests()
for peer in ("regorus", "cedar"):
    theirs = estimate("decide", peer)
    if ours is None or theirs is None:
        row(f"`decide` vs {peer}", "–", "–", None, "≥ 10× faster", "", 0)
        continue
    row(
        f"`decide` (default policy, recorded facts) vs {peer}, per decision",
        us(ours / n_requests),
        us(theirs / n_requests),
        theirs / ours,
        "≥ 10× faster",
        ">=",
        10.0,
    )

per_call = (size["file"] + size["wal"]) / size["calls"]
rows.append(
    (
        "database size, bytes per recorded call",
        f"{per_call:,.0f} B",
        "–",
        "–",
        "reported",
        "–",
    )
)

header = ("figure", "gavel", "baseline", "ratio", "target", "met?")
table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
table += ["| " + " | ".join(r) + " |" for r in rows]

gen = load("generate")
lines = []
lines.append(
    f"Measured {machine['date']} at commit `{machine['commit']}` on {machine['cpu']}, "
    f"{machine['nproc']} cores, {machine['memory_gib']} GiB, Linux {machine['kernel']}, "
    f"{machine['rustc']}, sqlite3 {machine['sqlite3']}, data on {machine['filesystem']}. "
    f"Load average before/after the process figures: {load('load_before')['loadavg']} / "
    f"{load('load_after')['loadavg']}."
)
lines.append("")
lines.append(
    f"The log: {events:,} events ({size['calls']:,} calls) recorded through "
    + ("`gavel serve --stdio --durability normal`" if features["serve"] else "`GovernedRunner` + `Store` in-process (`gavel serve` was not on this build)")
    + f" in {gen['timing'].get('median_s', gen['timing'].get('seconds')):.1f} s ({per_s(gen['rate'])})."
)
lines.append("")
lines += table
lines.append("")

objects = load("size_objects") or []
total = sum(o["bytes"] for o in objects) or 1
lines.append(f"Size: {size['file'] + size['wal']:,} bytes for {size['calls']:,} calls ({events:,} events), {per_call:,.0f} bytes per call. By object:")
lines.append("")
lines.append("| object | bytes | share |")
lines.append("|---|---|---|")
for o in objects[:8]:
    lines.append(f"| {o['name']} | {o['bytes']:,} | {100 * o['bytes'] / total:.1f}% |")
lines.append("")
lines.append("Average bytes per event, by kind:")
lines.append("")
lines.append("| kind | events | payload | typed text columns | log_id + leaf + chain |")
lines.append("|---|---|---|---|---|")
for k in load("size_kinds") or []:
    lines.append(f"| {k['kind']} | {k['n']:,} | {k['payload']:.0f} | {k['text']:.0f} | {k['hashes']:.0f} |")
lines.append("")

chain_rows = []
for name in ("decision_event", "result_4KiB_event"):
    ns = estimate("chain", name)
    if ns is not None:
        chain_rows.append(f"{name}: {us(ns)}")
shell_ns = estimate("shell", "parse+decide")
if shell_ns is not None:
    chain_rows.append(f"shell parse + decide per bash command (6 commands): {us(shell_ns / 6)}")
if chain_rows:
    lines.append("In-process (criterion): chain hashing, leaf + link per event, " + "; ".join(chain_rows) + ".")
    lines.append("")

# Decision time against input size: time per byte at each size, as a ratio
# to the 1 KiB time per byte of the same shape (1.00 = linear).
SIZES = [1 << 10, 10 << 10, 100 << 10, 1 << 20]
scaling = []
for shape in ("words", "pipeline", "pipeline_tight", "list", "list_newline", "for_loops",
              "and_or", "redirects", "assignments", "heredocs", "nested_arith", "substitutions",
              "backticks", "brace_expansion", "case_list", "bash_path", "read_path"):
    times = [estimate(f"scaling_{shape}", str(n)) for n in SIZES]
    if None in times:
        continue
    base = times[0] / SIZES[0]
    cells = [f"{t / 1e6:.2f} ms ({(t / n) / base:.2f}×)" for t, n in zip(times, SIZES)]
    scaling.append(f"| {shape} | " + " | ".join(cells) + " |")
if scaling:
    lines.append(
        "Decision time (facts + `decide`, built-in policy) by input size; in brackets the "
        "time per byte as a ratio to the same shape's 1 KiB time per byte (1.00× = linear):"
    )
    lines.append("")
    lines.append("| shape | 1 KiB | 10 KiB | 100 KiB | 1 MiB |")
    lines.append("|---|---|---|---|---|")
    lines += scaling
    lines.append("")

text = "\n".join(lines)
print(text)

if docs != "-":
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    with open(docs) as f:
        current = f.read()
    if begin not in current or end not in current:
        sys.exit(f"report.py: {docs} has no {begin} ... {end} markers")
    head, rest = current.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(docs, "w") as f:
        f.write(head + begin + "\n" + text + "\n" + end + tail)
    print(f"[bench] wrote {docs}", file=sys.stderr)


# --- against the previous release -----------------------------------------------
def guard_ratios(prefix):
    """Per-call ratios to the floor (lower is better) and the stream ratio to
    its floor (higher is better), of this build or (prefix "prev_") of the
    previous release as timed in this run."""
    out = {}
    for durability in ("full", "normal"):
        run = load(f"{prefix}run_{durability}")
        base = load(f"call_{durability}")
        if run and base:
            out[f"run_{durability}"] = run["median_s"] / base["median_s"]
    hook_timing = load(f"{prefix}hook_full")
    if hook_timing and call_full:
        out["hook_full"] = hook_timing["median_s"] / call_full["median_s"]
    for key in ("run_resident", "hook_resident"):
        resident_timing = load(f"{prefix}{key}")
        if resident_timing and call_full:
            out[key] = resident_timing["median_s"] / call_full["median_s"]
    rates = stream.get("previous" if prefix else "gavel") or []
    if rates and stream["baseline"]:
        out["stream"] = statistics.median(rates) / statistics.median(stream["baseline"])
    return out


if baseline_file:
    ours = guard_ratios("")
    previous = guard_ratios("prev_")
    source = "timed in this run (GAVEL_PREVIOUS_BIN)"
    if not previous and os.path.exists(baseline_file):
        with open(baseline_file) as f:
            stored = json.load(f)
        previous = stored["ratios"]
        source = f"stored in bench/baseline.json: {stored['binary']}, measured {stored['date']} on {stored['machine']}"
    names = {
        "run_full": "`gavel run` (full) / floor (a)",
        "run_normal": "`gavel run` (normal) / floor (a)",
        "hook_full": "`gavel hook` (full) / floor (a)",
        "run_resident": "`gavel run`, resident answering / floor (a)",
        "hook_resident": "`gavel hook`, resident answering / floor (a)",
        "stream": "stream / floor (b)",
    }
    guard = [f"Against the previous release ({source}); cost > 1 means this build is slower:", ""]
    guard.append("| figure | this build | previous release | cost |")
    guard.append("|---|---|---|---|")
    slower = []
    for key, name in names.items():
        if key not in ours:
            continue
        if key in previous:
            cost = previous[key] / ours[key] if key == "stream" else ours[key] / previous[key]
            cell = f"{cost:.2f}×"
            if cost > 1.05:
                slower.append(name)
                cell += " slower"
            guard.append(f"| {name} | {ours[key]:.2f}× | {previous[key]:.2f}× | {cell} |")
        else:
            guard.append(f"| {name} | {ours[key]:.2f}× | – | – |")
    guard.append("")
    if slower:
        guard.append("Slower than the previous release by more than 5%: " + ", ".join(slower) + ".")
        guard.append("")
    print("\n".join(guard))
    if save:
        with open(baseline_file, "w") as f:
            json.dump(
                {
                    "binary": version,
                    "checkout": machine["commit"],
                    "date": machine["date"],
                    "machine": f"{machine['cpu']}, {machine['nproc']} cores",
                    "ratios": {k: round(v, 3) for k, v in ours.items()},
                },
                f,
                indent=2,
            )
            f.write("\n")
        print(f"stored these ratios in {baseline_file}", file=sys.stderr)
