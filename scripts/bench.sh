#!/usr/bin/env bash
# Reproduces the figures in BENCHMARKS.md: a release server on a free loopback port, one or
# more `waiting-room-client load` processes against it, the server's RSS read from /proc.
#
#   scripts/bench.sh hold TOTAL PROCS [sse|ws]   connections held, memory per connection,
#                                                then tick→push latency as the show opens
#   scripts/bench.sh joins embedded|redis N      join throughput (join only, no streams); on
#                                                Redis also the floor (INCR + ZADD), measured on the
#                                                same Redis after the joins, and the ratio;
#                                                JOIN_RATE a fixed rate offered
#   scripts/bench.sh burst N [SHOWS]             the 10:00 burst: N joins into one show (or
#                                                SHOWS) on Redis, then each queue checked (every
#                                                join once, arrivals 1..N) and Redis memory and
#                                                CPU per fan; CLUSTER=1 on a 3-node Redis
#                                                Cluster, the shows on different nodes and
#                                                scheduled (pre-queue joins; SCHEDULED=0|1)
#   (any case) KEYED=1                           every fan sends an Idempotency-Key of its own,
#                                                as the waiting page does
#   scripts/bench.sh joins-wait N                joins on a primary with a replica, without and
#                                                with REDIS_WAIT_REPLICAS=1, same run
#   scripts/bench.sh latency FANS RATE [sse|ws]  tick→push latency: FANS join at 1,000/s into an
#                                                open show admitting RATE a second
#   scripts/bench.sh crowd sse|ws|poll FANS PROCS  push against polling: FANS join a closed
#                                                show on Redis, it opens at 5 a second, and
#                                                for WINDOW (60) seconds Redis commands, server
#                                                CPU and the bytes on the server's sockets are
#                                                measured; staleness from the load reports
#                                                (JOIN_RATE per process, default 1,000/s)
#   scripts/bench.sh crowd-plot                  the staleness plot of every crowd run in $OUT
#   scripts/bench.sh scale FANS INSTANCES        INSTANCES release servers on one redis-server,
#                                                one load process of FANS/INSTANCES SSE fans
#                                                each; the show opens at RATE (20) a second and
#                                                for WINDOW (120) seconds Redis commands, CPU,
#                                                pushes and tick → knowledge per instance are
#                                                measured, plotted over time in one plot;
#                                                LOAD_EXTRA more load flags (e.g. churn:
#                                                `--away 0.1 --away-after 20 --away-for 40`)
#   scripts/bench.sh crowd-max FANS [INSTANCES]  as many fans as the machine holds (500,000
#                                                the target): INSTANCES (ceil(FANS/18,000))
#                                                servers on one redis-server, one
#                                                `waiting-room-client swarm` per instance
#                                                (mixed transports, MIX; polling fans every
#                                                POLL_INTERVAL, 10 s as the waiting page settles
#                                                on); the 10:00 burst
#                                                (JOIN_RATE per process, 2,000) timed, then the
#                                                show opens at RATE (50) a second and for WINDOW
#                                                (300) seconds of churn the servers, swarms,
#                                                Redis and the machine are sampled every SAMPLE
#                                                (10) s; figures and plots by
#                                                scripts/crowd-max-summary.py
#
# Loopback only, every run bounded in fans and time. It ends only the processes it started,
# by PID. Results go to $OUT (default target/bench/). Needs: a release build, curl, jq, and
# redis-server for `joins redis` and `crowd` (its own, on a free port; never the one on 6379);
# `crowd` also ss (iproute2) and python3; `crowd-max` python3 (matplotlib for its plots if
# present, plain SVG otherwise).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# User + system CPU seconds the process has used so far.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }

# The server's connection cap sits just under the open-file limit (with its reserve of 64 and
# a few files of its own), so that the file limit stays the ceiling §1 measures; the default
# cap (18,000) would turn fans away first. Set MAX_CONNECTIONS to choose another.
nofile=$(ulimit -n)
[ "$nofile" = unlimited ] && nofile=1000000
MAX_CONNECTIONS=${MAX_CONNECTIONS:-$((nofile > 1000 ? nofile - 100 : nofile))}

# start_server [REDIS_URL]: sets SERVER_PID and URL. Each load process holds hundreds of
# streams per source address, so the per-client stream limit is off (MAX_STREAMS_PER_CLIENT=0 MAX_CONNECTIONS_PER_CLIENT=0),
# as the join limit is.
start_server() {
  local port; port=$(free_port)
  URL="http://127.0.0.1:$port"
  env BIND="127.0.0.1:$port" ADMIN_TOKEN=$TOKEN JOIN_RATE_LIMIT=0 MAX_STREAMS_PER_CLIENT=0 MAX_CONNECTIONS_PER_CLIENT=0 \
    MAX_CONNECTIONS="$MAX_CONNECTIONS" RUST_LOG=warn \
    ${1:+REDIS_URL=$1} ${SERVER_ENV:-} "$BIN" >"$OUT/${SERVER_LOG:-server}.log" 2>&1 &
  SERVER_PID=$!
  PIDS+=("$SERVER_PID")
  for _ in $(seq 100); do
    if curl -fs "$URL/readyz" >/dev/null 2>&1; then
      # A new admitter admits at once on taking the lease, which may be at .550 of a second;
      # every later tick is at .050, the phase `load` measures push latency from.
      sleep 1.5
      return 0
    fi
    sleep 0.1
  done
  echo "server did not start; see $OUT/${SERVER_LOG:-server}.log" >&2
  exit 1
}


# Shows exist only once an operator made them (PUT …/{showId}, PUT …/config or POST …/open):
# every case creates its show before the first join.
# operator METHOD PATH [JSON]: an overloaded server (503 with Retry-After, a store call timed
# out, no answer) is asked again, up to 10 times, so a run under overload is reported rather
# than stopped half-way; any other refusal stops the run.
operator() {
  local code=000 after
  for _ in $(seq 10); do
    code=$(curl -sS -o /dev/null -D "$OUT/operator-headers" -w '%{http_code}' -X "$1" \
      -H "Authorization: Bearer $TOKEN" ${3:+-H 'content-type: application/json' -d "$3"} "$URL$2") || code=000
    case $code in
      2??) return 0 ;;
      429 | 503 | 000)
        after=$(awk 'tolower($1) == "retry-after:" {print $2 + 0}' "$OUT/operator-headers" 2>/dev/null)
        echo "operator $1 $2: $code, asking again in ${after:-1} s" >&2
        sleep "${after:-1}" ;;
      *) echo "operator $1 $2: $code" >&2; return 1 ;;
    esac
  done
  echo "operator $1 $2: still $code after 10 tries" >&2
  return 1
}

connected_fans() {
  curl -fs "$URL/metrics" | awk '/^waiting_room_connected_fans/ {n += $2} END {print n + 0}'
}

hub_lag() { curl -fs "$URL/metrics" | grep '^waiting_room_hub_lag_milliseconds' || true; }

# Process k (1-based) gets its own 20 loopback source addresses: 127.0.k.2-127.0.k.21.
# Call it in a subshell, `(loadgen K ARGS...)`: it execs, so `$!` is the load process.
loadgen() {
  local k=$1; shift
  # /usr/bin/time records the load process's own CPU: on 2 shared cores it is part of the story.
  local timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -f '{"wall": %e, "user": %U, "system": %S}' -o "$OUT/loadgen-cpu-$k.json")
  # KEYED=1: each fan sends an Idempotency-Key of its own, as the waiting page does.
  local keyed=()
  [ "${KEYED:-0}" = 1 ] && keyed=(--idempotency-key)
  exec "${timer[@]}" "$CLIENT" load "${keyed[@]}" --url "$URL" --source-ips "127.0.$k.2-127.0.$k.21" --quiet --json 2>>"$OUT/loadgen-stderr.log" \
    --csv "$OUT/load-$k.csv" --plot "$OUT/load-$k.svg" "$@" >"$OUT/report-$k.json"
}

# redis_spent: Redis's main-thread CPU seconds, and the calls and µs of the join's FCALL and
# of the floor's INCR and ZADD so far, a "name value" line each.
redis_spent() {
  { redis-cli -u "$REDIS_URL" INFO cpu; redis-cli -u "$REDIS_URL" INFO commandstats; } | tr -d '\r' | awk -F'[:,=]' '
    /^used_cpu_(user|sys)_main_thread:/ { cpu += $2 }
    /^cmdstat_fcall:/ { fcalls = $3; fusec = $5 }
    /^cmdstat_(incr|zadd):/ { fl += $5 }
    END { printf "cpu %s\nfcall_calls %d\nfcall_usec %d\nfloor_usec %d\n", cpu, fcalls, fusec, fl }'
}

# The crowd case's window: what it reads at each end.
# sample_window N: the server's sockets with their TCP counters, Redis's counters, and the CPU
# seconds of the server, redis-server and every load process, into $OUT/$CASE-N.*.
sample_window() {
  local n=$1 port=${URL##*:}
  ss -tinH state established "( sport = :$port )" >"$OUT/$CASE-$n.sockets"
  redis-cli -u "$REDIS_URL" INFO stats >"$OUT/$CASE-$n.redis-stats"
  redis-cli -u "$REDIS_URL" INFO commandstats >"$OUT/$CASE-$n.redis-commandstats"
  {
    echo "at $(date +%s.%N)"
    echo "server $(cpu_seconds "$SERVER_PID")"
    echo "redis $(cpu_seconds "$REDIS_PID")"
    for pid in "${LOAD_PIDS[@]}"; do
      # The load process is /usr/bin/time's child when time is there.
      local child; child=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{print $1}')
      echo "load $(cpu_seconds "${child:-$pid}" 2>/dev/null || echo 0)"
    done
  } >"$OUT/$CASE-$n.cpu"
  { uptime; ps -eo pid,comm,pcpu --sort=-pcpu | head -8; } >"$OUT/$CASE-$n.machine"
}

# The scale case's window: sample_scale N reads Redis's counters and, per instance, its CPU,
# RSS, pushes and fans held, and every load process's CPU, into $OUT/$CASE-N.*.
sample_scale() {
  local n=$1 i=0
  redis-cli -u "$REDIS_URL" INFO stats >"$OUT/$CASE-$n.redis-stats"
  redis-cli -u "$REDIS_URL" INFO commandstats >"$OUT/$CASE-$n.redis-commandstats"
  {
    echo "at $(date +%s.%N)"
    echo "redis $(cpu_seconds "$REDIS_PID")"
    for pid in "${SERVER_PIDS[@]}"; do
      local m; m=$(curl -fs "${URLS[$i]}/metrics" || true)
      echo "server $(cpu_seconds "$pid") $(rss_kib "$pid") \
$(echo "$m" | awk '/^waiting_room_pushed_messages_total/ {n += $2} END {print n + 0}') \
$(echo "$m" | awk '/^waiting_room_connected_fans/ {n += $2} END {print n + 0}')"
      i=$((i + 1))
    done
    for pid in "${LOAD_PIDS[@]}"; do
      local child; child=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{print $1}')
      echo "load $(cpu_seconds "${child:-$pid}" 2>/dev/null || echo 0)"
    done
  } >"$OUT/$CASE-$n.cpu"
  { uptime; ps -eo pid,comm,pcpu --sort=-pcpu | head -14; } >"$OUT/$CASE-$n.machine"
}

# The crowd-max case's samples: sample_crowd NAME writes $OUT/$CASE-samples/NAME, a line each:
#   at SECONDS                     (the epoch, when the sample began)
#   redis CPU_S RSS_KIB COMMANDS USED_MEMORY_BYTES
#   server K CPU_S RSS_KIB PUSHED CONNECTED   (CONNECTED: fans following a stream there)
#   swarm K CPU_S RSS_KIB
#   mem MEMTOTAL MEMAVAILABLE SLAB SUNRECLAIM  (KiB, /proc/meminfo)
#   tcp INUSE ORPHAN TW ALLOC MEM_PAGES        (/proc/net/sockstat)
#   loadavg 1 5 15
#   files ALLOCATED                            (/proc/sys/fs/file-nr)
#   conntrack COUNT                            (where netfilter tracks connections)
# A process that ended reads 0. Written whole (a .tmp renamed), so a reader never sees half.
sample_crowd() {
  local f=$OUT/$CASE-samples/$1 i=0 k=1 pid m
  {
    echo "at $(date +%s.%N)"
    echo "redis $(cpu_seconds "$REDIS_PID" 2>/dev/null || echo 0) $(rss_kib "$REDIS_PID" 2>/dev/null || echo 0)" \
      "$(redis-cli -u "$REDIS_URL" INFO 2>/dev/null | tr -d '\r' | awk -F: '
        /^total_commands_processed:/ {c = $2} /^used_memory:/ {m = $2} END {print c + 0, m + 0}')"
    for pid in "${SERVER_PIDS[@]}"; do
      m=$(curl -fs -m 5 "${URLS[$i]}/metrics" 2>/dev/null || true)
      echo "server $((i + 1)) $(cpu_seconds "$pid" 2>/dev/null || echo 0) $(rss_kib "$pid" 2>/dev/null || echo 0)" \
        "$(echo "$m" | awk '/^waiting_room_pushed_messages_total/ {p += $2}
          /^waiting_room_connected_fans/ {c += $2} END {print p + 0, c + 0}')"
      i=$((i + 1))
    done
    for pid in "${LOAD_PIDS[@]}"; do
      echo "swarm $k $(cpu_seconds "$pid" 2>/dev/null || echo 0) $(rss_kib "$pid" 2>/dev/null || echo 0)"
      k=$((k + 1))
    done
    awk '/^(MemTotal|MemAvailable|Slab|SUnreclaim):/ {v[$1] = $2}
      END {print "mem", v["MemTotal:"], v["MemAvailable:"], v["Slab:"], v["SUnreclaim:"]}' /proc/meminfo
    awk '$1 == "TCP:" {print "tcp", $3, $5, $7, $9, $11}' /proc/net/sockstat
    echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "files $(cut -f1 /proc/sys/fs/file-nr)"
    if [ -r /proc/sys/net/netfilter/nf_conntrack_count ]; then
      echo "conntrack $(cat /proc/sys/net/netfilter/nf_conntrack_count)"
    fi
  } >"$f.tmp" 2>/dev/null || true
  mv "$f.tmp" "$f"
}

# The machine's limits a crowd-max run meets, printed and kept in $OUT/$CASE-limits.txt: the
# open-file limits (a process's and the kernel's), ephemeral ports, listen backlogs, TCP
# memory (pages), conntrack, memory and cores. Read only: a run changes no sysctl.
crowd_limits() {
  local key
  echo "nofile (this process) soft $(ulimit -Sn) hard $(ulimit -Hn)"
  for key in fs/file-max fs/nr_open fs/file-nr net/ipv4/ip_local_port_range net/core/somaxconn \
    net/ipv4/tcp_max_syn_backlog net/core/netdev_max_backlog net/ipv4/tcp_mem net/ipv4/tcp_rmem \
    net/ipv4/tcp_wmem net/ipv4/tcp_max_orphans net/ipv4/tcp_max_tw_buckets \
    net/netfilter/nf_conntrack_max net/netfilter/nf_conntrack_count; do
    [ -r "/proc/sys/$key" ] && echo "$(echo "$key" | tr / .) = $(tr '\t' ' ' <"/proc/sys/$key")"
  done
  grep -E '^(MemTotal|MemAvailable):' /proc/meminfo | tr -s ' '
  echo "cores $(nproc)"
}

# Tickets handed out for show $1, or 0 while the server cannot say (a 503 under load).
show_joined() {
  curl -fsS -H "Authorization: Bearer $TOKEN" "$URL/orders/waiting-room/$1/stats" 2>/dev/null | jq '.joined' 2>/dev/null || echo 0
}

case "${1:-}" in
hold)
  total=${2:?TOTAL fans}; procs=${3:?PROCS}; transport=${4:-sse}
  per=$((total / procs))
  start_server
  idle_rss=$(rss_kib "$SERVER_PID")
  # A closed show: every fan waits and holds its stream until the show opens.
  operator PUT /orders/waiting-room/hold '{"admitPerSecond":200}'
  LOAD_PIDS=()
  for k in $(seq "$procs"); do
    (loadgen "$k" --show hold --fans "$per" --transport "$transport" --join-rate 1000 --duration 180s) &
    LOAD_PIDS+=("$!")
  done
  PIDS+=("${LOAD_PIDS[@]}")
  # Wait for the plateau (or 90 s), then read memory and CPU while everyone is held.
  for _ in $(seq 90); do
    sleep 1
    [ "$(connected_fans)" -ge "$((per * procs))" ] && break
  done
  sleep 5
  held=$(connected_fans)
  held_rss=$(rss_kib "$SERVER_PID")
  held_fds=$(ls "/proc/$SERVER_PID/fd" | wc -l)
  cpu0=$(cpu_seconds "$SERVER_PID"); sleep 10; cpu1=$(cpu_seconds "$SERVER_PID")
  # Now every tick moves everyone: 200 admitted a second, all others pushed a new position.
  operator POST /orders/waiting-room/hold/open
  wait "${LOAD_PIDS[@]}" || true
  {
    echo "fans held at the plateau: $held ($transport, $procs load processes)"
    echo "server RSS idle: $idle_rss KiB; holding: $held_rss KiB; open files: $held_fds of $(ulimit -n)"
    echo "memory per connection: $(( (held_rss - idle_rss) * 1024 / (held > 0 ? held : 1) )) bytes"
    echo "server CPU while holding (keep-alives only): $(echo "$cpu0 $cpu1" | awk '{printf "%.1f%%", ($2 - $1) * 10}') of one core"
    hub_lag
  } | tee "$OUT/hold-summary.txt"
  jq -s '{processes: length, fans: map(.fans) | add, peak_held: map(.peak_connections) | add,
          admitted: map(.admitted) | add, messages: map(.messages) | add,
          stream_errors: map(.stream_errors) | add, join_failed: map(.join_failed) | add,
          push_latency_p50: map(.push_latency.p50), push_latency_p99: map(.push_latency.p99),
          push_latency_max: map(.push_latency.max)}' "$OUT"/report-*.json | tee -a "$OUT/hold-summary.txt"
  ;;
joins)
  # On Redis, also the floor in the same run: after the joins, on the same Redis, N
  # joins' worth of `INCR` + `ZADD` (a ticket-sized member each) pipelined by `redis-cli
  # --pipe`; Redis's main-thread CPU and µs inside commands (`INFO`) per join for both, the
  # join's `FCALL`s (joins a call), and the ratio (`redis_against_floor`); with KEYED=1 also
  # against `INCR` + `ZADD` + `HSET` of the key, what a keyed join writes at least.
  # JOIN_RATE: joins a second offered (default: as fast as 256 in flight go).
  store=${2:?embedded|redis}; n=${3:?N joins}
  if [ "$store" = redis ]; then start_redis; start_server "$REDIS_URL"; else start_server; fi
  operator PUT /orders/waiting-room/joins
  [ "$store" = redis ] && redis_spent >"$OUT/joins-redis-before.txt"
  (loadgen 1 --show joins --fans "$n" --join-only --join-rate "${JOIN_RATE:-1000000}" --max-in-flight 256 --duration 300s)
  cpu=$(cpu_seconds "$SERVER_PID")
  redis_cpu=$([ "$store" = redis ] && cpu_seconds "$REDIS_PID" || echo 0)
  load_cpu=$(jq '.user + .system' "$OUT/loadgen-cpu-1.json" 2>/dev/null || echo null)
  floor='null'
  if [ "$store" = redis ]; then
    redis_spent >"$OUT/joins-redis-after.txt"
    joined=$(jq .joined "$OUT/report-1.json")
    # pipe_floor PREFIX KEYED: a join's floor `joined` times under keys PREFIX:…, one pipe: INCR +
    # ZADD of a ticket-shaped member, and with KEYED=1 an HSET of a key to it.
    pipe_floor() {
      awk -v n="$joined" -v p="$1" -v keyed="$2" 'BEGIN { for (i = 1; i <= n; i++) {
          t = sprintf("%08x-%04x-4%03x-8%03x-%012x", i, i % 65536, i % 4096, i % 4096, i)
          printf "INCR %s:seq\r\nZADD %s:queue %d %s\r\n", p, p, i, t
          if (keyed == 1) printf "HSET %s:idem key-%d %s\r\n", p, i, t }
        }' | redis-cli -u "$REDIS_URL" --pipe >/dev/null
    }
    pipe_floor floor 0
    redis_spent >"$OUT/joins-redis-floor.txt"
    # KEYED=1: also what a keyed join must write at least, INCR + ZADD + HSET of its key.
    if [ "${KEYED:-0}" = 1 ]; then pipe_floor kfloor 1; fi
    redis_spent >"$OUT/joins-redis-floor-keyed.txt"
    floor=$(python3 - "$OUT" "$joined" "${KEYED:-0}" <<'PY'
import json, sys
out, n, keyed = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def read(name):
    return dict(l.split() for l in open(f"{out}/joins-redis-{name}.txt"))
b, a, f, k = read("before"), read("after"), read("floor"), read("floor-keyed")
d = lambda x, y, key: float(y[key]) - float(x[key])
join = {"redis_cpu_us": d(b, a, "cpu") * 1e6 / n, "in_commands_us": d(b, a, "fcall_usec") / n,
        "joins_a_call": n / max(d(b, a, "fcall_calls"), 1)}
floor = {"redis_cpu_us": d(a, f, "cpu") * 1e6 / n, "in_commands_us": d(a, f, "floor_usec") / n}
r = {"join": join, "floor": floor,
     "floors_by_cpu": join["redis_cpu_us"] / floor["redis_cpu_us"],
     "floors_by_commands": join["in_commands_us"] / floor["in_commands_us"]}
if keyed:
    r["keyed_floor"] = {"redis_cpu_us": d(f, k, "cpu") * 1e6 / n}
    r["keyed_floors_by_cpu"] = join["redis_cpu_us"] / r["keyed_floor"]["redis_cpu_us"]
print(json.dumps(r))
PY
)
  fi
  jq --arg store "$store" --arg cpu "$cpu" --arg redis "$redis_cpu" --argjson load "$load_cpu" \
    --argjson floor "$floor" \
    '{store: $store, joined, joins_per_second, elapsed_seconds, join_latency, join_failed,
      cpu_seconds: {server: ($cpu | tonumber), redis: ($redis | tonumber), load_generator: $load},
      server_cpu_us_a_join: (($cpu | tonumber) * 1e6 / .joined)}
     + (if $floor then {redis_against_floor: $floor} else {} end)' \
    "$OUT/report-1.json" | tee "$OUT/joins-$store.json"
  ;;
burst)
  # The 10:00 burst: N joins as fast as one server takes them into SHOWS (default 1) shows
  # (one load process per million fans, each from addresses of its own, 256 joins in flight
  # in all), then what Redis holds: for every show each acknowledged join in its queue once,
  # arrival numbers 1..joined with no gap or twin; Redis's memory per waiting fan; the CPU a
  # join cost the server and each Redis node.
  # CLUSTER=1: on a 3-node Redis Cluster of its own instead of one redis-server, show i on
  # node i mod 3 (more than one show: names chosen by the slot of their hash tag).
  # SCHEDULED=1 (the default with CLUSTER=1): every show scheduled to open in two hours, so
  # every join lands in its pre-queue, the queue a draw will order; otherwise closed shows.
  n=${2:?N joins}; shows=${3:-1}
  cluster=${CLUSTER:-0}; scheduled=${SCHEDULED:-$cluster}
  if [ "$cluster" = 1 ]; then
    start_cluster
    NODE_PORTS=("${CLUSTER_PORTS[@]}")
    SERVER_ENV="REDIS_CLUSTER=true ${SERVER_ENV:-}" start_server "$CLUSTER_URL"
    CASE=burst-cluster-$n-${shows}show$([ "$shows" = 1 ] || echo s)
    [ "$scheduled" = 1 ] || CASE+=-closed
  else
    start_redis
    NODE_PORTS=("${REDIS_URL##*:}")
    start_server "$REDIS_URL"
    CASE=burst-$n
    if [ "$shows" != 1 ]; then CASE+=-${shows}shows; fi
    if [ "$scheduled" = 1 ]; then CASE+=-scheduled; fi
  fi
  # The shows, and the port of the node holding each one's slot.
  SHOW_NAMES=(); SHOW_PORTS=(); j=0
  for i in $(seq "$shows"); do
    if [ "$shows" = 1 ]; then
      show=burst
    elif [ "$cluster" = 1 ]; then
      want=${NODE_PORTS[$(((i - 1) % ${#NODE_PORTS[@]}))]}
      for _ in $(seq 1000); do
        j=$((j + 1)); show=burst-$j
        [ "$(cluster_port_of "$show")" = "$want" ] && break
      done
    else
      show=burst-$i
    fi
    SHOW_NAMES+=("$show")
    if [ "$cluster" = 1 ]; then SHOW_PORTS+=("$(cluster_port_of "$show")"); else SHOW_PORTS+=("${NODE_PORTS[0]}"); fi
  done
  opens_at=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
  for show in "${SHOW_NAMES[@]}"; do
    if [ "$scheduled" = 1 ]; then
      operator PUT "/orders/waiting-room/$show" "{\"opensAt\":\"$opens_at\"}"
    else
      operator PUT "/orders/waiting-room/$show"
    fi
  done
  # The load processes: "K SHOW FANS", each show's fans split over a process per million.
  plan=(); k=0
  for s in $(seq 0 $((shows - 1))); do
    fans=$((n / shows + (s < n % shows ? 1 : 0)))
    p=$(((fans + 999999) / 1000000))
    for q in $(seq 0 $((p - 1))); do
      k=$((k + 1)); plan+=("$k ${SHOW_NAMES[$s]} $((fans / p + (q < fans % p ? 1 : 0)))")
    done
  done
  procs=$k
  if [ "$cluster" = 1 ]; then redis-cli -p "${NODE_PORTS[0]}" cluster nodes >"$OUT/$CASE.cluster-nodes"; fi
  # node_sample: per node "port cpu-seconds used-memory script-calls", from its INFO.
  node_sample() {
    for port in "${NODE_PORTS[@]}"; do
      redis-cli -p "$port" info everything | tr -d '\r' | awk -F'[:,=]' -v port="$port" '
        /^used_cpu_(user|sys):/ {cpu += $2}
        /^used_memory:/ {mem = $2}
        /^cmdstat_(evalsha|eval|fcall|fcall_ro):/ {calls += $3}
        END {printf "%s %.6f %d %d\n", port, cpu, mem, calls}'
    done
  }
  node_sample >"$OUT/$CASE.nodes-before"
  server_before=$(cpu_seconds "$SERVER_PID")
  LOAD_PIDS=()
  for row in "${plan[@]}"; do
    read -r k show fans <<<"$row"
    (loadgen "$k" --show "$show" --fans "$fans" --join-only --join-rate 1000000 \
      --max-in-flight $((256 / procs)) --duration "${DURATION:-900}s") &
    LOAD_PIDS+=("$!")
  done
  PIDS+=("${LOAD_PIDS[@]}")
  wait "${LOAD_PIDS[@]}"
  server_after=$(cpu_seconds "$SERVER_PID")
  node_sample >"$OUT/$CASE.nodes-after"
  # Each show's queue on the node holding it: length, arrival counter, first and last arrival,
  # and when it opens (a scheduled show's meta has it: its joins are in its pre-queue).
  for s in $(seq 0 $((shows - 1))); do
    show=${SHOW_NAMES[$s]}; port=${SHOW_PORTS[$s]}
    slot=null
    if [ "$cluster" = 1 ]; then slot=$(redis-cli -p "$port" cluster keyslot "wr:{$show}:queue"); fi
    queued=$(redis-cli -p "$port" zcard "wr:{$show}:queue")
    counter=$(redis-cli -p "$port" get "wr:{$show}:seq")
    first=$(redis-cli -p "$port" zrange "wr:{$show}:queue" 0 0 withscores | sed -n 2p)
    last=$(redis-cli -p "$port" zrange "wr:{$show}:queue" -1 -1 withscores | sed -n 2p)
    opens=$(redis-cli -p "$port" hget "wr:{$show}:meta" opens_at)
    echo "$show $port $slot ${queued:-0} ${counter:-0} ${first:-0} ${last:-0} ${opens:-null}"
  done >"$OUT/$CASE.queues"
  for k in $(seq "$procs"); do
    cp "$OUT/report-$k.json" "$OUT/$CASE-report-$k.json"
    cp "$OUT/loadgen-cpu-$k.json" "$OUT/$CASE-loadgen-cpu-$k.json" 2>/dev/null || true
  done
  python3 - "$OUT" "$CASE" "$cluster" "$scheduled" "$server_before" "$server_after" \
    "$(cpu_seconds "$SERVER_PID")" "${plan[@]}" <<'PY' | tee "$OUT/$CASE.json"
import json, os, sys
out, case, cluster, scheduled, srv0, srv1, srv_total, *plan = sys.argv[1:]
plan = [row.split() for row in plan]
reports = [json.load(open(f"{out}/{case}-report-{k}.json")) for k, _, _ in plan]
def load_cpu(k):
    try:
        c = json.load(open(f"{out}/{case}-loadgen-cpu-{k}.json"))
        return c["user"] + c["system"]
    except (OSError, ValueError, KeyError):
        return None
def nodes(when):
    rows = [l.split() for l in open(f"{out}/{case}.nodes-{when}")]
    return {r[0]: (float(r[1]), int(r[2]), int(r[3])) for r in rows}
before, after = nodes("before"), nodes("after")
acked = {}
for (k, show, _), r in zip(plan, reports):
    acked[show] = acked.get(show, 0) + r["joined"]
joined = sum(acked.values())
per = lambda x, d: x / max(d, 1)
shows = []
for line in open(f"{out}/{case}.queues"):
    show, port, slot, length, counter, first, last, opens = line.split()
    length, counter, first, last = (int(float(v or 0)) for v in (length, counter, first, last))
    a = acked.get(show, 0)
    shows.append({"show": show, "node": int(port), "slot": None if slot == "null" else int(slot),
        "opens_at_ms": None if opens == "null" else int(opens), "joined": a, "length": length, "counter": counter, "first_arrival": first,
        "last_arrival": last,
        # `a` distinct whole scores from 1 to `a` (INCRBY hands each out once) are 1..a, dense.
        "every_join_once_and_dense": length == a == counter and last == a and (a == 0 or first == 1)})
node_rows = []
for port, (cpu1, mem1, calls1) in after.items():
    cpu0, mem0, calls0 = before[port]
    held = sum(s["joined"] for s in shows if s["node"] == int(port))
    node_rows.append({"node": int(port), "shows": [s["show"] for s in shows if s["node"] == int(port)],
        "joins": held, "cpu_seconds": round(cpu1 - cpu0, 3), "memory_bytes": mem1 - mem0,
        "script_calls": calls1 - calls0,
        "cpu_us_per_join_it_held": round(per((cpu1 - cpu0) * 1e6, held), 3) if held else None,
        "joins_per_script_call": round(per(held, calls1 - calls0), 1) if held else None})
busiest = max(node_rows, key=lambda r: r["cpu_seconds"])
redis_cpu = sum(r["cpu_seconds"] for r in node_rows)
server_cpu = float(srv1) - float(srv0)
loads = [load_cpu(k) for k, _, _ in plan]
print(json.dumps({
    "store": "redis cluster, 3 nodes" if cluster == "1" else "redis",
    "scheduled": scheduled == "1", "shows": len(shows), "joined": joined,
    "load_processes": len(reports),
    "joins_per_second": sum(r["joins_per_second"] for r in reports),
    "joined_per_longest_elapsed_second": joined / max(r["elapsed_seconds"] for r in reports),
    "join_latency_per_process": [r["join_latency"] for r in reports],
    "join_failed": sum(r["join_failed"] for r in reports),
    "join_shed": sum(r["join_shed"] for r in reports),
    "queue": {"every_join_once_and_dense": all(s["every_join_once_and_dense"] for s in shows),
              "shows": shows},
    "redis_memory_bytes_per_fan": int(per(sum(r["memory_bytes"] for r in node_rows), joined)),
    "nodes": node_rows,
    "cpu_seconds": {"server": round(server_cpu, 2), "server_since_start": float(srv_total),
        "redis": round(redis_cpu, 3), "redis_busiest_node": busiest["cpu_seconds"],
        "load_generators": None if None in loads else round(sum(loads), 2)},
    "cpu_us_per_join": {"server": per(server_cpu * 1e6, joined),
        "redis": per(redis_cpu * 1e6, joined),
        "redis_busiest_node": busiest["cpu_us_per_join_it_held"]},
}, indent=2))
PY
  ;;
joins-wait)
  # What REDIS_WAIT_REPLICAS=1 costs: joins on one primary with one replica, without and
  # with every write confirmed by the replica, one after the other in one run.
  n=${2:?N joins}
  start_redis
  replica_port=$(free_port)
  redis-server --port "$replica_port" --bind 127.0.0.1 --save "" --appendonly no \
    --replicaof 127.0.0.1 "${REDIS_URL##*:}" >"$OUT/replica.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 100); do
    redis-cli -p "${REDIS_URL##*:}" info replication | grep -q "state=online" && break
    sleep 0.1
  done
  for wait in 0 1; do
    SERVER_ENV="REDIS_WAIT_REPLICAS=$wait" SERVER_LOG="server-wait-$wait" start_server "$REDIS_URL"
    operator PUT "/orders/waiting-room/joins-wait-$wait"
    redis_before=$(cpu_seconds "$REDIS_PID")
    (loadgen "$((10 + wait))" --show "joins-wait-$wait" --fans "$n" --join-only --join-rate 1000000 \
      --max-in-flight 256 --duration 120s)
    cpu=$(cpu_seconds "$SERVER_PID")
    redis_cpu=$(awk -v a="$redis_before" -v b="$(cpu_seconds "$REDIS_PID")" 'BEGIN {print b - a}')
    jq --arg wait "$wait" --arg cpu "$cpu" --arg redis "$redis_cpu" \
      '{wait_replicas: ($wait | tonumber), joined, joins_per_second, join_latency, join_failed,
        cpu_seconds: {server: ($cpu | tonumber), redis_primary: ($redis | tonumber)}}' \
      "$OUT/report-$((10 + wait)).json" | tee "$OUT/joins-wait-$wait.json"
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
  done
  ;;
latency)
  fans=${2:?FANS}; rate=${3:?RATE}; transport=${4:-sse}
  start_server
  operator PUT /orders/waiting-room/lat "{\"admitPerSecond\":$rate}"
  operator POST /orders/waiting-room/lat/open
  (loadgen 1 --show lat --fans "$fans" --transport "$transport" --join-rate 1000 --duration 120s)
  hub_lag | tee "$OUT/latency-hub-lag.txt"
  jq '{fans, transport, admitted, messages, push_latency, first_event, join_latency, stream_errors}' \
    "$OUT/report-1.json" | tee "$OUT/latency-summary.json"
  ;;
crowd)
  transport=${2:?sse|ws|poll}; fans=${3:?FANS}; procs=${4:?PROCS}
  window=${WINDOW:-60}; rate=${RATE:-5}; join_rate=${JOIN_RATE:-1000}
  per=$((fans / procs)); CASE=crowd-$transport-$fans
  start_redis
  start_server "$REDIS_URL"
  # Closed: everyone joins and waits; then it opens, and every tick moves every position.
  operator PUT /orders/waiting-room/crowd "{\"admitPerSecond\":$rate}"
  # Long enough to join (JOIN_RATE a second per process), settle, and outlast the window.
  duration=$((per / join_rate + 40 + window))
  LOAD_PIDS=()
  for k in $(seq "$procs"); do
    (loadgen "$k" --show crowd --fans "$per" --transport "$transport" --join-rate "$join_rate" \
      --duration "${duration}s") &
    LOAD_PIDS+=("$!")
  done
  PIDS+=("${LOAD_PIDS[@]}")
  for _ in $(seq 60); do
    sleep 1
    [ "$(show_joined crowd)" -ge "$((per * procs))" ] && break
  done
  joined=$(show_joined crowd)
  [ "$joined" -ge "$((per * procs))" ] || { echo "only $joined of $((per * procs)) joined in 60 s" >&2; exit 1; }
  sleep 3
  operator POST /orders/waiting-room/crowd/open
  sleep 5
  sample_window 0
  sleep "$window"
  sample_window 1
  for pid in "${LOAD_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || echo "warning: a load process ended inside the window" >&2
  done
  wait "${LOAD_PIDS[@]}" || true
  for k in $(seq "$procs"); do
    mv "$OUT/report-$k.json" "$OUT/$CASE-report-$k.json"
    mv "$OUT/load-$k.svg" "$OUT/$CASE-load-$k.svg"
  done
  python3 - "$OUT" "$CASE" "$transport" "$fans" "$procs" "$window" "$rate" <<'PY' | tee "$OUT/$CASE.json"
import glob, json, re, sys
sys.path.insert(0, "scripts")
import redis_info
from redis_info import calls_per_second
out, case, transport, fans, procs, window, rate = sys.argv[1:]
window, fans = float(window), int(fans)

def sockets(n):
    """peer -> (bytes_sent, bytes_received, segs_out, segs_in), from the server's side."""
    found, peer = {}, None
    for line in open(f"{out}/{case}-{n}.sockets"):
        if not line.startswith((" ", "\t")):
            peer = line.split()[-1]
            continue
        f = dict(re.findall(r"(bytes_sent|bytes_received|segs_out|segs_in):(\d+)", line))
        found[peer] = tuple(int(f.get(k, 0)) for k in ("bytes_sent", "bytes_received", "segs_out", "segs_in"))
    return found

def info(n, what):
    return redis_info.info(f"{out}/{case}-{n}.redis-{what}")

def cpu(n):
    rows = [l.split() for l in open(f"{out}/{case}-{n}.cpu")]
    at = float(rows[0][1])
    server = float(rows[1][1]); redis = float(rows[2][1])
    load = sum(float(r[1]) for r in rows[3:])
    return at, server, redis, load

s0, s1 = sockets(0), sockets(1)
delta = [0, 0, 0, 0]
for peer, now in s1.items():
    before = s0.get(peer, (0, 0, 0, 0))
    for i in range(4):
        delta[i] += now[i] - before[i]
held = (len(s0) + len(s1)) / 2
(t0, srv0, red0, load0), (t1, srv1, red1, load1) = cpu(0), cpu(1)
seconds = t1 - t0
payload = delta[0] + delta[1]
# Loopback carries no Ethernet frame: each segment is a 20-byte IPv4 and a 32-byte TCP
# header (with the timestamp option) around its payload.
wire = payload + 52 * (delta[2] + delta[3])
fan_minutes = held * seconds / 60
cmds = int(info(1, "stats")["total_commands_processed"]) - int(info(0, "stats")["total_commands_processed"])
c0, c1 = info(0, "commandstats"), info(1, "commandstats")
per_command = calls_per_second(c0, c1, seconds)
reports = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/{case}-report-*.json"))]
print(json.dumps({
    "transport": transport, "fans": fans, "processes": int(procs), "admit_per_second": int(rate),
    "window_seconds": round(seconds, 1),
    "server_sockets_held": held,
    "redis_commands_per_second": round(cmds / seconds, 1),
    "redis_commands_per_second_by_command": per_command,
    "server_cpu_percent_of_one_core": round(100 * (srv1 - srv0) / seconds, 1),
    "redis_cpu_percent_of_one_core": round(100 * (red1 - red0) / seconds, 1),
    "load_generators_cpu_percent_of_one_core": round(100 * (load1 - load0) / seconds, 1),
    "payload_bytes_per_fan_minute": round(payload / fan_minutes),
    "wire_bytes_per_fan_minute": round(wire / fan_minutes),
    "segments_per_fan_minute": round((delta[2] + delta[3]) / fan_minutes, 1),
    "staleness_ms": [{k: r["staleness"][k] for k in ("count", "p50", "p90", "p99", "max")} for r in reports],
    "messages": sum(r["messages"] for r in reports),
    "admitted": sum(r["admitted"] for r in reports),
    "stream_errors": sum(r["stream_errors"] for r in reports),
    "lost": sum(r["lost"] for r in reports),
}, indent=2))
PY
  ;;
crowd-plot)
  "$CLIENT" staleness-plot --out "$OUT/crowd-staleness.svg" "$OUT"/crowd-*-report-*.json
  ;;
scale)
  fans=${2:?FANS}; n=${3:?INSTANCES}
  window=${WINDOW:-120}; rate=${RATE:-20}; join_rate=${JOIN_RATE:-600}
  per=$((fans / n)); CASE=scale-$n-$fans
  start_redis
  URLS=(); SERVER_PIDS=()
  for i in $(seq "$n"); do
    SERVER_LOG=$CASE-server-$i start_server "$REDIS_URL"
    URLS+=("$URL"); SERVER_PIDS+=("$SERVER_PID")
  done
  # Closed: everyone joins (each load process at its own instance) and waits; then it opens.
  operator PUT /orders/waiting-room/scale "{\"admitPerSecond\":$rate}"
  duration=$((per / join_rate + 60 + window))
  LOAD_PIDS=()
  for k in $(seq "$n"); do
    # shellcheck disable=SC2086 # LOAD_EXTRA is words
    (URL=${URLS[$((k - 1))]}; loadgen "$k" --show scale --fans "$per" --transport sse \
      --join-rate "$join_rate" --duration "${duration}s" ${LOAD_EXTRA:-}) &
    LOAD_PIDS+=("$!")
  done
  PIDS+=("${LOAD_PIDS[@]}")
  for _ in $(seq 150); do
    sleep 1
    [ "$(show_joined scale)" -ge "$((per * n))" ] && break
  done
  joined=$(show_joined scale)
  [ "$joined" -ge "$((per * n))" ] || echo "warning: only $joined of $((per * n)) joined in 150 s" >&2
  sleep 5
  operator POST /orders/waiting-room/scale/open
  sleep 5
  sample_scale 0
  sleep "$window"
  sample_scale 1
  # The server's own report of the sale (docs/report.md), then the simulation of its curve
  # (the report's CSV) for as long, and the two side by side.
  for format in json csv; do
    curl -sS -H "Authorization: Bearer $TOKEN" \
      "$URL/orders/waiting-room/scale/report?format=$format" > "$OUT/$CASE-server-report.$format"
  done
  # The load's fans neither buy nor leave.
  "$CLIENT" simulate --curve "$OUT/$CASE-server-report.csv" --rate "$rate" --buy 0 \
    --until "$(($(jq .figures.seconds "$OUT/$CASE-server-report.json") + 1))s" \
    --out "$OUT/$CASE-simulated" | tee "$OUT/$CASE-simulated.txt"
  python3 scripts/report-compare.py "$OUT/$CASE-simulated/report.json" \
    "$OUT/$CASE-server-report.json" | tee "$OUT/$CASE-compared.txt"
  for pid in "${LOAD_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null || echo "warning: a load process ended inside the window" >&2
  done
  wait "${LOAD_PIDS[@]}" || true
  for k in $(seq "$n"); do
    mv "$OUT/report-$k.json" "$OUT/$CASE-report-$k.json"
    mv "$OUT/load-$k.svg" "$OUT/$CASE-load-$k.svg"
  done
  "$CLIENT" knowledge-plot --out "$OUT/$CASE-knowledge.svg" "$OUT/$CASE"-report-*.json
  python3 scripts/scale-summary.py "$OUT" "$CASE" "$fans" "$n" "$rate" | tee "$OUT/$CASE.json"
  ;;
crowd-max)
  # As many fans as the machine holds (500,000 the target): INSTANCES servers on one
  # redis-server, each under the open-file limit (MAX_CONNECTIONS, 19,900 here), and one
  # `waiting-room-client swarm` per instance, its fans following as MIX says from 29 loopback
  # source addresses of its own (127.0.k.2-30). The 10:00 burst: every swarm joins its fans
  # into a closed show at JOIN_RATE a second, the joins counted every second until all are in
  # (at most JOIN_WAIT s, or none for JOIN_STALL s); then it opens at RATE a second, the swarms churn
  # (leaves, returns, reconnects), and 5 s later a WINDOW is measured. Everything is sampled
  # every SAMPLE s from before the burst to the window's end (sample_crowd). Every swarm
  # stops by itself: its --duration covers the longest wait for the joins, the opening, the
  # window and a margin.
  fans=${2:?FANS}
  n=${3:-$(((fans + 17999) / 18000))}
  window=${WINDOW:-300}; rate=${RATE:-50}; join_rate=${JOIN_RATE:-2000}; sample=${SAMPLE:-10}
  mix=${MIX:-sse=0.6,ws=0.3,poll=0.1}; poll_interval=${POLL_INTERVAL:-10s}
  join_wait=${JOIN_WAIT:-$((60 + fans / 500))}
  churn=(--leave-per-minute "${LEAVE_PER_MINUTE:-0.01}" --return-per-minute "${RETURN_PER_MINUTE:-0.005}"
    --reconnect-per-minute "${RECONNECT_PER_MINUTE:-0.01}")
  CASE=crowd-max-$n-$fans
  per=$(((fans + n - 1) / n))
  if ((n < 1 || n > 250)); then echo "INSTANCES from 1 to 250 (127.0.k.x for k = 1..n)" >&2; exit 2; fi
  if ((per > 19000 || per >= MAX_CONNECTIONS)); then
    echo "$per fans an instance: at most 19,000 and under MAX_CONNECTIONS ($MAX_CONNECTIONS); take more INSTANCES" >&2
    exit 2
  fi
  mkdir -p "$OUT/$CASE-samples"
  rm -f "$OUT/$CASE-samples"/* "$OUT/$CASE"-report-*.json "$OUT/$CASE"-swarm-*.csv
  echo "crowd-max: $fans fans on $n instances ($per at most each, MAX_CONNECTIONS $MAX_CONNECTIONS)," \
    "joins $join_rate/s a process, $rate admitted/s, window ${window}s, mix $mix"
  crowd_limits | tee "$OUT/$CASE-limits.txt"
  # What the run will hold against what the kernel allows: a file on each side of every
  # connection, and every connection from 127.0.k.x to one server port within the ephemeral
  # range of each of its 29 addresses.
  file_max=$(cat /proc/sys/fs/file-max)
  if ((2 * fans + 1000 * n > file_max)); then
    echo "warning: $((2 * fans)) sockets and more against fs.file-max $file_max" >&2
  fi
  if [ -r /proc/sys/net/netfilter/nf_conntrack_max ] \
    && (($(cat /proc/sys/net/netfilter/nf_conntrack_count) > 0 && fans > $(cat /proc/sys/net/netfilter/nf_conntrack_max))); then
    echo "warning: netfilter tracks connections here (nf_conntrack_max $(cat /proc/sys/net/netfilter/nf_conntrack_max)): past it, new connections are dropped" >&2
  fi
  start_redis
  URLS=(); SERVER_PIDS=(); LOAD_PIDS=()
  for i in $(seq "$n"); do
    SERVER_LOG=$CASE-server-$i start_server "$REDIS_URL"
    URLS+=("$URL"); SERVER_PIDS+=("$SERVER_PID")
  done
  URL=${URLS[0]}
  # Closed: everyone joins and waits; then it opens.
  operator PUT /orders/waiting-room/crowd-max "{\"admitPerSecond\":$rate}"
  sample_crowd base
  duration=$((join_wait + 15 + window + 45))
  burst_at=$(date +%s.%N)
  for k in $(seq "$n"); do
    # shellcheck disable=SC2086 # SWARM_EXTRA is words
    (exec "$CLIENT" swarm --url "${URLS[$((k - 1))]}" --show crowd-max \
      --fans $((fans / n + (k <= fans % n ? 1 : 0))) --join-rate "$join_rate" --mix "$mix" \
      --poll-interval "$poll_interval" --source-ips "127.0.$k.2-127.0.$k.30" "${churn[@]}" \
      --duration "${duration}s" --seed "$k" --json --no-progress --csv "$OUT/$CASE-swarm-$k.csv" \
      ${SWARM_EXTRA:-} >"$OUT/$CASE-report-$k.json" 2>"$OUT/$CASE-swarm-$k.log") &
    LOAD_PIDS+=("$!")
  done
  PIDS+=("${LOAD_PIDS[@]}")
  # The sampler, every SAMPLE s until the window's end (ended by PID then, or with the run).
  (
    trap - EXIT
    i=0
    while :; do
      sample_crowd "$(printf 't%05d' "$i")"
      i=$((i + 1))
      sleep "$sample"
    done
  ) &
  SAMPLER_PID=$!
  PIDS+=("$SAMPLER_PID")
  # The burst: tickets handed out, every second, until all are in, JOIN_WAIT has passed, or
  # none came for JOIN_STALL (30) s (joins that failed every attempt never come).
  : >"$OUT/$CASE-joined.tsv"
  joined=0; all_in_at=null; deadline=$((SECONDS + join_wait)); grew=$SECONDS
  while ((SECONDS < deadline)); do
    sleep 1
    j=$(show_joined crowd-max)
    [[ $j =~ ^[0-9]+$ ]] || j=0
    echo "$(date +%s.%N) $j" >>"$OUT/$CASE-joined.tsv"
    if ((j > joined)); then joined=$j; grew=$SECONDS; fi
    if ((joined >= fans)); then all_in_at=$(date +%s.%N); break; fi
    if ((joined > 0 && SECONDS - grew >= ${JOIN_STALL:-30})); then
      echo "warning: no join for ${JOIN_STALL:-30} s (JOIN_STALL)" >&2
      break
    fi
    alive=0
    for pid in "${LOAD_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || { echo "warning: every swarm process ended during the burst" >&2; break; }
  done
  if [ "$all_in_at" = null ]; then
    echo "warning: only $joined of $fans joined (JOIN_WAIT $join_wait s); opening anyway" >&2
  else
    echo "all $fans joined in $(echo "$burst_at $all_in_at" | awk '{printf "%.1f", $2 - $1}') s"
  fi
  # The last streams opening after their joins.
  sleep 5
  operator POST /orders/waiting-room/crowd-max/open
  opened_at=$(date +%s.%N)
  sleep 5
  sample_crowd start
  redis-cli -u "$REDIS_URL" INFO stats >"$OUT/$CASE-0.redis-stats"
  redis-cli -u "$REDIS_URL" INFO commandstats >"$OUT/$CASE-0.redis-commandstats"
  sleep "$window"
  sample_crowd end
  redis-cli -u "$REDIS_URL" INFO stats >"$OUT/$CASE-1.redis-stats"
  redis-cli -u "$REDIS_URL" INFO commandstats >"$OUT/$CASE-1.redis-commandstats"
  kill "$SAMPLER_PID" 2>/dev/null || true
  # The window is over: each swarm is told to stop now (SIGINT: it closes its fans and writes
  # its report); else it would stop at its --duration.
  for pid in "${LOAD_PIDS[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -INT "$pid"
    else
      echo "warning: a swarm process ended before the window's end" >&2
    fi
  done
  wait "${LOAD_PIDS[@]}" || true
  jq -n --argjson fans "$fans" --argjson instances "$n" --argjson rate "$rate" \
    --argjson window "$window" --argjson join_rate "$join_rate" --argjson sample "$sample" \
    --arg mix "$mix" --arg churn "${churn[*]}" --argjson join_wait "$join_wait" \
    --argjson duration "$duration" --argjson max_connections "$MAX_CONNECTIONS" \
    --argjson burst_at "$burst_at" --argjson all_in_at "$all_in_at" --argjson joined "$joined" \
    --argjson opened_at "$opened_at" --argjson project "${PROJECT_FANS:-500000}" \
    '{fans: $fans, instances: $instances, admit_per_second: $rate, window_seconds: $window,
      join_rate_per_process: $join_rate, sample_seconds: $sample, mix: $mix, churn: $churn,
      join_wait: $join_wait, swarm_duration: $duration, max_connections: $max_connections,
      burst_at: $burst_at, all_in_at: $all_in_at, joined_at_opening: $joined,
      opened_at: $opened_at, project_fans: $project}' >"$OUT/$CASE-meta.json"
  python3 scripts/crowd-max-summary.py "$OUT" "$CASE"
  ;;
*)
  awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"
  exit 2
  ;;
esac
