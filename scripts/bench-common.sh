# Shared by scripts/bench.sh and scripts/eta-bench.sh (sourced, after BIN, CLIENT and OUT are
# set): the release binaries checked, the processes a run starts ended by PID when it ends,
# and a free loopback port.
TOKEN=bench-operator-token
mkdir -p "$OUT"
for bin in "$BIN" "$CLIENT"; do
  [ -x "$bin" ] || { echo "no release binary at $bin: cargo build --release --workspace first" >&2; exit 1; }
done

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
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
