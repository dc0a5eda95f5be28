# shellcheck shell=bash
# Shared by scripts/bench.sh, scripts/eta-bench.sh and scripts/cluster-bench.sh (sourced, after
# BIN, CLIENT and OUT are set): the release binaries checked, the processes a run starts ended
# by PID when it ends, a free loopback port, and a redis-server or a 3-node Redis Cluster of
# the run's own.
TOKEN=bench-operator-token
mkdir -p "$OUT"
for bin in "$BIN" "$CLIENT"; do
  [ -x "$bin" ] || { echo "no release binary at $bin: cargo build --release --workspace first" >&2; exit 1; }
done

PIDS=()
# Directories the run made for itself (a cluster's node files), removed once its processes ended.
TEMP_DIRS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for dir in "${TEMP_DIRS[@]}"; do rm -rf "$dir"; done
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_redis: a redis-server of the run's own on a free loopback port (never 6379), ended
# with the run; sets REDIS_URL and REDIS_PID.
start_redis() {
  local port; port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no >"$OUT/redis.log" 2>&1 &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  REDIS_URL="redis://127.0.0.1:$port"
  for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "redis-server did not start" >&2
  exit 1
}

# start_cluster: a Redis Cluster of the run's own, three cluster-enabled redis-servers on free
# loopback ports, a client and a bus port each (no persistence, no replicas, the slots split
# evenly), ended with the run; sets CLUSTER_PORTS and CLUSTER_PIDS (node by node, in the same
# order) and CLUSTER_URL, the comma-separated node list a server takes as REDIS_URL with
# REDIS_CLUSTER=true.
start_cluster() {
  local dir port ok
  dir=$(mktemp -d)
  TEMP_DIRS+=("$dir")
  CLUSTER_PORTS=(); CLUSTER_PIDS=()
  for _ in 1 2 3; do
    # The bus port is a free port of its own: by default it is the port + 10,000, which a
    # free port above 55,535 does not have (the node then refuses to start).
    port=$(free_port)
    redis-server --port "$port" --cluster-port "$(free_port)" --bind 127.0.0.1 --save "" \
      --appendonly no --cluster-enabled yes --cluster-config-file "nodes-$port.conf" --dir "$dir" \
      >"$OUT/redis-$port.log" 2>&1 &
    PIDS+=("$!"); CLUSTER_PIDS+=("$!"); CLUSTER_PORTS+=("$port")
  done
  for port in "${CLUSTER_PORTS[@]}"; do
    for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${CLUSTER_PORTS[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes \
    >"$OUT/cluster-create.log"
  for _ in $(seq 100); do
    ok=1
    for port in "${CLUSTER_PORTS[@]}"; do
      redis-cli -p "$port" cluster info | grep -q cluster_state:ok || ok=0
    done
    [ "$ok" = 1 ] && break
    sleep 0.1
  done
  [ "$ok" = 1 ] || { echo "the cluster did not come up; see $OUT/cluster-create.log" >&2; exit 1; }
  CLUSTER_URL=$(printf 'redis://127.0.0.1:%s,' "${CLUSTER_PORTS[@]}"); CLUSTER_URL=${CLUSTER_URL%,}
}

# cluster_port_of SHOW: the port of the node holding SHOW's slot (all its keys are
# `wr:{SHOW}:…`, one hash tag, so one slot on one node).
cluster_port_of() {
  local slot
  slot=$(redis-cli -p "${CLUSTER_PORTS[0]}" cluster keyslot "wr:{$1}:queue")
  redis-cli -p "${CLUSTER_PORTS[0]}" cluster nodes | awk -v slot="$slot" '
    $3 ~ /master/ {
      for (i = 9; i <= NF; i++) {
        n = split($i, r, "-")
        if (slot >= r[1] && slot <= r[n]) { sub(/@.*/, "", $2); sub(/.*:/, "", $2); print $2; exit }
      }
    }'
}
