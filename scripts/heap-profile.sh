#!/usr/bin/env bash
# Where a held stream's bytes go (BENCHMARKS.md §1): the release server under heaptrack, N fans
# of one load process holding streams to a closed show, the server interrupted after 15 s
# (while they are all held), then heaptrack's top peak consumers.
#
#   scripts/heap-profile.sh N sse|ws
#
# Loopback only, bounded; ends only what it started. Needs heaptrack. Output in $OUT
# (default target/bench/heap-TRANSPORT/).
set -euo pipefail

cd "$(dirname "$0")/.."
n=${1:?N fans}; transport=${2:-sse}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench/heap-$transport}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

port=$(free_port)
URL="http://127.0.0.1:$port"
env BIND="127.0.0.1:$port" ADMIN_TOKEN=$TOKEN JOIN_RATE_LIMIT=0 MAX_STREAMS_PER_CLIENT=0 MAX_CONNECTIONS_PER_CLIENT=0 RUST_LOG=warn \
  heaptrack -o "$OUT/heap" "$BIN" >"$OUT/server.log" 2>&1 &
HEAPTRACK=$!
PIDS+=("$HEAPTRACK")
for _ in $(seq 100); do curl -fs "$URL/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS -X PUT -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \
  -d '{"admitPerSecond":200}' "$URL/orders/waiting-room/hold" >/dev/null
"$CLIENT" load --url "$URL" --source-ips 127.0.9.2-127.0.9.21 --quiet --json --show hold \
  --fans "$n" --transport "$transport" --join-rate 1000 --duration 25s \
  --csv "$OUT/load.csv" --plot "$OUT/load.svg" >"$OUT/report.json" 2>"$OUT/load.err" &
LOAD=$!
PIDS+=("$LOAD")
sleep 15
# The server is the child of heaptrack that runs our binary (the other is its interpreter).
server=
for child in $(pgrep -P "$HEAPTRACK"); do
  [ "$(readlink "/proc/$child/exe")" = "$(readlink -f "$BIN")" ] && server=$child
done
[ -n "$server" ] || { echo "no server under heaptrack" >&2; exit 1; }
grep VmRSS "/proc/$server/status" | tee "$OUT/rss.txt"
kill -INT "$server"
wait "$LOAD" || true
wait "$HEAPTRACK" || true
heaptrack_print -f "$OUT"/heap.* --print-peaks 1 --print-allocators 0 --print-temporary 0 \
  --print-leaks 0 --peak-limit 8 -s 0 2>/dev/null | tee "$OUT/peaks.txt" | tail -4
