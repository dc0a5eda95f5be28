#!/usr/bin/env bash
# What gateway mode costs against what a shop would otherwise run (BENCHMARKS.md, "Gateway
# mode"): the same wrk load, in one run, in rounds, on a fast origin (nginx answering a
# 64-byte page)
#   origin                directly;
#   nginx-proxy           nginx `proxy_pass` in front of it (2 workers, upstream keepalive);
#   nginx-auth-request    the same nginx guarding the path with `auth_request` against the
#                         waiting room's pass route (deploy/nginx-shop.conf's way), a pass sent;
#   gateway-open          gateway mode, a path no show guards;
#   gateway-guarded       gateway mode, a guarded path with a running admission's pass;
# the waiting room once on the embedded store and once on Redis, both in each round, serving on
# SERVE_THREADS threads of its own (default: one per core, as nginx has a worker per core);
# and gateway-open-shared, the embedded store's instance with SERVE_THREADS=0 (connections
# served on the server's work-stealing runtime), for comparison.
#
#   scripts/gateway-bench.sh [SECONDS] [CONNECTIONS] [ROUNDS]
#
# Prints requests/s, p50 and p99 of each, and each against nginx-proxy (the median of the
# rounds, and each round against that round's nginx-proxy); writes $OUT/gateway-bench.json and its plot, $OUT/gateway-bench.svg. Loopback only, bounded in time; ends only what it
# started, by PID. Needs a release build, wrk (installed when missing, Debian), nginx, curl,
# jq, redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh
SECONDS_EACH=${1:-10}
CONNS=${2:-32}
ROUNDS=${3:-3}

command -v wrk >/dev/null 2>&1 || { apt-get install -y -qq wrk >/dev/null; }
NGINX=$( [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx || command -v nginx )

# nginx_run NAME CONF: an nginx of the run's own, CONF its http block's servers.
nginx_run() {
  local name=$1 conf=$2 dir
  dir=$(mktemp -d); TEMP_DIRS+=("$dir"); mkdir -p "$dir/logs"
  cat >"$dir/nginx.conf" <<CONF
worker_processes ${NGINX_WORKERS:-2};
events { worker_connections 4096; }
http {
  access_log off;
  $conf
}
CONF
  "$NGINX" -p "$dir" -c "$dir/nginx.conf" \
    -g "daemon off; pid $dir/nginx.pid; error_log $dir/logs/error.log;" &
  PIDS+=($!)
  echo "$name: nginx $!" >&2
}

wait_up() { for _ in $(seq 100); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

# The origin: one worker, a small fixed answer.
ORIGIN_PORT=$(free_port)
NGINX_WORKERS=1 nginx_run origin "server {
    listen 127.0.0.1:$ORIGIN_PORT;
    keepalive_requests 1000000;
    location / { return 200 \"0123456789012345678901234567890123456789012345678901234567890123\"; }
  }"

# The waiting room, on each store, in gateway mode before the origin.
start_redis
declare -A PORT SERVER
THREADS=${SERVE_THREADS:-$(nproc)}
for store in embedded redis shared; do
  PORT[$store]=$(free_port)
  env_store=(SERVE_THREADS="$THREADS")
  [ "$store" = redis ] && env_store+=(REDIS_URL="$REDIS_URL")
  [ "$store" = shared ] && env_store=(SERVE_THREADS=0)
  env "${env_store[@]}" BIND="127.0.0.1:${PORT[$store]}" ADMIN_TOKEN=$TOKEN ADMIT_PER_SECOND=100 \
    JOIN_RATE_LIMIT=0 MAX_CONNECTIONS_PER_CLIENT=0 RUST_LOG=warn \
    UPSTREAM_URL="http://127.0.0.1:$ORIGIN_PORT" PROTECT=/checkout=bench \
    "$BIN" >"$OUT/gateway-server-$store.log" 2>&1 &
  SERVER[$store]=$!
  PIDS+=("$!")
done
for store in embedded redis shared; do wait_up "http://127.0.0.1:${PORT[$store]}/readyz"; done
wait_up "http://127.0.0.1:$ORIGIN_PORT/"

# nginx before the origin: plain proxy_pass, and auth_request against the embedded instance's
# pass route (the store behind the pass route matters little: see the guarded rows).
PROXY_PORT=$(free_port)
nginx_run proxy "upstream origin { server 127.0.0.1:$ORIGIN_PORT; keepalive 64; }
  upstream waiting_room { server 127.0.0.1:${PORT[embedded]}; keepalive 64; }
  map \$http_x_admission_ticket \$admission { '' \$cookie_wr_pass; default \$http_x_admission_ticket; }
  server {
    listen 127.0.0.1:$PROXY_PORT;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection '';
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
    }
    location /checkout/ {
      auth_request /_admission;
      error_page 401 403 = @queue;
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection '';
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Admission-Ticket \$admission;
    }
    location = /_admission {
      internal;
      proxy_pass http://waiting_room/orders/waiting-room/bench/pass;
      proxy_http_version 1.1;
      proxy_set_header Connection '';
      proxy_pass_request_body off;
      proxy_set_header Content-Length '';
      proxy_set_header X-Admission-Ticket \$admission;
    }
    location @queue { return 303 /wait/bench?return=\$uri; }
  }"
wait_up "http://127.0.0.1:$PROXY_PORT/"

# One admitted fan's pass on each store (its admission lasts the default 5 minutes).
declare -A PASS
auth=(-H "Authorization: Bearer $TOKEN")
for store in embedded redis; do
  base="http://127.0.0.1:${PORT[$store]}/orders/waiting-room/bench"
  curl -fsS -X POST "${auth[@]}" "$base/open" >/dev/null
  ticket=$(curl -fsS -X POST "$base/join" | jq -r .ticketId)
  pass=""
  for _ in $(seq 50); do
    pass=$(curl -fsS "$base/tickets/$ticket" | jq -r '.pass // empty')
    [ -n "$pass" ] && break
    sleep 0.1
  done
  [ -n "$pass" ] || { echo "no admission on $store" >&2; exit 1; }
  PASS[$store]=$pass
done

cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }

# run NAME ROUND wrk-args…: one wrk run; its line of JSON (requests/s, p50 and p99 in ms,
# the waiting room's CPU seconds when one is named in CPU_OF).
RESULTS="$OUT/gateway-bench.jsonl"
: >"$RESULTS"
run() {
  local name=$1 round=$2; shift 2
  local before=0 after=0 out
  [ -n "${CPU_OF:-}" ] && before=$(cpu_seconds "$CPU_OF")
  out=$(wrk -t2 -c"$CONNS" -d"${SECONDS_EACH}s" --latency "$@")
  [ -n "${CPU_OF:-}" ] && after=$(cpu_seconds "$CPU_OF")
  echo "$out" >"$OUT/gateway-$name-$round.txt"
  if grep -q "Non-2xx" <<<"$out"; then echo "$name answered other than 2xx" >&2; echo "$out" >&2; exit 1; fi
  awk -v name="$name" -v round="$round" -v cpu="$(awk -v a="$before" -v b="$after" 'BEGIN{print b-a}')" '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ {rps=$2} $1=="50%" {p50=ms($2)} $1=="99%" {p99=ms($2)}
    END {printf "{\"name\":\"%s\",\"round\":%d,\"rps\":%s,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"cpu_s\":%.2f}\n", name, round, rps, p50, p99, cpu}' <<<"$out" >>"$RESULTS"
}

commit=$(git rev-parse --short HEAD)
echo "gateway bench: commit $commit, $CONNS connections, ${SECONDS_EACH}s each, $ROUNDS rounds, SERVE_THREADS=$THREADS"
for round in $(seq "$ROUNDS"); do
  echo "round $round/$ROUNDS" >&2
  CPU_OF="" run origin "$round" "http://127.0.0.1:$ORIGIN_PORT/page"
  CPU_OF="" run nginx-proxy "$round" "http://127.0.0.1:$PROXY_PORT/page"
  CPU_OF=${SERVER[embedded]} run nginx-auth-request "$round" \
    -H "Cookie: wr_pass=${PASS[embedded]}" "http://127.0.0.1:$PROXY_PORT/checkout/page"
  for store in embedded redis; do
    CPU_OF=${SERVER[$store]} run "gateway-open-$store" "$round" "http://127.0.0.1:${PORT[$store]}/page"
    CPU_OF=${SERVER[$store]} run "gateway-guarded-$store" "$round" \
      -H "Cookie: wr_pass=${PASS[$store]}" "http://127.0.0.1:${PORT[$store]}/checkout/page"
  done
  CPU_OF=${SERVER[shared]} run gateway-open-shared "$round" "http://127.0.0.1:${PORT[shared]}/page"
done

# The median of the rounds, and each against nginx-proxy.
jq -s --arg commit "$commit" --argjson conns "$CONNS" --argjson secs "$SECONDS_EACH" --argjson threads "$THREADS" '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  (group_by(.name) | map({key: .[0].name, value: {
      rps: (map(.rps) | median), p50_ms: (map(.p50_ms) | median), p99_ms: (map(.p99_ms) | median),
      cpu_us_per_request: (map(if .cpu_s > 0 then .cpu_s * 1e6 / (.rps * $secs) else null end) | map(select(. != null)) | if length > 0 then median else null end),
      rounds: map(.rps)}}) | from_entries) as $by
  | (map(select(.name == "nginx-proxy") | {key: (.round | tostring), value: .rps}) | from_entries) as $proxy
  | (group_by(.name) | map({key: .[0].name,
      value: (map(.rps / $proxy[.round | tostring] * 100 | round / 100))}) | from_entries) as $per_round
  | {commit: $commit, connections: $conns, seconds: $secs, serve_threads: $threads, results: $by,
     against_nginx_proxy: ($by | with_entries(.value = (.value.rps / $by["nginx-proxy"].rps * 100 | round / 100))),
     rounds_against_nginx_proxy: ($per_round | with_entries(.value = {median: (.value | median), rounds: .value}))}
' "$RESULTS" >"$OUT/gateway-bench.json"
jq -r '.results | to_entries[] | [.key, (.value.rps | floor), .value.p50_ms, .value.p99_ms, (.value.cpu_us_per_request // "-")] | @tsv' "$OUT/gateway-bench.json" |
  awk -F'\t' 'BEGIN {printf "%-26s %10s %9s %9s %12s\n", "", "req/s", "p50 ms", "p99 ms", "µs CPU/req"}
    {printf "%-26s %10s %9.2f %9.2f %12s\n", $1, $2, $3, $4, ($5 == "-" ? "-" : sprintf("%.1f", $5))}'
echo "against nginx-proxy (requests/s; medians of the rounds, then each round against its own nginx-proxy):"
jq -r '.against_nginx_proxy as $m | .rounds_against_nginx_proxy | to_entries[]
  | "  \(.key): \($m[.key])x; per round median \(.value.median)x, rounds \(.value.rounds | map(tostring + "x") | join(" "))"' "$OUT/gateway-bench.json"
python3 scripts/gateway-plot.py "$OUT/gateway-bench.json" "$OUT/gateway-bench.svg"
echo "plot: $OUT/gateway-bench.svg"
