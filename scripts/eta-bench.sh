#!/usr/bin/env bash
# The "ETA accuracy" runs of BENCHMARKS.md: a release server on a free loopback port, one
# `waiting-room-client load` process against it, and each fan's first ETA held against its real
# admission.
#
#   scripts/eta-bench.sh plain  [embedded|redis]  300 fans join at once, 5 admitted a second
#   scripts/eta-bench.sh cap    [embedded|redis]  90 fans, rate 10, at most 10 active buyers,
#                                                 6 s admissions; one in three buys at once,
#                                                 the others abandon (never order)
#   scripts/eta-bench.sh halved [embedded|redis]  600 fans join at 20 a second, 10 admitted a
#                                                 second, halved to 5 at 15 s
#   scripts/eta-bench.sh announced [embedded|redis]  as `halved`, but the halving is
#                                                 announced at the start (rateChangeAt)
#   scripts/eta-bench.sh crowd  [embedded|redis]  300 fans join at once, 10 a second, halved
#                                                 to 5 at 10 s
#   scripts/eta-bench.sh cap-stay   [embedded|redis]  as `cap`, but those who never buy stay
#   scripts/eta-bench.sh cap-steady [embedded|redis]  as `cap`, but 150 fans join at 5 a
#                                                 second: most are told their ETA once the
#                                                 pace has history
#   scripts/eta-bench.sh cap-window [embedded|redis]  150 fans join at 5 a second, rate 10,
#                                                 at most 10 active buyers, 60 s admissions
#                                                 released after a 10 s arrival window when
#                                                 untaken; one in three buys at once, the
#                                                 others abandon: late joiners under a cap
#   scripts/eta-bench.sh away   [embedded|redis]  a fair start: 300 fans in the pre-queue,
#                                                 5 a second; three in ten step away before
#                                                 the opening and come back after the rest
#   scripts/eta-bench.sh cap-away [embedded|redis]  as `away` under `cap`'s cap: 130 fans
#   scripts/eta-bench.sh lull   [embedded|redis]  as `cap`, after a trickle of 20 fans and
#                                                 30 s of an empty queue
#   scripts/eta-bench.sh summary CASE             the summary of CASE's last run again
#
# Loopback only, every run bounded in fans and time; it ends only the processes it started,
# by PID. Results go to $OUT (default target/bench-eta/): the load report (JSON), the per-fan
# ETA CSV, the timeline and the plots, and a summary that splits the first-ETA error by
# whether the fan was told before or after a rate change. Needs: a release build, curl,
# python3, and redis-server for `redis` (its own, on a free port; never the one on 6379).
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/waiting-room}
CLIENT=${CLIENT:-${CARGO_TARGET_DIR:-target}/release/waiting-room-client}
OUT=${OUT:-${CARGO_TARGET_DIR:-target}/bench-eta}
# shellcheck source=scripts/bench-common.sh
. scripts/bench-common.sh


# start_server [ENV=VALUE...]: sets URL. One load process holds every fan's stream from
# 127.0.0.1, so the per-client stream limit is off, as the join limit is.
start_server() {
  local port; port=$(free_port)
  URL="http://127.0.0.1:$port"
  env BIND="127.0.0.1:$port" ADMIN_TOKEN=$TOKEN JOIN_RATE_LIMIT=0 MAX_STREAMS_PER_CLIENT=0 MAX_CONNECTIONS_PER_CLIENT=0 \
    RUST_LOG=warn ${REDIS_URL:+REDIS_URL=$REDIS_URL} "$@" "$BIN" >"$OUT/server-$CASE.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 100); do
    if curl -fs "$URL/readyz" >/dev/null 2>&1; then
      # A new admitter admits at once on taking the lease; let that pass.
      sleep 1.5
      return 0
    fi
    sleep 0.1
  done
  echo "server did not start; see $OUT/server-$CASE.log" >&2
  exit 1
}

operator() { # operator METHOD PATH [JSON]
  curl -fsS -X "$1" -H "Authorization: Bearer $TOKEN" ${3:+-H 'content-type: application/json' -d "$3"} "$URL$2" >/dev/null
}

# The pace as the server measures it, once a second while the run lasts: $OUT/$CASE-pace.csv.
watch_pace() { # watch_pace SHOW
  python3 - "$URL/orders/waiting-room/$1/stats" "$TOKEN" >"$OUT/$CASE-pace.csv" <<'PY' &
import json, sys, time, urllib.request
url, token = sys.argv[1], sys.argv[2]
print("seconds,queue_length,admitted_valid,outflow_per_second,paused", flush=True)
start = time.time()
while True:
    try:
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        s = json.load(urllib.request.urlopen(req, timeout=2))
        print(f"{time.time() - start:.2f},{s['queueLength']},{s['admittedValid']},"
              f"{s['outflowPerSecond']:.3f},{s.get('paused') or ''}", flush=True)
    except Exception:
        pass
    time.sleep(1)
PY
  PIDS+=("$!")
}

# load ARGS...: one load process; its report, CSVs and plots under $OUT/$CASE*. The command
# is written to $OUT/$CASE-command.txt as run.
load() {
  local cmd=("$CLIENT" load --url "$URL" --admin-token "$TOKEN" --quiet --json
    --csv "$OUT/$CASE.csv" --plot "$OUT/$CASE.svg" "$@")
  printf '%q ' "${cmd[@]}" | sed "s#$URL#http://127.0.0.1:PORT#; s#--admin-token $TOKEN #--admin-token \$ADMIN_TOKEN #" \
    >"$OUT/$CASE-command.txt"
  echo >>"$OUT/$CASE-command.txt"
  "${cmd[@]}" >"$OUT/$CASE.json" 2>>"$OUT/$CASE-stderr.log"
}

# The first-ETA error of fans waiting over 10 s, split by whether they were told before or
# after the first rate change (nearest-rank quantiles, as the load report computes them).
summary() {
  python3 - "$OUT/$CASE.json" "$OUT/$CASE-eta.csv" <<'PY' | tee "$OUT/$CASE-summary.txt"
import csv, json, math, sys
report = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
changes = [c for c in report.get("rate_changes", []) if c.get("status") == 200]
change_at = changes[0]["at_seconds"] if changes else None

def q(values, p):
    values = sorted(values)
    return values[max(1, math.ceil(p * len(values))) - 1] if values else None

def figures(name, rows):
    errors = [float(r["error"]) for r in rows]
    if not errors:
        print(f"{name}: no fan waited over 10 s"); return
    n = len(errors)
    early = sum(e < 0 for e in errors) / n
    late = sum(e > 0 for e in errors) / n
    print(f"{name}: {n} fans · p50 {q([abs(e) for e in errors], .5):.1%} · "
          f"p90 {q([abs(e) for e in errors], .9):.1%} · early {early:.0%} · late {late:.0%}")

counted = [r for r in rows if r["counted"] == "1"]
e = report["eta"]
print(f"{report['fans']} fans, {report['admitted']} admitted in {report['elapsed_seconds']:.1f} s; "
      f"bought {report['buyers']}, abandoned {report['abandoners']}, stayed {report['stayers']}")
figures("first ETA, waits over 10 s", counted)
if change_at is not None:
    print(f"rate changed at {change_at:.2f} s")
    figures("  told before the change", [r for r in counted if float(r["told_at_seconds"]) < change_at])
    figures("  told after the change", [r for r in counted if float(r["told_at_seconds"]) >= change_at])
    a = report.get("eta_after_rate_change") or {}
    if a.get("fans"):
        print(f"ETA told after the change (pushed or at join), waits over 10 s: {a['fans']} fans · "
              f"p50 {a['p50AbsError']:.1%} · p90 {a['p90AbsError']:.1%} · "
              f"early {a['early']:.0%} · late {a['late']:.0%}")
ranged = e.get("ranged", 0)
if ranged:
    print(f"told a range: {ranged} fans, {e['inRange']:.0%} of them admitted inside it")
told = [abs(float(r["wait_seconds"]) - float(r["eta_seconds"])) / float(r["eta_seconds"])
        for r in counted if float(r["eta_seconds"]) > 0]
if told:
    print(f"the same error relative to the ETA told instead of the real wait: "
          f"p50 {q(told, .5):.0%} · p90 {q(told, .9):.0%}")
print(f"seconds off, every admitted fan: p50 {e['p50AbsErrorSeconds']} s · p90 {e['p90AbsErrorSeconds']} s")
PY
}

CASE=${1:-}
store=${2:-embedded}
if [ "$CASE" = summary ]; then
  # scripts/eta-bench.sh summary CASE: the summary again, from the outputs of a past run.
  CASE=$store
  summary
  exit 0
fi
[ "$store" = redis ] && start_redis
case "$CASE" in
plain)
  start_server
  operator PUT /orders/waiting-room/eta-plain '{"admitPerSecond":5}'
  watch_pace eta-plain
  load --show eta-plain --fans 300 --join-rate 500 --open --duration 120s
  ;;
cap)
  start_server ADMISSION_TTL=6s
  operator PUT /orders/waiting-room/eta-cap '{"admitPerSecond":10,"maxActiveBuyers":10}'
  watch_pace eta-cap
  load --show eta-cap --fans 90 --join-rate 500 --open --buy 0.34 --abandon 0.66 --duration 180s
  ;;
cap-stay)
  # As `cap`, but the two in three who never buy keep following (they stay) instead of
  # closing their stream: with a 6 s TTL under the 10 s least arrival window, the server
  # treats both alike (the admission runs out after its TTL).
  start_server ADMISSION_TTL=6s
  operator PUT /orders/waiting-room/eta-cap-stay '{"admitPerSecond":10,"maxActiveBuyers":10}'
  watch_pace eta-cap-stay
  load --show eta-cap-stay --fans 90 --join-rate 500 --open --buy 0.34 --duration 180s
  ;;
cap-steady)
  start_server ADMISSION_TTL=6s
  operator PUT /orders/waiting-room/eta-cap-steady '{"admitPerSecond":10,"maxActiveBuyers":10}'
  watch_pace eta-cap-steady
  load --show eta-cap-steady --fans 150 --join-rate 5 --open --buy 0.34 --abandon 0.66 --duration 180s
  ;;
cap-window)
  start_server ADMISSION_TTL=60s ARRIVAL_WINDOW=10s
  operator PUT /orders/waiting-room/eta-cap-window '{"admitPerSecond":10,"maxActiveBuyers":10}'
  watch_pace eta-cap-window
  load --show eta-cap-window --fans 150 --join-rate 5 --open --buy 0.34 --abandon 0.66 --duration 240s
  ;;
halved)
  start_server
  operator PUT /orders/waiting-room/eta-halved '{"admitPerSecond":10}'
  watch_pace eta-halved
  load --show eta-halved --fans 600 --join-rate 20 --open --rate-change 15s:5 --duration 180s
  ;;
announced)
  start_server
  operator PUT /orders/waiting-room/eta-announced '{"admitPerSecond":10}'
  watch_pace eta-announced
  load --show eta-announced --fans 600 --join-rate 20 --open --rate-change 15s:5 \
    --announce-rate-changes --duration 180s
  ;;
crowd)
  start_server
  operator PUT /orders/waiting-room/eta-crowd '{"admitPerSecond":10}'
  watch_pace eta-crowd
  load --show eta-crowd --fans 300 --join-rate 500 --open --rate-change 10s:5 --duration 120s
  ;;
away)
  # A 10:00 on-sale with a fair start: 300 fans join the pre-queue, three in ten close their
  # page a second later and come back only after everyone present was let in. Each present
  # fan's first ETA (told with the draw) skips the fans away ahead, who are passed over.
  start_server
  operator PUT /orders/waiting-room/eta-away \
    "{\"admitPerSecond\":5,\"presenceGraceSeconds\":2,\"opensAt\":\"$(date -u -d '+20 seconds' +%FT%TZ)\"}"
  watch_pace eta-away
  load --show eta-away --fans 300 --join-rate 500 --away 0.3 --away-after 1s --away-for 90s \
    --duration 150s
  ;;
cap-away)
  # As `away`, under a cap: rate 10, at most 10 active buyers, 6 s admissions; of those
  # present, one in three buys at once and the others abandon.
  start_server ADMISSION_TTL=6s
  operator PUT /orders/waiting-room/eta-cap-away \
    "{\"admitPerSecond\":10,\"maxActiveBuyers\":10,\"presenceGraceSeconds\":2,\"opensAt\":\"$(date -u -d '+20 seconds' +%FT%TZ)\"}"
  watch_pace eta-cap-away
  load --show eta-cap-away --fans 130 --join-rate 500 --buy 0.34 --abandon 0.66 --away 0.3 \
    --away-after 1s --away-for 120s --duration 200s
  ;;
lull)
  # A capped show (as `cap`) that served a trickle, then stood empty for 30 s, then a crowd:
  # the crowd's first ETAs must not read the empty queue as a slow checkout.
  start_server ADMISSION_TTL=6s
  operator PUT /orders/waiting-room/eta-lull '{"admitPerSecond":10,"maxActiveBuyers":10}'
  watch_pace eta-lull
  CASE=lull-trickle load --show eta-lull --fans 20 --join-rate 1 --open --buy 0.34 --abandon 0.66 \
    --duration 60s
  sleep 30
  load --show eta-lull --fans 90 --join-rate 500 --buy 0.34 --abandon 0.66 --duration 180s
  ;;
*)
  sed -n '2,35p' "$0"
  exit 2
  ;;
esac
summary
