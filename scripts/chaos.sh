#!/usr/bin/env bash
# A chaos run anyone can repeat (BENCHMARKS.md, "Chaos"): a Redis primary
# with two replicas behind three Sentinels, three server instances on it with
# REDIS_WAIT_REPLICAS=1 (WAIT_REPLICAS=0: none), and the load generator joining, following (SSE) and buying, while for
# CHAOS_SECONDS random faults hit: SIGKILL of the Redis primary (it comes back as a replica of
# the new one), SIGKILL of the admitter's leader and of another instance (each restarted on
# its port), and the primary paused (SIGSTOP, then SIGCONT). At the end every acknowledged join
# is accounted for (admitted, bought, still waiting, or told its ticket is unknown), every
# arrival number the store handed out was admitted by a tick or is still queued, the public
# audit verifies, and the figures are printed (and written to $OUT/chaos.json).
#
#   scripts/chaos.sh [CHAOS_SECONDS] [MAX_FAULTS] [SEED]
#
# Bounded: CHAOS_SECONDS (default 150) of faults, at most MAX_FAULTS (default 20), then 30 s
# of calm; the load stops by itself. Loopback only, every port free-picked (never 6379);
# ends only what it started, by PID. SEED makes the choice of faults repeatable. Needs the
# binaries (PROFILE=release by default: `cargo build --release --workspace`; PROFILE=debug
# takes the debug ones), redis-server, redis-cli, curl, jq, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE=${PROFILE:-release}
# REDIS_WAIT_REPLICAS of the instances: 1 keeps every acknowledged write through a failover;
# 0 lets a failover lose the last writes, which the instances then notice, mend and tell.
WAIT_REPLICAS=${WAIT_REPLICAS:-1}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/$PROFILE/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/$PROFILE/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/chaos}
CHAOS_SECONDS=${1:-150}
MAX_FAULTS=${2:-20}
SEED=${3:-${SEED:-18}}
CALM=30
FANS=${FANS:-3000}
JOIN_RATE=${JOIN_RATE:-20}
RATE=${RATE:-15}
SHOW=chaos
TOKEN=chaos-operator-token
RANDOM=$SEED

mkdir -p "$OUT"
for bin in "$BIN" "$CLIENT"; do
  [ -x "$bin" ] || { echo "no binary at $bin: cargo build --workspace (--release) first" >&2; exit 1; }
done
WORK=$(mktemp -d)
declare -A PID_OF=()
cleanup() {
  for pid in "${PID_OF[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
log() { printf '%6.1f s  %s\n' "$(awk -v t0="$T0" -v t="$(date +%s.%N)" 'BEGIN{print t - t0}')" "$*" | tee -a "$OUT/chaos.log"; }

# --- Redis: a primary and two replicas, each node in a directory of its own. --------------
NODE_PORTS=()
start_node() { # start_node PORT [replicaof-port]
  local port=$1 dir="$WORK/redis-$1"
  mkdir -p "$dir"
  local extra=()
  [ -n "${2:-}" ] && extra=(--replicaof 127.0.0.1 "$2")
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
    "${extra[@]}" >>"$WORK/redis-$port.log" 2>&1 &
  PID_OF[redis-$port]=$!
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "redis-server on $port did not start" >&2
  exit 1
}
for i in 0 1 2; do NODE_PORTS+=("$(free_port)"); done
start_node "${NODE_PORTS[0]}"
start_node "${NODE_PORTS[1]}" "${NODE_PORTS[0]}"
start_node "${NODE_PORTS[2]}" "${NODE_PORTS[0]}"

# --- Three Sentinels, quick to fail over (down after 1 s). --------------------------------
SENTINELS=()
for i in 0 1 2; do
  port=$(free_port)
  mkdir -p "$WORK/sentinel-$port"
  cat >"$WORK/sentinel-$port/sentinel.conf" <<CONF
port $port
bind 127.0.0.1
dir $WORK/sentinel-$port
sentinel monitor wr 127.0.0.1 ${NODE_PORTS[0]} 2
sentinel down-after-milliseconds wr 1000
sentinel failover-timeout wr 4000
sentinel parallel-syncs wr 2
CONF
  redis-server "$WORK/sentinel-$port/sentinel.conf" --sentinel >>"$WORK/sentinel-$port.log" 2>&1 &
  PID_OF[sentinel-$port]=$!
  SENTINELS+=("127.0.0.1:$port")
done
SENTINEL_LIST=$(IFS=,; echo "${SENTINELS[*]}")
primary_port() {
  local s
  for s in "${SENTINELS[@]}"; do
    redis-cli -p "${s#*:}" sentinel get-master-addr-by-name wr 2>/dev/null | sed -n 2p && return 0
  done
}
for _ in $(seq 200); do
  ok=1
  for s in "${SENTINELS[@]}"; do
    n=$(redis-cli -p "${s#*:}" sentinel master wr 2>/dev/null | awk 'p{print; exit} /^num-other-sentinels$/{p=1}')
    [ "${n:-0}" -ge 2 ] || ok=0
  done
  [ $ok = 1 ] && break
  sleep 0.1
done

# --- Three instances on the Sentinels, every write confirmed by a replica (WAIT_REPLICAS). --
SERVER_PORTS=()
start_server() { # start_server PORT
  local port=$1
  env REDIS_SENTINELS="$SENTINEL_LIST" REDIS_SENTINEL_MASTER=wr REDIS_WAIT_REPLICAS="$WAIT_REPLICAS" \
    REDIS_WAIT_TIMEOUT=300ms BIND="127.0.0.1:$port" ADMIN_TOKEN=$TOKEN ADMIT_PER_SECOND=$RATE \
    JOIN_RATE_LIMIT=0 MAX_STREAMS_PER_CLIENT=0 MAX_CONNECTIONS_PER_CLIENT=0 RUST_LOG=warn \
    "$BIN" >>"$OUT/server-$port.log" 2>&1 &
  PID_OF[server-$port]=$!
  for _ in $(seq 200); do curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "server on $port did not become ready" >&2
}
for i in 0 1 2; do SERVER_PORTS+=("$(free_port)"); start_server "${SERVER_PORTS[$i]}"; done
URL="http://127.0.0.1:${SERVER_PORTS[0]}"
auth=(-H "Authorization: Bearer $TOKEN")
curl -fsS -X POST "${auth[@]}" "$URL/orders/waiting-room/$SHOW/open" >/dev/null

# --- The load: joins, follows over SSE; half the admitted buy, the others leave. ----------
T0=$(date +%s.%N)
: >"$OUT/chaos.log"
urls=()
for p in "${SERVER_PORTS[@]}"; do urls+=(--url "http://127.0.0.1:$p"); done
LOAD_SECONDS=$((CHAOS_SECONDS + CALM))
"$CLIENT" load "${urls[@]}" --show $SHOW --fans "$FANS" --join-rate "$JOIN_RATE" \
  --duration "${LOAD_SECONDS}s" --buy 0.5 --abandon 0.5 --quiet --json \
  --csv "$OUT/chaos-load.csv" --plot "$OUT/chaos-load.svg" >"$OUT/chaos-load.json" 2>"$OUT/chaos-load.err" &
LOAD=$!
PID_OF[load]=$LOAD

# --- The faults. ---------------------------------------------------------------------------
leader_port() {
  local p
  for p in "${SERVER_PORTS[@]}"; do
    curl -fsS --max-time 1 "http://127.0.0.1:$p/metrics" 2>/dev/null \
      | grep -q '^waiting_room_admitter_leader 1' && { echo "$p"; return 0; }
  done
  return 0
}
kill_server() { # kill_server PORT: SIGKILL, back on the same port 2 s later
  local port=$1
  kill -KILL "${PID_OF[server-$port]}" 2>/dev/null || true
  wait "${PID_OF[server-$port]}" 2>/dev/null || true
  sleep 2
  start_server "$port"
}
faults=0
declare -A DONE=()
end=$(( $(date +%s) + CHAOS_SECONDS ))
sleep 10
while [ "$(date +%s)" -lt "$end" ] && [ "$faults" -lt "$MAX_FAULTS" ]; do
  kind=$((RANDOM % 4))
  case $kind in
    0)
      p=$(primary_port)
      log "SIGKILL the Redis primary :$p"
      kill -KILL "${PID_OF[redis-$p]}" 2>/dev/null || true
      wait "${PID_OF[redis-$p]}" 2>/dev/null || true
      # It comes back, once the Sentinels named another, as that one's replica (empty).
      for _ in $(seq 150); do
        np=$(primary_port)
        [ -n "$np" ] && [ "$np" != "$p" ] && break
        sleep 0.1
      done
      log "  the Sentinels promoted :$np; :$p comes back as its replica"
      rm -rf "$WORK/redis-$p"
      start_node "$p" "$np"
      DONE[primary]=$(( ${DONE[primary]:-0} + 1 ))
      ;;
    1)
      p=$(leader_port)
      [ -n "$p" ] || { sleep 1; continue; }
      log "SIGKILL the admitter's leader :$p"
      kill_server "$p"
      DONE[leader]=$(( ${DONE[leader]:-0} + 1 ))
      ;;
    2)
      lp=$(leader_port)
      others=()
      for q in "${SERVER_PORTS[@]}"; do [ "$q" != "$lp" ] && others+=("$q"); done
      p=${others[$((RANDOM % ${#others[@]}))]}
      log "SIGKILL an instance that does not lead :$p"
      kill_server "$p"
      DONE[instance]=$(( ${DONE[instance]:-0} + 1 ))
      ;;
    3)
      p=$(primary_port)
      ms=$((1500 + RANDOM % 2500))
      log "SIGSTOP the Redis primary :$p for $ms ms"
      kill -STOP "${PID_OF[redis-$p]}"
      sleep "$(awk -v m="$ms" 'BEGIN{print m / 1000}')"
      kill -CONT "${PID_OF[redis-$p]}"
      DONE[pause]=$(( ${DONE[pause]:-0} + 1 ))
      ;;
  esac
  faults=$((faults + 1))
  sleep $((6 + RANDOM % 7))
done
log "faults over ($faults); calm until the load ends"
wait "$LOAD" || true
unset 'PID_OF[load]'

# --- The reckoning. ------------------------------------------------------------------------
for p in "${SERVER_PORTS[@]}"; do
  curl -fsS --max-time 2 "http://127.0.0.1:$p/readyz" >/dev/null 2>&1 && { URL="http://127.0.0.1:$p"; break; }
done
curl -fsS "${auth[@]}" "$URL/orders/waiting-room/$SHOW/stats" >"$OUT/chaos-stats.json"
: >"$OUT/chaos-audit.jsonl"
after=""
while :; do
  page=$(curl -fsS "$URL/orders/waiting-room/$SHOW/audit?limit=1000${after:+&after=$after}")
  echo "$page" | jq -c '.records[]' >>"$OUT/chaos-audit.jsonl"
  after=$(echo "$page" | jq -r '.next // empty')
  [ -n "$after" ] || break
done
verify_out=$("$CLIENT" verify --url "$URL" --show $SHOW 2>&1) && verified=yes || verified=no
echo "$verify_out" >"$OUT/chaos-verify.txt"
python3 - "$OUT" "$faults" "${DONE[primary]:-0}" "${DONE[leader]:-0}" "${DONE[instance]:-0}" \
  "${DONE[pause]:-0}" "$verified" "$SEED" "$CHAOS_SECONDS" "$WAIT_REPLICAS" <<'PY'
import json, sys
out, faults, primary, leader, instance, pause, verified, seed, secs, wait = sys.argv[1:]
load = json.load(open(f"{out}/chaos-load.json"))
stats = json.load(open(f"{out}/chaos-stats.json"))
ticks = [json.loads(l) for l in open(f"{out}/chaos-audit.jsonl") if l.strip()]
ticks = [t for t in ticks if t["kind"] == "tick"]
at = sorted(t["atMs"] if "atMs" in t else t["at_ms"] for t in ticks)
gaps = [b - a for a, b in zip(at, at[1:])]
# The store's side: every arrival number it handed out (its counter) was admitted by a tick or
# is still queued, so no place vanished, the fans whose stream gave up included.
admitted_in_audit = sum(b - a + 1 for t in ticks for a, b in t.get("admitted", []))
counter = stats.get("joined")
queued = stats.get("queueLength")
acknowledged = load["joined"]
told = {k: load[k] for k in ("admitted", "unfinished", "unknown", "expired", "lost", "join_only")}
accounted = sum(told.values())
figures = {
    "seed": int(seed), "chaos_seconds": int(secs), "faults": int(faults),
    "primary_killed": int(primary), "leader_killed": int(leader),
    "instance_killed": int(instance), "primary_paused": int(pause),
    "fans": load["fans"], "acknowledged_joins": acknowledged, "join_failed": load["join_failed"],
    "not_started": load["not_started"], **told, "bought": load["buyers"],
    "orders": load["orders"], "accounted": accounted,
    "places_lost": load["unknown"],
    "store_counter": counter, "admitted_in_audit": admitted_in_audit, "queue_at_end": queued,
    "ticks": len(ticks),
    "longest_admission_pause_ms": max(gaps) if gaps else None,
    "verify": verified,
}
# Without WAIT a failover may lose the last writes: the instances raise the counter past every
# number they handed out (audit kind `lost`) and tell the fans they knew. Those numbers are
# neither admitted nor queued, and those fans are told, not silently forgotten.
lost_records = [json.loads(l) for l in open(f"{out}/chaos-audit.jsonl") if l.strip()]
lost_records = [r for r in lost_records if r["kind"] == "lost"]
figures["wait_replicas"] = int(wait)
figures["lost_in_audit"] = len(lost_records)
figures["numbers_neither_admitted_nor_queued"] = counter - admitted_in_audit - queued
if int(wait) > 0:
    store_ok = admitted_in_audit + queued == counter and load["unknown"] == 0
else:
    store_ok = admitted_in_audit + queued <= counter and (
        admitted_in_audit + queued == counter or lost_records)
json.dump(figures, open(f"{out}/chaos.json", "w"), indent=1)
ok = (accounted == acknowledged and verified == "yes" and store_ok
      and counter >= acknowledged)
print("every acknowledged join accounted for, every place the store gave admitted, queued "
      "or (without WAIT) mended as lost in the audit, the audit verifies"
      if ok else "CHAOS RUN FAILED")
print(json.dumps(figures, indent=1))
sys.exit(0 if ok else 1)
PY
