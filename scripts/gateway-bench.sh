#!/usr/bin/env bash
# What gateway mode costs (BENCHMARKS.md, "Gateway mode"): the same wrk load, in one run, on
# a fast origin (nginx answering a 64-byte page) directly, through gateway mode on an open
# path, and through it on a guarded path with a valid pass (one store read each: the
# admission still unspent).
#
#   scripts/gateway-bench.sh [embedded|redis] [SECONDS] [CONNECTIONS]
#
# Loopback only, bounded in time; ends only what it started, by PID. Needs a release build,
# wrk (installed when missing, Debian), nginx, curl, jq; redis-server for `redis`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh
STORE=${1:-embedded}
SECONDS_EACH=${2:-10}
CONNS=${3:-32}

command -v wrk >/dev/null 2>&1 || { apt-get install -y -qq wrk >/dev/null; }
NGINX=$( [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx || command -v nginx )

# The origin: nginx, one worker, a small fixed answer.
ORIGIN_PORT=$(free_port)
dir=$(mktemp -d)
mkdir -p "$dir/logs"
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
events { worker_connections 4096; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$ORIGIN_PORT;
    keepalive_requests 1000000;
    location / { return 200 "0123456789012345678901234567890123456789012345678901234567890123"; }
  }
}
CONF
"$NGINX" -p "$dir" -c "$dir/nginx.conf" -g "daemon off; master_process off; pid $dir/nginx.pid; error_log $dir/logs/error.log;" &
PIDS+=($!)

PORT=$(free_port)
env_store=()
if [ "$STORE" = redis ]; then start_redis; env_store=(REDIS_URL="$REDIS_URL"); fi
env "${env_store[@]}" BIND="127.0.0.1:$PORT" ADMIN_TOKEN=$TOKEN ADMIT_PER_SECOND=100 \
  JOIN_RATE_LIMIT=0 MAX_CONNECTIONS_PER_CLIENT=0 RUST_LOG=warn \
  UPSTREAM_URL="http://127.0.0.1:$ORIGIN_PORT" PROTECT=/checkout=bench \
  "$BIN" >"$OUT/gateway-server.log" 2>&1 &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
for _ in $(seq 100); do curl -fsS "http://127.0.0.1:$ORIGIN_PORT/" >/dev/null 2>&1 && break; sleep 0.1; done

# One admitted fan's pass, for the guarded path (its admission lasts the default 5 minutes).
auth=(-H "Authorization: Bearer $TOKEN")
curl -fsS -X POST "${auth[@]}" "http://127.0.0.1:$PORT/orders/waiting-room/bench/open" >/dev/null
ticket=$(curl -fsS -X POST "http://127.0.0.1:$PORT/orders/waiting-room/bench/join" | jq -r .ticketId)
pass=""
for _ in $(seq 50); do
  pass=$(curl -fsS "http://127.0.0.1:$PORT/orders/waiting-room/bench/tickets/$ticket" | jq -r '.pass // empty')
  [ -n "$pass" ] && break
  sleep 0.1
done
[ -n "$pass" ] || { echo "no admission" >&2; exit 1; }

cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }

# wrk's summary as: requests/s p50 p99 (ms).
run() {
  local name=$1; shift
  local out; out=$(wrk -t2 -c"$CONNS" -d"${SECONDS_EACH}s" --latency "$@")
  echo "$out" >"$OUT/gateway-$name.txt"
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  printf '%-28s %10s req/s   p50 %8s   p99 %8s\n' "$name" "$rps" "$p50" "$p99"
}
commit=$(git rev-parse --short HEAD)
echo "gateway bench: store $STORE, $CONNS connections, ${SECONDS_EACH}s each, commit $commit"
run origin-direct "http://127.0.0.1:$ORIGIN_PORT/page"
c0=$(cpu_seconds "$SERVER")
run gateway-open-path "http://127.0.0.1:$PORT/page"
c1=$(cpu_seconds "$SERVER")
run gateway-guarded-path -H "Cookie: wr_pass=$pass" "http://127.0.0.1:$PORT/checkout/page"
c2=$(cpu_seconds "$SERVER")
awk -v a="$c0" -v b="$c1" -v c="$c2" -v s="$SECONDS_EACH" \
  'BEGIN {printf "server CPU: open path %.2f s, guarded path %.2f s (of %d s each)\n", b - a, c - b, s}'
# The guarded runs were let in, not sent to queue.
grep -q "Non-2xx" "$OUT/gateway-gateway-guarded-path.txt" && { echo "the guarded path refused the pass" >&2; exit 1; }
exit 0
