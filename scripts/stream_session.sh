#!/usr/bin/env bash
# scripts/stream_session.sh GAVEL_BIN...: a streamed session of 20,000 read_file
# calls through `gavel serve --stdio --durability normal`, the binaries
# alternately, three rounds, a fresh database each time; prints the binary,
# wall seconds, user and system CPU seconds, and the events recorded.
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
for round in 1 2 3; do
  for gavel in "$@"; do
    rm -f "$W"/db*
    /usr/bin/time -f "%e %U %S" -o "$W/t" \
      "$gavel" serve --stdio --db "$W/db" --workspace "$W/ws" --durability normal < "$W/in.jsonl" > /dev/null
    echo "$gavel $(cat "$W/t") $(sqlite3 -readonly "$W/db" 'SELECT count(*) FROM events')"
  done
done
