"""The traffic half of scripts/cluster-bench.sh (standard library only): makes the shows, joins
their fans, holds one SSE stream per show on the instance that joined it, opens every show,
and reads each Redis node's counters and each process's CPU before and after SECONDS."""

import argparse
import http.client
import json
import os
import selectors
import socket
import subprocess
import threading
import time
from urllib.parse import urlparse

FANS_PER_SHOW = 30
HZ = os.sysconf("SC_CLK_TCK")


def request(url, method, path, token=None, body=None):
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    headers = {"content-type": "application/json"} if body is not None else {}
    if token:
        headers["authorization"] = f"Bearer {token}"
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data) if data else None


def hold_sse(url, path, sel):
    u = urlparse(url)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.netloc}\r\nAccept: text/event-stream\r\n\r\n".encode())
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
    return s


def drain(sel, stop, received):
    while not stop.is_set():
        for key, _ in sel.select(timeout=0.2):
            try:
                data = key.fileobj.recv(65536)
            except BlockingIOError:
                continue
            received[0] += len(data)
            if not data:
                sel.unregister(key.fileobj)


def redis(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                          check=True).stdout


def fields(text):
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out


def node_counters(port):
    stats = fields(redis(port, "info", "stats"))
    cluster = fields(redis(port, "cluster", "info"))
    clients = redis(port, "client", "list").splitlines()
    subscribers = sum(1 for c in clients if "ssub=0" not in c or " sub=0 " not in c)
    keys = ["total_net_output_bytes", "total_net_input_bytes", "total_commands_processed"]
    out = {k: int(stats[k]) for k in keys}
    for k in ["cluster_stats_messages_publish_sent", "cluster_stats_messages_publish_received",
              "cluster_stats_messages_publishshard_sent",
              "cluster_stats_messages_publishshard_received"]:
        out[k] = int(cluster.get(k, 0))
    out["subscribed_clients"] = subscribers
    out["pubsub_channels"] = int(stats.get("pubsub_channels", 0))
    out["pubsubshard_channels"] = int(stats.get("pubsubshard_channels", 0))
    return out


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / HZ


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--token", required=True)
    p.add_argument("--shows", type=int, required=True)
    p.add_argument("--seconds", type=int, required=True)
    p.add_argument("--ports", nargs=3, type=int, required=True)
    p.add_argument("--urls", nargs=3, required=True)
    p.add_argument("--pids", nargs=3, type=int, required=True)
    p.add_argument("--redis-pids", nargs=3, type=int, required=True)
    a = p.parse_args()
    sel = selectors.DefaultSelector()
    names = [f"c{i:03d}" for i in range(a.shows)]
    streams = []
    for i, show in enumerate(names):
        url = a.urls[i % 3]
        request(url, "PUT", f"/orders/waiting-room/{show}", a.token, {"admitPerSecond": 1})
        last = None
        for _ in range(FANS_PER_SHOW):
            last = request(url, "POST", f"/orders/waiting-room/{show}/join")["ticketId"]
        streams.append(hold_sse(url, f"/orders/waiting-room/{show}/tickets/{last}/events", sel))
    stop = threading.Event()
    received = [0]
    reader = threading.Thread(target=drain, args=(sel, stop, received), daemon=True)
    reader.start()
    time.sleep(2)
    for i, show in enumerate(names):
        request(a.urls[i % 3], "POST", f"/orders/waiting-room/{show}/open", a.token)
    time.sleep(2)
    before = [node_counters(port) for port in a.ports]
    cpu0 = [cpu(pid) for pid in a.pids + a.redis_pids]
    got0 = received[0]
    time.sleep(a.seconds)
    after = [node_counters(port) for port in a.ports]
    cpu1 = [cpu(pid) for pid in a.pids + a.redis_pids]
    got = received[0] - got0
    stop.set()
    per_s = a.seconds
    print(f"{'node':>6} {'net out KB/s':>12} {'net in KB/s':>11} {'cmds/s':>8} "
          f"{'bus publish/s sent+recv':>24} {'bus publishshard/s':>19} {'subscribers':>11} "
          f"{'channels (plain, shard)':>24} {'CPU %':>6}")
    for n, (port, b, e) in enumerate(zip(a.ports, before, after)):
        d = {k: e[k] - b[k] for k in b}
        pub = d["cluster_stats_messages_publish_sent"] + d["cluster_stats_messages_publish_received"]
        shard = (d["cluster_stats_messages_publishshard_sent"]
                 + d["cluster_stats_messages_publishshard_received"])
        cpu_pct = (cpu1[3 + n] - cpu0[3 + n]) / per_s * 100
        print(f"{port:>6} {d['total_net_output_bytes'] / per_s / 1024:>12.1f} "
              f"{d['total_net_input_bytes'] / per_s / 1024:>11.1f} "
              f"{d['total_commands_processed'] / per_s:>8.0f} {pub / per_s:>24.1f} "
              f"{shard / per_s:>19.1f} {e['subscribed_clients']:>11} "
              f"{e['pubsub_channels']:>11}, {e['pubsubshard_channels']:>11} {cpu_pct:>6.1f}")
    for k in range(3):
        print(f"instance {k}: CPU {(cpu1[k] - cpu0[k]) / per_s * 100:.1f} % of one core")
    print(f"SSE bytes received by the {len(streams)} followers: {got / per_s / 1024:.1f} KB/s")
    for s in streams:
        s.close()


if __name__ == "__main__":
    main()
