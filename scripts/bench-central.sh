#!/usr/bin/env bash
# The central store's read side (issue 16): central `gavel log`, `stats` and
# `verify` against `psql` running the very SQL gavel runs (printed by the
# harness's `central-sql`, parameters written in), same server, same data,
# same run. See docs/performance.md ("The central store: queries").
#
#   scripts/bench-central.sh           HOSTS hosts x EVENTS events each
#   scripts/bench-central.sh --quick   small sizes, few runs
#
# Environment: GAVEL_TEST_POSTGRES (the server, as the tests take it;
# default postgres://postgres@127.0.0.1:5432/test), BENCH_HOSTS (4),
# BENCH_EVENTS (50000 per host), BENCH_KEEP=1. Needs psql and python3.
# Works in a schema of its own and drops it (and its roles) at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1
HOSTS=${BENCH_HOSTS:-4}
if [[ $QUICK == 1 ]]; then EVENTS=${BENCH_EVENTS:-5000}; RUNS=3; else EVENTS=${BENCH_EVENTS:-50000}; RUNS=11; fi
BASE=${GAVEL_TEST_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}
log() { printf '[bench-central] %s\n' "$*" >&2; }

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
log "building the dist profile (gavel and the harness, as shipped)"
cargo build --profile dist --quiet
cargo build --profile dist --quiet -p gavel-bench --bins
B=$TARGET/dist
GAVEL=$B/gavel

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gavel-bench-central.XXXXXX")
SCHEMA=bc_$$
URL="$BASE?options=-csearch_path%3D$SCHEMA"
cleanup() {
  psql -X -q "$BASE" -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE; DROP SCHEMA IF EXISTS ${SCHEMA}_inbox CASCADE;" >/dev/null 2>&1 || true
  for i in $(seq 1 "$HOSTS"); do
    psql -X -q "$BASE" -c "DROP OWNED BY ${SCHEMA}_h$i; DROP ROLE IF EXISTS ${SCHEMA}_h$i;" >/dev/null 2>&1 || true
  done
  [[ ${BENCH_KEEP:-0} == 1 ]] && log "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK"
psql -X -q "$BASE" -c "CREATE SCHEMA $SCHEMA" >/dev/null
"$GAVEL" keygen --out central.key --name central >/dev/null
"$GAVEL" --db "$URL" central init --key central.key >/dev/null
for i in $(seq 1 "$HOSTS"); do
  "$GAVEL" keygen --out "h$i.key" --name "h$i" >/dev/null
  PUSH=$("$GAVEL" --db "$URL" central enroll "h$i" --public-key "h$i.key.pub" --role "${SCHEMA}_h$i" | sed -n "s/.*--to '\([^']*\)'.*/\1/p")
  log "host h$i: generating $EVENTS events"
  "$B/gen-log" --workspace "w$i" --db "h$i.db" --events "$EVENTS" --id-prefix "h${i}_" --seed "$i" >/dev/null
  "$GAVEL" push --to "$PUSH" --key "h$i.key" --db "h$i.db" >/dev/null
done
log "ingesting"
"$GAVEL" --db "$URL" central ingest --key central.key >&2
psql -X -q "$URL" -c "ANALYZE" >/dev/null

export PGOPTIONS="-csearch_path=$SCHEMA"
time_pair() { # name, gavel args..., then `--` and the central-sql words
  local name=$1; shift
  local gavel_args=() ; while [[ $1 != -- ]]; do gavel_args+=("$1"); shift; done; shift
  "$B/central-sql" "$@" > "$name.sql"
  "$B/timeit" --runs "$RUNS" --warmup 1 -- "$GAVEL" --db "$URL" "${gavel_args[@]}" > "$name.gavel.json"
  "$B/timeit" --runs "$RUNS" --warmup 1 -- psql -X -q -A -t -o /dev/null "$BASE" -f "$name.sql" > "$name.psql.json"
}
log "timing"
time_pair log_rule log --rule bash.hard_deny --limit 50 --json -- log-rule bash.hard_deny 50
time_pair log_all log --json -- log-all
time_pair stats stats --json -- stats
time_pair stats_host stats --host h1 --json -- stats-host h1
"$B/timeit" --runs 3 --warmup 0 -- "$GAVEL" --db "$URL" verify > verify.gavel.json
printf 'SELECT log_id, seq, ts_us, kind, call_id, tool, action, rule_id, approval, status, "user", host, client, session, agent, payload, leaf, chain FROM events ORDER BY log_id, seq;\n' > verify.sql
"$B/timeit" --runs 3 --warmup 0 -- psql -X -q -A -t -o /dev/null "$BASE" -f verify.sql > verify.psql.json

python3 - "$HOSTS" "$EVENTS" "$(psql -X -A -t "$BASE" -c 'SHOW server_version')" <<'PY'
import json, sys
hosts, events, version = sys.argv[1:4]
rows = [
    ("log_rule", "`log --rule bash.hard_deny --limit 50 --json`", "the same SQL"),
    ("log_all", "`log --json` (every call)", "the same SQL"),
    ("stats", "`stats --json`", "the same SQL"),
    ("stats_host", "`stats --host h1 --json`", "the same SQL"),
    ("verify", "`verify` (every chain, checkpoint, cosignature, the central log)", "every event row in (log, seq) order"),
]
print(f"{hosts} hosts x {events} events, PostgreSQL {version}, median wall time")
print()
print("| command | gavel | `psql` baseline | baseline | ratio |")
print("|---|---|---|---|---|")
for name, what, base in rows:
    g = json.load(open(f"{name}.gavel.json"))["median_s"]
    p = json.load(open(f"{name}.psql.json"))["median_s"]
    fmt = lambda s: f"{s*1000:.0f} ms" if s < 10 else f"{s:.1f} s"
    print(f"| {what} | {fmt(g)} | {fmt(p)} | {base} | {g/p:.2f}x |")
PY
