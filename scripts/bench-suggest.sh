#!/usr/bin/env bash
# `gavel policy suggest` over a generated log, on two cores.
#
#   scripts/bench-suggest.sh     builds gavel, gen-log and gen-suggest-log (release profile),
#                                generates two logs of BENCH_EVENTS (default 1,000,000) events:
#                                the benchmark mix (bench/src/mix.rs, as scripts/bench.sh) and
#                                one shaped for suggest (bench/src/bin/gen-suggest-log.rs: 100
#                                sessions, many shapes to learn, the negatives that stop some),
#                                then on each times suggest as text, as JSON, with --holdout 0.3
#                                and with --unused-for 1m, and `gavel replay` for scale
#
# Environment: BENCH_EVENTS, BENCH_KEEP=1 (keep the temporary folder and say
# where), CARGO_TARGET_DIR (honoured). Pinned to cores 0 and 1 with taskset
# when it is there. Prints one line per measurement: wall and user seconds,
# peak resident memory.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${BENCH_EVENTS:-1000000}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
log() { printf '[bench-suggest] %s\n' "$*" >&2; }

log "building gavel and the generators (release)"
cargo build --release --quiet --bin gavel
cargo build --release --quiet -p gavel-bench --bin gen-log --bin gen-suggest-log
GAVEL=$TARGET/release/gavel

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gavel-bench-suggest.XXXXXX")
if [[ ${BENCH_KEEP:-0} == 1 ]]; then log "keeping $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c 0,1); fi
measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %U %M" -o "$WORK/time" "${PIN[@]}" "$@" > "$WORK/out" 2> "$WORK/err" || {
    cat "$WORK/err" >&2; exit 1; }
  read -r wall user kb < "$WORK/time"
  printf '%-40s %7ss wall %7ss user %6d MB peak  %s bytes out\n' \
    "$name" "$wall" "$user" $((kb / 1024)) "$(wc -c < "$WORK/out")"
}
for generator in gen-log gen-suggest-log; do
  DB=$WORK/$generator.db
  log "generating a log of $EVENTS events with $generator"
  "$TARGET/release/$generator" --workspace "$WORK/ws" --db "$DB" --events "$EVENTS" >&2
  S=("$GAVEL" policy suggest --workspace "$WORK/ws" --db "$DB")
  measure "$generator: suggest" "${S[@]}"
  measure "$generator: suggest --format json" "${S[@]}" --format json
  measure "$generator: suggest --holdout 0.3" "${S[@]}" --holdout 0.3 --format json
  measure "$generator: suggest --unused-for 1m" "${S[@]}" --unused-for 1m --format json
  measure "$generator: replay (for scale)" "$GAVEL" replay --workspace "$WORK/ws" --db "$DB" --format json --fail-on never
done
