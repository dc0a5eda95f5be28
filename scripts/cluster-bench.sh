#!/usr/bin/env bash
# Pub/sub traffic on a three-node Redis Cluster, plain against sharded (BENCHMARKS.md §4):
#
#   scripts/cluster-bench.sh plain|sharded [SHOWS] [SECONDS]
#
# Starts three redis-servers of its own (cluster mode, free loopback ports, no persistence),
# makes them a cluster, starts three release servers on it with REDIS_PUBSUB=MODE, makes SHOWS
# shows (default 100) of 30 fans each, the fans of show i joined through instance i mod 3,
# whose one SSE stream (the last fan's) makes that instance follow the show. Then it opens
# every show at 1 a second and reads each node's INFO stats and CLUSTER INFO, and each
# instance's CPU, over SECONDS (default 20). Loopback only, bounded, and it ends only the
# processes it started, by PID. Results go to $OUT (default target/bench/cluster-MODE/).
set -euo pipefail

cd "$(dirname "$0")/.."
mode=${1:?plain|sharded}; shows=${2:-100}; seconds=${3:-20}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench/cluster-$mode}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

start_cluster

URLS=(); SERVER_PIDS=()
for k in 0 1 2; do
  port=$(free_port)
  env BIND="127.0.0.1:$port" REDIS_URL="$CLUSTER_URL" REDIS_CLUSTER=true REDIS_PUBSUB="$mode" \
    ADMIN_TOKEN=$TOKEN JOIN_RATE_LIMIT=0 MAX_STREAMS_PER_CLIENT=0 MAX_CONNECTIONS_PER_CLIENT=0 ADMIT_PER_SECOND=1 RUST_LOG=warn \
    "$BIN" >"$OUT/server-$k.log" 2>&1 &
  PIDS+=("$!"); SERVER_PIDS+=("$!"); URLS+=("http://127.0.0.1:$port")
done
for url in "${URLS[@]}"; do
  for _ in $(seq 100); do curl -fs "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
done

{
  echo "mode: $mode, $shows shows, 3 nodes (${CLUSTER_PORTS[*]}), 3 instances, $seconds s measured"
  grep -h "Redis Cluster events" "$OUT"/server-*.log | sed 's/\x1b\[[0-9;]*m//g' | sort | uniq -c || true
} | tee "$OUT/summary.txt"
python3 scripts/cluster-bench.py --token "$TOKEN" --shows "$shows" --seconds "$seconds" \
  --ports "${CLUSTER_PORTS[@]}" --urls "${URLS[@]}" --pids "${SERVER_PIDS[@]}" --redis-pids "${CLUSTER_PIDS[@]}" \
  | tee -a "$OUT/summary.txt"
