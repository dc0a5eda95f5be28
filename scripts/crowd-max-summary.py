#!/usr/bin/env python3
"""The figures and plots of `scripts/bench.sh crowd-max`: the 10:00 burst, fans held, pushes,
tick -> knowing per instance, Redis, and what each fan costs the servers, the swarms and the
machine, from what the run left in OUT (CASE-meta.json, CASE-samples/, CASE-joined.tsv,
CASE-{0,1}.redis-*, CASE-report-K.json, CASE-swarm-K.csv).

    crowd-max-summary.py OUT CASE

Prints the summary as JSON and writes it to OUT/CASE.json; plots (SVG) OUT/CASE-held.svg,
-pushes.svg, -knowledge.svg and -memory.svg, with matplotlib when python3 has it, else
plain SVG written here (PLOT_PNG=1: a PNG of each too, with matplotlib). The projection (`projection`) scales the window's per-fan figures to
PROJECT_FANS (meta `project_fans`, 500,000) and says which limit it meets first.
"""
import csv, glob, json, math, os, sys

import redis_info
from redis_info import calls_per_second

out, case = sys.argv[1:3]
meta = json.load(open(f"{out}/{case}-meta.json"))
KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3
PAGE = os.sysconf("SC_PAGE_SIZE")


def sample(path):
    """One sample_crowd file as a dict (see bench.sh)."""
    s = {"servers": {}, "swarms": {}}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        tag, v = f[0], f[1:]
        num = [float(x) for x in v] if tag != "at" else [float(v[0])]
        if tag == "at":
            s["at"] = num[0]
        elif tag == "redis":
            s["redis"] = dict(zip(("cpu", "rss_kib", "commands", "used_memory"), num + [0] * 4))
        elif tag == "server":
            s["servers"][int(num[0])] = dict(zip(("cpu", "rss_kib", "pushed", "connected"), num[1:]))
        elif tag == "swarm":
            s["swarms"][int(num[0])] = dict(zip(("cpu", "rss_kib"), num[1:]))
        elif tag == "mem":
            s["mem"] = dict(zip(("total", "available", "slab", "sunreclaim"), num))
        elif tag == "tcp":
            s["tcp"] = dict(zip(("inuse", "orphan", "tw", "alloc", "mem_pages"), num))
        elif tag == "loadavg":
            s["load"] = num
        elif tag == "files":
            s["files"] = num[0]
        elif tag == "conntrack":
            s["conntrack"] = num[0]
    return s


samples_dir = f"{out}/{case}-samples"
named = {k: sample(f"{samples_dir}/{k}") for k in ("base", "start", "end")}
series = sorted((sample(p) for p in glob.glob(f"{samples_dir}/*") if not p.endswith(".tmp")),
                key=lambda s: s["at"])
series = [s for s in series if "at" in s]
base, s0, s1 = named["base"], named["start"], named["end"]
t_burst, t_open = meta["burst_at"], meta["opened_at"]
seconds = s1["at"] - s0["at"]
n = meta["instances"]
fans = meta["fans"]
fans_of = [fans // n + (1 if k <= fans % n else 0) for k in range(1, n + 1)]

reports = {}
for k in range(1, n + 1):
    try:
        reports[k] = json.load(open(f"{out}/{case}-report-{k}.json"))
    except (OSError, ValueError):
        reports[k] = {}


def total(key):
    return sum(r.get(key) or 0 for r in reports.values())


# The swarms' once-a-second timelines (t from the swarm's start, held counting every
# transport), when they are there.
timelines = {}
phase_counts = {}  # (phase, column) -> the swarms' per-second counts added up
for k in range(1, n + 1):
    try:
        with open(f"{out}/{case}-swarm-{k}.csv") as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            at = t_burst + float(r["t"])
            phase = "burst" if at < t_open else "window" if s0["at"] <= at <= s1["at"] else "other"
            for col in ("reconnects", "leaves", "returns", "joins"):
                if r.get(col):
                    phase_counts[(phase, col)] = phase_counts.get((phase, col), 0) + float(r[col])
        if rows and "t" in rows[0] and "held" in rows[0]:
            timelines[k] = [(float(r["t"]), float(r["held"])) for r in rows if r["t"] and r["held"]]
    except (OSError, ValueError, KeyError):
        pass


def swarm_held(k, at):
    """Fans swarm k held at the epoch time `at` (its timeline's nearest second), or None."""
    rows = timelines.get(k)
    if not rows:
        return None
    rel = at - t_burst
    return min(rows, key=lambda r: abs(r[0] - rel))[1]


def held_at(s, k):
    """Fans instance k held at sample s: the swarm's count (every transport) if it kept a
    timeline, else the server's streams (SSE and WebSocket; pollers hold no stream)."""
    h = swarm_held(k, s["at"])
    return h if h is not None else s["servers"][k]["connected"]


def fan_hours(k, key=None):
    """Fan-hours instance k held over the window: the trapezoid over the samples inside it."""
    inside = [s for s in series if s0["at"] - 0.5 <= s["at"] <= s1["at"] + 0.5]
    inside = sorted({round(s["at"], 3): s for s in inside + [s0, s1]}.values(), key=lambda s: s["at"])
    area = 0.0
    for a, b in zip(inside, inside[1:]):
        area += (held_at(a, k) + held_at(b, k)) / 2 * (b["at"] - a["at"])
    return area / 3600


# --- The burst -------------------------------------------------------------------------
joined_rows = []
try:
    for line in open(f"{out}/{case}-joined.tsv"):
        t, j = line.split()
        joined_rows.append((float(t) - t_burst, int(j)))
except (OSError, ValueError):
    pass
best = 0
monotone = [(0.0, 0)]
for t, j in joined_rows:
    best = max(best, j)
    monotone.append((t, best))
peak5 = 0.0
span = min(5, monotone[-1][0] - monotone[0][0]) if len(monotone) > 1 else 0
for i, (t, j) in enumerate(monotone):
    for t2, j2 in monotone[i + 1:]:
        if span and t2 - t >= span:
            peak5 = max(peak5, (j2 - j) / (t2 - t))
            break
all_in = meta["all_in_at"]
joined_total = monotone[-1][1]
# The burst lasted until the last join counted (when not all came in: when the count stopped).
burst_seconds = (all_in - t_burst) if all_in else next((t for t, j in monotone if j == joined_total), None)
burst = {
    "joins_offered_per_second": meta["join_rate_per_process"] * n,
    "joined": joined_total,
    "all_joined": all_in is not None,
    "seconds_until_all_joined": round(all_in - t_burst, 1) if all_in else None,
    "seconds_until_the_last_join": round(burst_seconds, 1) if burst_seconds else None,
    "joins_per_second": round(joined_total / burst_seconds) if burst_seconds else None,
    "peak_joins_per_second_over_5s": round(peak5),  # over the burst when it took less
}

# --- The window ------------------------------------------------------------------------
def info(k, what):
    return redis_info.info(f"{out}/{case}-{k}.redis-{what}")


c0, c1 = info(0, "commandstats"), info(1, "commandstats")
per_command = calls_per_second(c0, c1, seconds)

held0 = {k: held_at(s0, k) for k in range(1, n + 1)}
held1 = {k: held_at(s1, k) for k in range(1, n + 1)}
held_total0, held_total1 = sum(held0.values()), sum(held1.values())
held_mean = (held_total0 + held_total1) / 2 or 1
fan_hours_of = {k: fan_hours(k) for k in range(1, n + 1)}
fan_hours_all = sum(fan_hours_of.values()) or 1e-9

instances = []
for k in range(1, n + 1):
    a, b, r = s0["servers"][k], s1["servers"][k], reports[k]
    cpu = b["cpu"] - a["cpu"]
    kn = r.get("knowledge") or r.get("knowing") or {}
    # Per tick second inside the window: the median and the worst of the seconds' p99.
    inside = sorted(row[3] for row in r.get("knowledge_by_second") or []
                    if row[1] and s0["at"] - 1 <= row[0] <= s1["at"])
    instances.append({
        "instance": k,
        "fans": fans_of[k - 1],
        "fans_held_window_start": int(held0[k]),
        "fans_held_window_end": int(held1[k]),
        "streams_held_window_start": int(a["connected"]),
        "streams_held_window_end": int(b["connected"]),
        "pushes_per_second": round((b["pushed"] - a["pushed"]) / seconds, 1),
        "tick_to_knowing_ms": {q: kn.get(q) for q in ("count", "p50", "p90", "p99", "max")},
        "tick_to_knowing_p99_ms_per_second_in_window":
            {"median": inside[len(inside) // 2], "max": inside[-1]} if inside else None,
        "server_cpu_percent_of_one_core": round(100 * cpu / seconds, 1),
        "server_cpu_seconds_per_fan_hour": round(cpu / max(fan_hours_of[k], 1e-9), 3),
        "server_rss_mib_window_start": round(a["rss_kib"] / KIB, 1),
        "server_rss_mib_window_end": round(b["rss_kib"] / KIB, 1),
        "server_rss_bytes_per_fan_held": round(a["rss_kib"] * KIB / max(held0[k], 1)),
        "server_rss_bytes_per_fan_held_above_idle":
            round((a["rss_kib"] - base["servers"][k]["rss_kib"]) * KIB / max(held0[k], 1)),
        "swarm": {q: r.get(q) for q in ("joined", "join_failed", "join_status", "held",
                                        "held_peak", "held_by_transport", "lost", "count_wrong",
                                        "stream_errors", "dropped", "reconnects", "left",
                                        "leave_failed", "returned", "admitted", "rss_peak_bytes",
                                        "bytes_per_fan", "bytes_per_fan_above_start",
                                        "cpu_seconds", "cpu_us_per_fan_second")},
    })

srv_cpu = sum(s1["servers"][k]["cpu"] - s0["servers"][k]["cpu"] for k in range(1, n + 1))
# Memory a fan: at the window's start, when the most fans are held (the admitted ones leave
# memory behind in the allocator's free lists, so the end would count them too).
srv_rss = sum(s0["servers"][k]["rss_kib"] for k in range(1, n + 1)) * KIB
srv_rss_end = sum(s1["servers"][k]["rss_kib"] for k in range(1, n + 1)) * KIB
srv_rss_idle = sum(base["servers"][k]["rss_kib"] for k in range(1, n + 1)) * KIB
sw_cpu = sum(s1["swarms"].get(k, {}).get("cpu", 0) - s0["swarms"].get(k, {}).get("cpu", 0) for k in range(1, n + 1))
sw_rss = sum(s0["swarms"].get(k, {}).get("rss_kib", 0) for k in range(1, n + 1)) * KIB
sw_rss_peak = max((sum(s["swarms"].get(k, {}).get("rss_kib", 0) for k in s["swarms"]) for s in series), default=0) * KIB
red_cpu = s1["redis"]["cpu"] - s0["redis"]["cpu"]
red_cmds = s1["redis"]["commands"] - s0["redis"]["commands"]


def used(s):
    return (s["mem"]["total"] - s["mem"]["available"]) * KIB


peak = max(series, key=used)
load_peak = max(series, key=lambda s: s["load"][0])
kernel = lambda s: s["mem"]["slab"] * KIB + s["tcp"]["mem_pages"] * PAGE
tcp_peak = max(series, key=lambda s: s["tcp"]["inuse"])
knowing_p99 = [i["tick_to_knowing_ms"]["p99"] for i in instances if i["tick_to_knowing_ms"]["p99"] is not None]

summary = {
    "case": case,
    "fans": fans, "instances": n, "admit_per_second": meta["admit_per_second"],
    "mix": meta["mix"], "churn": meta["churn"], "window_seconds": round(seconds, 1),
    "burst": burst,
    "fans_held": {
        "window_start": int(held_total0), "window_end": int(held_total1),
        "per_instance_start": [int(held0[k]) for k in range(1, n + 1)],
        "per_instance_end": [int(held1[k]) for k in range(1, n + 1)],
        "counted_by": "the swarms' timelines (every transport)" if len(timelines) == n
                      else "the servers' streams (waiting_room_connected_fans: SSE and WebSocket)",
        "streams_window_start": int(sum(s0["servers"][k]["connected"] for k in range(1, n + 1))),
        "streams_window_end": int(sum(s1["servers"][k]["connected"] for k in range(1, n + 1))),
        "swarm_held_peak": total("held_peak"),
    },
    "joined": total("joined"), "join_failed": total("join_failed"), "lost": total("lost"),
    "counts_wrong": total("count_wrong"), "stream_errors": total("stream_errors"),
    "reconnects": total("reconnects"), "left": total("left"), "returned": total("returned"),
    "by_phase": {p: {c: int(phase_counts.get((p, c), 0)) for c in ("joins", "reconnects", "leaves", "returns")}
                 for p in ("burst", "window")} if phase_counts else None,
    "admitted": total("admitted"),
    "pushes_per_second": round(sum(i["pushes_per_second"] for i in instances), 1),
    "tick_to_knowing_ms": {
        "p50": [i["tick_to_knowing_ms"]["p50"] for i in instances],
        "p99": [i["tick_to_knowing_ms"]["p99"] for i in instances],
        "max": [i["tick_to_knowing_ms"]["max"] for i in instances],
        "p99_worst": max(knowing_p99) if knowing_p99 else None,
    },
    "redis": {
        "commands_per_second": round(red_cmds / seconds, 1),
        "commands_per_second_per_1000_fans": round(1000 * red_cmds / seconds / held_mean, 2),
        "commands_per_second_by_command": per_command,
        "cpu_percent_of_one_core": round(100 * red_cpu / seconds, 2),
        "cpu_percent_per_1000_fans": round(100 * red_cpu / seconds * 1000 / held_mean, 4),
        "used_memory_mib": round(s1["redis"]["used_memory"] / MIB, 1),
        "used_memory_bytes_per_fan": round((s1["redis"]["used_memory"] - base["redis"]["used_memory"]) / held_mean),
        "rss_mib": round(s1["redis"]["rss_kib"] / KIB, 1),
    },
    "servers": {
        "cpu_percent_of_one_core": round(100 * srv_cpu / seconds, 1),
        "cpu_seconds_per_fan_hour": round(srv_cpu / fan_hours_all, 4),
        "rss_mib_window_start": round(srv_rss / MIB, 1),
        "rss_mib_window_end": round(srv_rss_end / MIB, 1),
        "rss_bytes_per_fan_held": round(srv_rss / max(held_total0, 1)),
        "rss_bytes_per_fan_held_above_idle": round((srv_rss - srv_rss_idle) / max(held_total0, 1)),
        "idle_rss_mib_each": round(srv_rss_idle / n / MIB, 1),
    },
    "swarms": {
        "cpu_percent_of_one_core": round(100 * sw_cpu / seconds, 1),
        "cpu_seconds_per_fan_hour": round(sw_cpu / fan_hours_all, 4),
        "rss_mib_window_start": round(sw_rss / MIB, 1),
        "rss_peak_mib": round(sw_rss_peak / MIB, 1),
        "rss_bytes_per_fan_held": round(sw_rss / max(held_total0, 1)),
        "report_bytes_per_fan": [reports[k].get("bytes_per_fan") for k in range(1, n + 1)],
        "report_cpu_seconds": round(total("cpu_seconds"), 1),
    },
    "machine": {
        "memory_total_gib": round(s1["mem"]["total"] * KIB / GIB, 2),
        "memory_used_before_gib": round(used(base) / GIB, 2),
        "memory_used_peak_gib": round(used(peak) / GIB, 2),
        "memory_used_peak_at_seconds": round(peak["at"] - t_burst, 1),
        "memory_used_bytes_per_fan": round((used(s0) - used(base)) / max(held_total0, 1)),
        "kernel_bytes_per_fan": round((kernel(s0) - kernel(base)) / max(held_total0, 1)),
        "kernel_slab_mib_window_start": round(s0["mem"]["slab"] / KIB, 1),
        "tcp_sockets_peak": int(tcp_peak["tcp"]["inuse"]),
        "tcp_buffer_mib_peak": round(max(s["tcp"]["mem_pages"] for s in series) * PAGE / MIB, 1),
        "files_peak": int(max(s.get("files", 0) for s in series)),
        "conntrack_peak": int(max(s.get("conntrack", 0) for s in series)),
        "load_average_peak_1m": load_peak["load"][0],
        "load_average_peak_at_seconds": round(load_peak["at"] - t_burst, 1),
        "load_average_window_start": s0["load"], "load_average_window_end": s1["load"],
        "cpu_percent_of_all_cores_in_window": round(100 * (srv_cpu + sw_cpu + red_cpu) / seconds / os.cpu_count(), 1),
    },
    "instances_detail": instances,
}

# --- What 500,000 would take ------------------------------------------------------------
P = meta.get("project_fans") or 500000
ratio = P / max(held_total0, 1)
n_p = math.ceil(P / 18000)
limits = {}
for line in open(f"{out}/{case}-limits.txt"):
    if " = " in line:
        key, value = line.strip().split(" = ", 1)
        limits[key] = value.split()
mem_total = s1["mem"]["total"] * KIB
# The memory a fan adds, part by part (the machine's own `used` moves with whatever else runs).
redis_rss = lambda s: s["redis"]["rss_kib"] * KIB
per_fan_mem = ((srv_rss - srv_rss_idle) + sw_rss + (kernel(s0) - kernel(base))
               + (redis_rss(s0) - redis_rss(base))) / max(held_total0, 1)
# CPU a fan-hour held over the window, for P fans held an hour, as a share of the cores.
cpu_pct = 100 * (srv_cpu + sw_cpu + red_cpu) / fan_hours_all * P / 3600 / os.cpu_count()
proj = {
    "fans": P, "instances": n_p,
    "memory_bytes_per_fan": round(per_fan_mem),
    "memory_gib": round((used(base) + srv_rss_idle / n * n_p + per_fan_mem * P) / GIB, 1),
    "memory_of_total": round((used(base) + srv_rss_idle / n * n_p + per_fan_mem * P) / mem_total, 2),
    "servers_rss_gib": round((srv_rss_idle / n * n_p + (srv_rss - srv_rss_idle) * ratio) / GIB, 2),
    "swarms_rss_gib": round(sw_rss * ratio / GIB, 2),
    "kernel_gib": round((kernel(base) + (kernel(s0) - kernel(base)) * ratio) / GIB, 2),
    "redis_used_memory_mib": round((base["redis"]["used_memory"] + (s0["redis"]["used_memory"] - base["redis"]["used_memory"]) * ratio) / MIB),
    "window_cpu_percent_of_all_cores": round(cpu_pct, 1),
    "window_cpu_by_part_percent_of_all_cores": {
        name: round(100 * c / fan_hours_all * P / 3600 / os.cpu_count(), 1)
        for name, c in (("servers", srv_cpu), ("swarms", sw_cpu), ("redis", red_cpu))},
    "redis_cpu_percent_of_one_core": round(100 * red_cpu / fan_hours_all * P / 3600, 1),
    "pushes_per_second": round(summary["pushes_per_second"] * ratio),
}
shares = {"memory": proj["memory_of_total"], "cpu (the window)": proj["window_cpu_percent_of_all_cores"] / 100}
if "fs.file-max" in limits:
    files = int(limits["fs.file-max"][0])
    proj["files_of_file_max"] = round((2 * P + 100 * n_p) / files, 3)
    shares["fs.file-max"] = proj["files_of_file_max"]
if "net.ipv4.tcp_mem" in limits:
    high = int(limits["net.ipv4.tcp_mem"][2]) * PAGE
    tcp_buf = max(s["tcp"]["mem_pages"] for s in series) * PAGE * ratio
    proj["tcp_buffers_of_tcp_mem_max"] = round(tcp_buf / high, 3)
    shares["net.ipv4.tcp_mem"] = proj["tcp_buffers_of_tcp_mem_max"]
if "net.netfilter.nf_conntrack_max" in limits and summary["machine"]["conntrack_peak"] > 0:
    shares["nf_conntrack_max"] = round(P / int(limits["net.netfilter.nf_conntrack_max"][0]), 2)
if burst["joins_per_second"]:
    proj["burst_seconds"] = round(P / burst["joins_per_second"])
proj["limits_used"] = {k: round(v, 3) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}
proj["first_to_run_out"] = max(shares, key=shares.get)
proj["note"] = ("linear in fans: memory per fan held at the window's start, CPU per fan-hour held "
                "over the window; the burst's CPU is not in it (see burst.joins_per_second)")
summary["projection"] = proj

# --- Plots ------------------------------------------------------------------------------
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def plot(path, title, ylabel, lines, marks, xlabel="seconds from the burst's start"):
    """lines: (label, xs, ys, width, colour or None); marks: (x, label) vertical lines."""
    lines = [l for l in lines if l[1]]
    if not lines:
        return
    if plt:
        fig, ax = plt.subplots(figsize=(10, 5.5))
        for i, (label, xs, ys, width, colour) in enumerate(lines):
            ax.plot(xs, ys, label=label, linewidth=width, color=colour or COLOURS[i % len(COLOURS)])
        for x, label in marks:
            ax.axvline(x, color="grey", linestyle=":", linewidth=1)
            ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), fontsize=8,
                        rotation=90, va="top", ha="right", color="grey")
        ax.set_title(title); ax.set_xlabel(xlabel); ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0); ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=max(1, len(lines) // 12 + 1))
        fig.tight_layout(); fig.savefig(path)
        if os.environ.get("PLOT_PNG"):
            fig.savefig(path.removesuffix(".svg") + ".png", dpi=80)
        plt.close(fig)
        return
    # Plain SVG: axes, ticks, lines, legend.
    W, H, L, R, T, B = 900, 500, 80, 190, 40, 50
    xs_all = [x for l in lines for x in l[1]] + [m[0] for m in marks]
    ys_all = [y for l in lines for y in l[2]]
    x0, x1 = min(xs_all), max(xs_all)
    y1 = max(ys_all) or 1
    x1 = x1 if x1 > x0 else x0 + 1

    def nice(top):
        step = 10 ** math.floor(math.log10(top / 5)) if top > 0 else 1
        for m in (1, 2, 5, 10):
            if top / (step * m) <= 6:
                return step * m
        return step * 10

    ys, xs_ = nice(y1), nice(x1 - x0)
    y1 = math.ceil(y1 / ys) * ys
    X = lambda x: L + (x - x0) / (x1 - x0) * (W - L - R)
    Y = lambda y: H - B - y / y1 * (H - T - B)
    e = []
    e.append(f'<rect width="{W}" height="{H}" fill="white"/>')
    e.append(f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>')
    y = 0.0
    while y <= y1 + 1e-9:
        e.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(y):.1f}" y2="{Y(y):.1f}" stroke="#ddd"/>')
        e.append(f'<text x="{L - 6}" y="{Y(y) + 4:.1f}" text-anchor="end" font-size="11">{y:g}</text>')
        y += ys
    x = math.ceil(x0 / xs_) * xs_
    while x <= x1 + 1e-9:
        e.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{H - B}" y2="{H - B + 4}" stroke="black"/>')
        e.append(f'<text x="{X(x):.1f}" y="{H - B + 17}" text-anchor="middle" font-size="11">{x:g}</text>')
        x += xs_
    e.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="black"/>')
    e.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle" font-size="12">{xlabel}</text>')
    e.append(f'<text transform="translate(18 {(T + H - B) / 2}) rotate(-90)" text-anchor="middle" font-size="12">{ylabel}</text>')
    for x, label in marks:
        e.append(f'<line x1="{X(x):.1f}" x2="{X(x):.1f}" y1="{T}" y2="{H - B}" stroke="grey" stroke-dasharray="3 3"/>')
        e.append(f'<text transform="translate({X(x) - 3:.1f} {T + 4}) rotate(90)" font-size="10" fill="grey">{label}</text>')
    for i, (label, xs, ys_, width, colour) in enumerate(lines):
        c = colour or COLOURS[i % len(COLOURS)]
        pts = " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in zip(xs, ys_))
        e.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="{width}"/>')
        if i < 30:
            ly = T + 10 + 14 * i
            e.append(f'<line x1="{W - R + 10}" x2="{W - R + 30}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="{width}"/>')
            e.append(f'<text x="{W - R + 35}" y="{ly + 4}" font-size="10">{label}</text>')
    with open(path, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif">\n')
        f.write("\n".join(e) + "\n</svg>\n")


marks = [(t_open - t_burst, "opened"), (s0["at"] - t_burst, "window"), (s1["at"] - t_burst, "window ends")]
if all_in:
    marks.insert(0, (all_in - t_burst, "all joined"))
ts = [s["at"] - t_burst for s in series]
many = n > 10
# Fans held: the total, and each instance thin.
held_lines = []
if len(timelines) == n:
    secs = sorted({int(t) for rows in timelines.values() for t, _ in rows})
    per = {k: dict((int(t), h) for t, h in rows) for k, rows in timelines.items()}
    held_lines.append(("all (swarms)", secs, [sum(per[k].get(t, 0) for k in per) for t in secs], 2.5, "black"))
    if not many:
        for k in sorted(per):
            held_lines.append((f"instance {k}", secs, [per[k].get(t, 0) for t in secs], 1, None))
held_lines.append(("streams at the servers", ts, [sum(v["connected"] for v in s["servers"].values()) for s in series], 1.5, "#888"))
if monotone:
    held_lines.append(("joined", [t for t, _ in monotone], [j for _, j in monotone], 1, "#c08000"))
plot(f"{out}/{case}-held.svg", f"{case}: fans held", "fans", held_lines, marks)
# Pushes a second, from the servers' counters between samples.
push_lines = []
pairs = list(zip(series, series[1:]))
xs = [b["at"] - t_burst for a, b in pairs]
push_lines.append(("all instances", xs, [sum(b["servers"][k]["pushed"] - a["servers"][k]["pushed"] for k in b["servers"]) / max(b["at"] - a["at"], 1e-3) for a, b in pairs], 2.5, "black"))
if not many:
    for k in range(1, n + 1):
        push_lines.append((f"instance {k}", xs, [(b["servers"][k]["pushed"] - a["servers"][k]["pushed"]) / max(b["at"] - a["at"], 1e-3) for a, b in pairs], 1, None))
plot(f"{out}/{case}-pushes.svg", f"{case}: pushes a second", "pushes / s", push_lines, marks)
# Tick -> knowing per instance, per tick second: p99 thick, p50 thin.
kn_lines = []
for k in range(1, n + 1):
    rows = reports[k].get("knowledge_by_second") or []
    rows = [r for r in rows if r[1]]
    if rows:
        c = COLOURS[(k - 1) % len(COLOURS)]
        secs = [r[0] - t_burst for r in rows]
        kn_lines.append((f"{k} p99", secs, [r[3] for r in rows], 1.6, c))
        kn_lines.append((f"{k} p50", secs, [r[2] for r in rows], 0.7, c))
plot(f"{out}/{case}-knowledge.svg", f"{case}: tick → knowing, per instance (p99 thick, p50 thin)",
     "ms", kn_lines, marks)
# Memory.
mem_lines = [
    ("machine used", ts, [used(s) / GIB for s in series], 2.5, "black"),
    ("servers RSS", ts, [sum(v["rss_kib"] for v in s["servers"].values()) * KIB / GIB for s in series], 1.5, None),
    ("swarms RSS", ts, [sum(v["rss_kib"] for v in s["swarms"].values()) * KIB / GIB for s in series], 1.5, None),
    ("kernel slab + TCP buffers", ts, [kernel(s) / GIB for s in series], 1.5, None),
    ("redis RSS", ts, [s["redis"]["rss_kib"] * KIB / GIB for s in series], 1.5, None),
]
plot(f"{out}/{case}-memory.svg", f"{case}: memory", "GiB", mem_lines, marks)
summary["plots"] = [f"{case}-{p}.svg" for p in ("held", "pushes", "knowledge", "memory")
                    if os.path.exists(f"{out}/{case}-{p}.svg")]
summary["plots_by"] = "matplotlib" if plt else "plain SVG (no matplotlib)"

text = json.dumps(summary, indent=2)
print(text)
with open(f"{out}/{case}.json", "w") as f:
    f.write(text + "\n")
