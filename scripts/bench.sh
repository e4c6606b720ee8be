#!/usr/bin/env bash
# gavel's whole-process benchmarks, each as a ratio to a baseline measured
# in the same run (see docs/performance.md for what each figure compares).
#
#   scripts/bench.sh            full run: a log of BENCH_EVENTS (default 1,000,000)
#                               events, then the table, written into docs/performance.md
#   scripts/bench.sh --quick    the regression guard: small sizes, few runs, docs
#                               untouched; the per-call and stream ratios of this
#                               build beside those of the previous release
#   scripts/bench.sh --no-docs  full run, print only
#   --save-baseline             also store this run's ratios in bench/baseline.json,
#                               as the previous release's (when cutting a release)
#
# Environment: BENCH_EVENTS (events in the big log), BENCH_KEEP=1 (keep the
# temporary folder and say where), GAVEL_BIN (time another gavel binary),
# GAVEL_PREVIOUS_BIN (the previous release's binary: timed in the same run,
# else its ratios are read from bench/baseline.json), CARGO_TARGET_DIR
# (honoured). Needs cargo, python3 and sqlite3 (installed with apt-get when
# missing). Everything else it builds or generates.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

QUICK=0
DOCS=1
SAVE=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1; DOCS=0 ;;
    --no-docs) DOCS=0 ;;
    --save-baseline) SAVE=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument \`$arg\`" >&2; exit 2 ;;
  esac
done

if [[ $QUICK == 1 ]]; then
  EVENTS=${BENCH_EVENTS:-20000}
  STREAM_EVENTS=$(( EVENTS < 10000 ? EVENTS : 10000 ))
  STREAM_RUNS=1; CALL_RUNS=10; SCAN_RUNS=1; LOG_RUNS=5
  CRITERION=(--warm-up-time 0.5 --measurement-time 1 --sample-size 10)
else
  EVENTS=${BENCH_EVENTS:-1000000}
  STREAM_EVENTS=$(( EVENTS < 200000 ? EVENTS : 200000 ))
  STREAM_RUNS=3; CALL_RUNS=40; SCAN_RUNS=3; LOG_RUNS=21
  CRITERION=(--warm-up-time 2 --measurement-time 5)
fi

log() { printf '[bench] %s\n' "$*" >&2; }

if ! command -v sqlite3 >/dev/null; then
  log "installing sqlite3"
  apt-get update -qq >/dev/null && apt-get install -y -qq sqlite3 >/dev/null
fi
command -v python3 >/dev/null || { echo "bench.sh: python3 is needed for the report" >&2; exit 2; }

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
log "building the dist profile (gavel and the harness, as shipped) and the criterion benches"
cargo build --profile dist --quiet
scripts/build-exec dist
cargo build --profile dist --quiet -p gavel-bench --bins
cargo bench --quiet -p gavel-bench --no-run 2>/dev/null
B=$TARGET/dist
GAVEL=${GAVEL_BIN:-$B/gavel}
PREVIOUS=${GAVEL_PREVIOUS_BIN:-}
if [[ -n $PREVIOUS && ! -x $PREVIOUS ]]; then
  echo "bench.sh: GAVEL_PREVIOUS_BIN \`$PREVIOUS\` is not an executable" >&2; exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gavel-bench.XXXXXX")
if [[ ${BENCH_KEEP:-0} == 1 ]]; then
  log "keeping $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi
M=$WORK/m          # one JSON file per measurement, read by the report
mkdir -p "$M"
WS=$WORK/ws
put() { printf '%s\n' "$2" > "$M/$1.json"; }
timeit() { "$B/timeit" "$@"; }
count() { sqlite3 -readonly "$1" "SELECT count(*) FROM events"; }

has_serve=0; "$GAVEL" serve --help >/dev/null 2>&1 && has_serve=1
has_hook=0; "$GAVEL" hook claude-code --help >/dev/null 2>&1 && has_hook=1
put features "{\"serve\":$has_serve,\"hook\":$has_hook,\"quick\":$QUICK}"
put load_before "{\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# Records a generated session in DB: through `gavel serve --stdio
# --durability normal` when it exists, else in-process through
# GovernedRunner + Store (gen-log). Prints the timing JSON.
record() { # EVENTS PREFIX DB [GAVEL]
  if [[ $has_serve == 1 ]]; then
    "$B/gen-input" --workspace "$WS" --events "$1" --id-prefix "$2" --out "$WORK/$2.jsonl" >/dev/null
    timeit --runs 1 --warmup 0 --stdin "$WORK/$2.jsonl" -- \
      "${4:-$GAVEL}" serve --stdio --db "$3" --workspace "$WS" --durability normal
    rm -f "$WORK/$2.jsonl"
  else
    "$B/gen-log" --workspace "$WS" --db "$3" --events "$1" --id-prefix "$2"
  fi
}
rate() { # TIMING_JSON EVENTS -> events/s
  python3 -c 'import json,sys; t=json.loads(sys.argv[1]); print(int(sys.argv[2])/t.get("median_s", t.get("seconds")))' "$1" "$2"
}

# --- the big log, through gavel's own recording path -------------------------
log "recording a log of $EVENTS events ($([[ $has_serve == 1 ]] && echo 'gavel serve --stdio' || echo 'in-process GovernedRunner + Store: serve is missing'))"
BIG=$WORK/big.db
gen=$(record "$EVENTS" big_ "$BIG")
big_events=$(count "$BIG")
put generate "{\"timing\":$gen,\"events\":$big_events,\"rate\":$(rate "$gen" "$big_events")}"

# --- (b) streamed recording ---------------------------------------------------
log "streamed recording: $STREAM_RUNS x $STREAM_EVENTS events, gavel then baseline (b)"
gavel_rates=(); base_rates=(); prev_rates=()
for r in $(seq "$STREAM_RUNS"); do
  db=$WORK/stream$r.db
  t=$(record "$STREAM_EVENTS" "s${r}_" "$db")
  gavel_rates+=("$(rate "$t" "$(count "$db")")")
  t=$("$B/baseline-stream" --source "$WORK/stream1.db" --out "$WORK/base$r.db")
  base_rates+=("$(rate "$t" "$(count "$WORK/stream1.db")")")
  rm -f "$WORK/base$r.db"*
  if [[ -n $PREVIOUS ]]; then
    t=$(record "$STREAM_EVENTS" "p${r}_" "$WORK/prev$r.db" "$PREVIOUS")
    prev_rates+=("$(rate "$t" "$(count "$WORK/prev$r.db")")")
    rm -f "$WORK/prev$r.db"*
  fi
  [[ $r == 1 ]] || rm -f "$db"*
done
put stream "{\"gavel\":[$(IFS=,; echo "${gavel_rates[*]}")],\"baseline\":[$(IFS=,; echo "${base_rates[*]}")],\"previous\":[$(IFS=,; echo "${prev_rates[*]}")]}"

# --- (a) one governed call ------------------------------------------------------
log "one governed call: $CALL_RUNS runs each"
CALL=$WORK/call.db
"$GAVEL" run read_file '{"path":"a.txt"}' --workspace "$WS" --db "$CALL" --json >/dev/null
"$B/baseline-call" --db "$CALL" --init
# The previous release writes its own log: a newer schema is one it refuses.
PREV_CALL=$WORK/prev-call.db
[[ -z $PREVIOUS ]] || "$PREVIOUS" run read_file '{"path":"a.txt"}' --workspace "$WS" --db "$PREV_CALL" --json >/dev/null
for d in full normal; do
  put "run_$d" "$(timeit --runs "$CALL_RUNS" --warmup 3 -- \
    "$GAVEL" run read_file '{"path":"a.txt"}' --workspace "$WS" --db "$CALL" --durability "$d" --json)"
  put "call_$d" "$(timeit --runs "$CALL_RUNS" --warmup 3 -- "$B/baseline-call" --db "$CALL" --durability "$d")"
  [[ -z $PREVIOUS ]] || put "prev_run_$d" "$(timeit --runs "$CALL_RUNS" --warmup 3 -- \
    "$PREVIOUS" run read_file '{"path":"a.txt"}' --workspace "$WS" --db "$PREV_CALL" --durability "$d" --json)"
done
if [[ $has_hook == 1 ]]; then
  printf '{"session_id":"s","transcript_path":"%s/t","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"%s/a.txt"},"tool_use_id":"toolu_{i}"}\n' \
    "$WORK" "$WS" "$WS" > "$WORK/hook.json"
  put hook_full "$(timeit --runs "$CALL_RUNS" --warmup 3 --stdin "$WORK/hook.json" -- \
    "$GAVEL" hook claude-code --db "$CALL" --workspace "$WS")"
  [[ -z $PREVIOUS ]] || put prev_hook_full "$(timeit --runs "$CALL_RUNS" --warmup 3 --stdin "$WORK/hook.json" -- \
    "$PREVIOUS" hook claude-code --db "$PREV_CALL" --workspace "$WS")"
fi
# The same calls answered by a resident gavel (`serve --socket`), when this
# build has one: the hook, and `run` (the tool still runs in run's process).
if "$GAVEL" serve --help 2>/dev/null | grep -q -- --socket; then
  "$GAVEL" serve --socket --db "$CALL" 2>/dev/null &
  resident=$!
  for _ in $(seq 100); do [[ -S $CALL.sock ]] && break; sleep 0.05; done
  [[ $has_hook == 0 ]] || put hook_resident "$(timeit --runs "$CALL_RUNS" --warmup 3 --stdin "$WORK/hook.json" -- \
    "$GAVEL" hook claude-code --db "$CALL" --workspace "$WS")"
  if "$GAVEL" serve --help | grep -q 'and `gavel run` calls'; then
    put run_resident "$(timeit --runs "$CALL_RUNS" --warmup 3 -- \
      "$GAVEL" run read_file '{"path":"a.txt"}' --workspace "$WS" --db "$CALL" --durability full --json)"
  fi
  kill "$resident"; wait "$resident" || true
fi

# --- (c) verify and replay ------------------------------------------------------
log "verify and replay on $big_events events: $SCAN_RUNS runs each"
put scan "$(timeit --runs "$SCAN_RUNS" --warmup 1 -- "$B/baseline-scan" --db "$BIG")"
put verify "$(timeit --runs "$SCAN_RUNS" --warmup 1 -- "$GAVEL" verify --db "$BIG" --json)"
put replay "$(timeit --runs "$SCAN_RUNS" --warmup 0 -- \
  "$GAVEL" replay --db "$BIG" --workspace "$WS" --format json --fail-on never)"

# --- (d) log --rule R --limit 50 -------------------------------------------------
RULE=bash.hard_deny
log "log --rule $RULE --limit 50: $LOG_RUNS runs each"
# The query `gavel log` runs (src/store/query.rs, CALLS_SQL with a rule filter
# and a limit), parameters written in.
LOG_SQL="SELECT * FROM (
  SELECT d.seq, d.call_id, d.ts_us, d.tool, d.payload,
    (SELECT q.payload FROM events q
      WHERE q.call_id = d.call_id AND q.kind = 'request' ORDER BY q.seq LIMIT 1) AS request,
    COALESCE((SELECT a.approval FROM events a
      WHERE a.call_id = d.call_id AND a.kind = 'approval' ORDER BY a.seq DESC LIMIT 1),
      CASE WHEN d.action = 'ask' THEN 'pending' ELSE 'not_required' END) AS approval,
    COALESCE((SELECT r.status FROM events r
      WHERE r.call_id = d.call_id AND r.kind = 'result' ORDER BY r.seq DESC LIMIT 1),
      'incomplete') AS status
  FROM events d
  WHERE d.kind = 'decision' AND d.rule_id = '$RULE'
) AS c
WHERE 1 = 1
ORDER BY c.seq
LIMIT 50"
put log "$(timeit --runs "$LOG_RUNS" --warmup 2 -- "$GAVEL" log --db "$BIG" --rule "$RULE" --limit 50 --json)"
put sqlite "$(timeit --runs "$LOG_RUNS" --warmup 2 -- sqlite3 -readonly "$BIG" "$LOG_SQL")"
put log_rows "{\"gavel\":$("$GAVEL" log --db "$BIG" --rule "$RULE" --limit 50 --json | wc -l),\"sqlite\":$(sqlite3 -readonly "$BIG" "$LOG_SQL" | grep -c '^[0-9]' || true),\"selected\":$(sqlite3 -readonly "$BIG" "SELECT count(*) FROM events WHERE kind='decision' AND rule_id='$RULE'"),\"calls\":$(sqlite3 -readonly "$BIG" "SELECT count(*) FROM events WHERE kind='decision'")}"

# --- size ---------------------------------------------------------------------------
sqlite3 -readonly -json "$BIG" "SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC" > "$M/size_objects.json"
sqlite3 -readonly -json "$BIG" "SELECT kind, count(*) AS n, avg(length(payload)) AS payload,
    avg(length(call_id) + length(kind) + coalesce(length(tool),0) + coalesce(length(action),0)
      + coalesce(length(rule_id),0) + coalesce(length(approval),0) + coalesce(length(status),0)) AS text,
    avg(length(leaf) + length(chain) + length(log_id)) AS hashes
  FROM events GROUP BY kind ORDER BY n DESC" > "$M/size_kinds.json"
put size "{\"file\":$(stat -c %s "$BIG"),\"wal\":$(stat -c %s "$BIG-wal" 2>/dev/null || echo 0),\"calls\":$(sqlite3 -readonly "$BIG" "SELECT count(*) FROM events WHERE kind='request'"),\"events\":$big_events}"
put load_after "{\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# --- in-process: criterion ------------------------------------------------------------
log "criterion: decide (gavel vs regorus vs cedar) and chain hashing"
cargo bench --quiet -p gavel-bench --bench decide -- "${CRITERION[@]}" >"$WORK/criterion-decide.txt" 2>&1
cargo bench --quiet -p gavel-bench --bench chain -- "${CRITERION[@]}" >"$WORK/criterion-chain.txt" 2>&1
if [[ $QUICK == 0 ]]; then
  log "criterion: decision time by input size (1 KiB .. 1 MiB)"
  cargo bench --quiet -p gavel-bench --bench scaling -- "${CRITERION[@]}" >"$WORK/criterion-scaling.txt" 2>&1
  log "criterion: the redaction pass by payload size (1 KiB .. 1 MiB)"
  cargo bench --quiet -p gavel-bench --bench redact -- "${CRITERION[@]}" >"$WORK/criterion-redact.txt" 2>&1
fi


# --- the machine ------------------------------------------------------------------------
python3 - "$M/machine.json" <<EOF
import json, sys, platform
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), 'unknown')
mem = next((int(l.split()[1]) for l in open('/proc/meminfo') if l.startswith('MemTotal')), 0)
json.dump({
  "nproc": "$(nproc)", "cpu": cpu, "memory_gib": round(mem / 1048576, 1),
  "kernel": platform.release(), "rustc": "$(rustc --version)",
  "sqlite3": "$(sqlite3 --version | cut -d' ' -f1)",
  "date": "$(date -u +%Y-%m-%dT%H:%MZ)", "commit": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
  "filesystem": "$(df -T "$WORK" | awk 'NR==2 {print $2}')",
}, open(sys.argv[1], 'w'))
EOF

python3 "$ROOT/bench/report.py" "$WORK" "$TARGET/criterion" "$([[ $DOCS == 1 ]] && echo "$ROOT/docs/performance.md" || echo -)" \
  "$ROOT/bench/baseline.json" "$SAVE" "$("$GAVEL" --version)"
