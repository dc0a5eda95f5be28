#!/usr/bin/env python3
"""The figures of `scripts/bench.sh scale`: Redis commands a second, CPU, pushes, fans held and
tick -> knowledge per instance over the window, from the samples and the load reports in OUT.

    scale-summary.py OUT CASE FANS INSTANCES RATE
"""
import glob, json, sys

import redis_info
from redis_info import calls_per_second
out, case, fans, n, rate = sys.argv[1:]

def info(k, what):
    return redis_info.info(f"{out}/{case}-{k}.redis-{what}")

def sample(k):
    rows = [l.split() for l in open(f"{out}/{case}-{k}.cpu")]
    servers = [tuple(float(x) for x in r[1:5]) for r in rows if r[0] == "server"]
    load = sum(float(r[1]) for r in rows if r[0] == "load")
    return float(rows[0][1]), float(rows[1][1]), servers, load

(t0, red0, srv0, load0), (t1, red1, srv1, load1) = sample(0), sample(1)
seconds = t1 - t0
cmds = int(info(1, "stats")["total_commands_processed"]) - int(info(0, "stats")["total_commands_processed"])
c0, c1 = info(0, "commandstats"), info(1, "commandstats")
per_command = calls_per_second(c0, c1, seconds)
reports = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/{case}-report-*.json"))]
instances = []
for i, (r, a, b) in enumerate(zip(reports, srv0, srv1), 1):
    instances.append({
        "instance": i,
        "fans_held": int(b[3]),
        "server_cpu_percent_of_one_core": round(100 * (b[0] - a[0]) / seconds, 1),
        "server_rss_mib": round(b[1] / 1024, 1),
        "pushes_per_second": round((b[2] - a[2]) / seconds, 1),
        "tick_to_knowledge_ms": {k: r["knowledge"][k] for k in ("count", "p50", "p90", "p99", "max")},
        "tick_to_push_ms": {k: r["push_latency"][k] for k in ("count", "p50", "p99", "max")},
        "counts_found_wrong": r["count_wrong"],
        "joined": r["joined"], "join_failed": r["join_failed"], "admitted": r["admitted"],
        "stream_errors": r["stream_errors"], "lost": r["lost"], "unknown": r["unknown"],
    })
print(json.dumps({
    "fans": int(fans), "instances": int(n), "admit_per_second": int(rate),
    "window_seconds": round(seconds, 1),
    "fans_held": sum(i["fans_held"] for i in instances),
    "redis_commands_per_second": round(cmds / seconds, 1),
    "redis_commands_per_second_by_command": per_command,
    "redis_cpu_percent_of_one_core": round(100 * (red1 - red0) / seconds, 1),
    "load_generators_cpu_percent_of_one_core": round(100 * (load1 - load0) / seconds, 1),
    "pushes_per_second": round(sum(i["pushes_per_second"] for i in instances), 1),
    "tick_to_knowledge_p99_ms_worst": max(i["tick_to_knowledge_ms"]["p99"] for i in instances),
    "lost": sum(i["lost"] + i["join_failed"] for i in instances),
    "instances_detail": instances,
}, indent=2))
