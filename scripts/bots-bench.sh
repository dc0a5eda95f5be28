#!/usr/bin/env bash
# Reproduces BENCHMARKS.md's "Bots" section: one bot address (posed with X-Forwarded-For
# behind TRUSTED_PROXY_HOPS=1) joining as hard as it can against each defence, with honest
# fans joining beside it; a release server on the embedded store, a fresh one per case.
#
#   scripts/bots-bench.sh [SECONDS]     each case runs SECONDS (default 15)
#
# Loopback only, every case bounded in time and fans; it ends only the processes it started,
# by PID. One JSON report per case, and a summary table, go to $OUT (default target/bench/bots).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench/bots}
SECONDS_PER_CASE=${1:-15}
# CASES=fans runs only the honest-fan cases (what each difficulty costs with no crowd).
CASES=${CASES:-all}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

# start_server LIMIT: a server trusting one proxy hop, with JOIN_RATE_LIMIT=LIMIT.
start_server() {
  local port; port=$(free_port)
  URL="http://127.0.0.1:$port"
  env BIND="127.0.0.1:$port" ADMIN_TOKEN=$TOKEN JOIN_RATE_LIMIT="$1" TRUSTED_PROXY_HOPS=1 \
    RUST_LOG=error "$BIN" >"$OUT/server.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 100); do
    curl -fs "$URL/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server did not start; see $OUT/server.log" >&2
  exit 1
}

stop_server() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }

# run NAME LIMIT BITS [load flags...]: one case, its report in $OUT/NAME.json.
run() {
  local name=$1 limit=$2 bits=$3; shift 3
  start_server "$limit"
  "$CLIENT" load --url "$URL" --show bots --fans $((SECONDS_PER_CASE * 2)) --join-rate 2 \
    --duration "${SECONDS_PER_CASE}s" --admin-token "$TOKEN" --admit-per-second 1 \
    --join-challenge-bits "$bits" --bots 1 --json --quiet "$@" >"$OUT/$name.json"
  stop_server
  jq -r --arg name "$name" --arg limit "$limit" --arg bits "$bits" \
    '[$name, $limit, $bits, .bot_joins, .bot_places, (.places_per_bot_per_minute|floor),
      (.bot_solve_ms*10|round/10), .fans_joined, .fans,
      (.fan_join_ms_p50*10|round/10), (.fan_join_ms_p90*10|round/10),
      (.fan_solve_ms_mean*10|round/10), (.fan_hashes_per_second|round)] | @tsv' "$OUT/$name.json" \
    | tee -a "$OUT/summary.tsv"
}

printf 'case\tjoin-limit/s\tbits\tbot joins\tbot places\tplaces/min\tbot solve ms\tfans joined\tfans\tfan p50 ms\tfan p90 ms\tfan solve ms\tfan hashes/s\n' \
  | tee "$OUT/summary.tsv"
if [ "$CASES" = all ]; then
run no-defence          0 0
run join-limit          5 0
run idempotency-key     0 0 --bots-idempotency-key
run pow-12-no-solve     0 12
for bits in 12 16 18 20; do
  run "pow-$bits"       0 "$bits" --bots-solve
done
run limit+pow-16        5 16 --bots-solve
run limit+pow-16+key    5 16 --bots-solve --bots-idempotency-key
fi
# What each difficulty costs an honest fan with no crowd at all.
for bits in 0 12 16 18 20; do
  run "fans-only-$bits" 0 "$bits" --bot-concurrency 0
done
