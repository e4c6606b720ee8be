#!/usr/bin/env bash
# `gavel receipt` on a log of 1,000,000 events (docs/receipts.md, issue 43):
# builds the release gavel and gen-log, records the benchmark mix, signs a
# checkpoint (`gavel checkpoint`, which keeps the 256-leaf block roots),
# then times, interleaved, `gavel receipt` of a call at the start, the
# middle and the end of the log, `gavel verify --receipt` of one, and
# `gavel show` of the same call as the same-run baseline (a read of one
# call). Prints a table of medians and ratios to `show`.
#
#   scripts/bench_receipt.sh [EVENTS] [RUNS]     defaults: 1000000 15
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${1:-1000000}
RUNS=${2:-15}
cargo build --release --quiet --bin gavel
cargo build --release --quiet -p gavel-bench --bin gen-log
B=$PWD/target/release
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
"$B/gen-log" --workspace ws --db big.db --events "$EVENTS" --id-prefix p >/dev/null
"$B/gavel" keygen --out log.key >/dev/null
start=$(date +%s.%N)
"$B/gavel" --db big.db checkpoint --key log.key >/dev/null
echo "checkpoint of $EVENTS events (full verify, block roots kept): $(echo "$(date +%s.%N) - $start" | bc) s"
mapfile -t ids < <(sqlite3 -readonly big.db \
  "SELECT call_id FROM events WHERE kind = 'request' AND seq IN ((SELECT min(seq) FROM events WHERE kind = 'request'), (SELECT max(seq) FROM events) / 2, (SELECT max(seq) - 5 FROM events)) ORDER BY seq" 2>/dev/null || true)
if [ "${#ids[@]}" -lt 3 ]; then
  # Without the sqlite3 shell: gavel's own listing.
  mapfile -t ids < <("$B/gavel" --db big.db log --json --no-verify | python3 -c '
import json, sys
ids = [json.loads(l)["call_id"] for l in sys.stdin]
print(ids[0]); print(ids[len(ids) // 2]); print(ids[-2])')
fi
"$B/gavel" --db big.db receipt "${ids[1]}" -o mid.receipt
python3 - "$B/gavel" "$RUNS" "${ids[@]}" <<'EOF'
import statistics, subprocess, sys, time
gavel, runs, ids = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cases = {
    "receipt (first call)": [gavel, "--db", "big.db", "receipt", ids[0], "-o", "/dev/null"],
    "receipt (middle call)": [gavel, "--db", "big.db", "receipt", ids[1], "-o", "/dev/null"],
    "receipt (last call)": [gavel, "--db", "big.db", "receipt", ids[2], "-o", "/dev/null"],
    "verify --receipt": [gavel, "verify", "--receipt", "mid.receipt", "--public-key", "log.key.pub"],
    "show (baseline)": [gavel, "--db", "big.db", "show", ids[1], "--no-verify"],
}
times = {name: [] for name in cases}
for _ in range(runs):
    for name, cmd in cases.items():
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times[name].append((time.perf_counter() - t) * 1000)
base = statistics.median(times["show (baseline)"])
print(f"\n{runs} interleaved runs, wall time\n")
print("| command | median ms | min ms | ratio to show |")
print("|---|---|---|---|")
for name, t in times.items():
    m = statistics.median(t)
    print(f"| {name} | {m:.1f} | {min(t):.1f} | {m / base:.2f} |")
EOF
ls -l "$W/big.db" | awk '{print "database: " $5 " bytes"}'
