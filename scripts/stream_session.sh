#!/usr/bin/env bash
# scripts/stream_session.sh GAVEL_BIN...: a streamed session of 20,000 read_file
# calls through `gavel serve --stdio --durability normal`, the binaries
# alternately, ROUNDS rounds (default 3), a fresh database each time; prints
# the binary, wall seconds, user and system CPU seconds, and the events
# recorded, then each binary's medians.
# Needs python3, sqlite3 and GNU time (/usr/bin/time).
set -euo pipefail
[[ $# -gt 0 ]] || { sed -n '2,6p' "$0" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/gavel-stream.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/ws" && echo hello > "$W/ws/a.txt"
python3 -c '
import json
for i in range(20000):
    print(json.dumps({"type": "tool_use", "id": f"r{i}", "name": "read_file", "input": {"path": "a.txt"}}))
' > "$W/in.jsonl"
for round in $(seq "${ROUNDS:-3}"); do
  for gavel in "$@"; do
    rm -f "$W"/db*
    /usr/bin/time -f "%e %U %S" -o "$W/t" \
      "$gavel" serve --stdio --db "$W/db" --workspace "$W/ws" --durability normal < "$W/in.jsonl" > /dev/null
    echo "$gavel $(cat "$W/t") $(sqlite3 -readonly "$W/db" 'SELECT count(*) FROM events')" | tee -a "$W/all"
  done
done
python3 - "$W/all" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, *values = line.split()
    runs.setdefault(name, []).append([float(v) for v in values[:3]])
for name, rows in runs.items():
    wall, user, system = (statistics.median(column) for column in zip(*rows))
    print(f"median {name}: wall {wall:.2f} s, user {user:.2f} s, system {system:.2f} s")
PY
