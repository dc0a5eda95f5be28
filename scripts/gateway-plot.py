#!/usr/bin/env python3
"""The gateway bench as a plot: requests a second of each configuration (the median of the
rounds, a whisker from the slowest round to the fastest), against nginx `proxy_pass`.

    scripts/gateway-plot.py gateway-bench.json gateway-bench.svg

Plain SVG, no dependencies."""
import json
import sys

ORDER = [
    ("origin", "origin, directly"),
    ("nginx-proxy", "nginx proxy_pass"),
    ("gateway-open-embedded", "gateway, open path (embedded)"),
    ("gateway-open-redis", "gateway, open path (Redis)"),
    ("gateway-open-shared", "gateway, open, SERVE_THREADS=0"),
    ("gateway-guarded-embedded", "gateway, guarded, pass (embedded)"),
    ("gateway-guarded-redis", "gateway, guarded, pass (Redis)"),
    ("nginx-auth-request", "nginx auth_request, pass"),
]


def main(src, dst):
    run = json.load(open(src))
    results = run["results"]
    rows = [(key, label, results[key]) for key, label in ORDER if key in results]
    top = max(max(r["rounds"]) for _, _, r in rows)
    top = (int(top / 20000) + 1) * 20000
    left, width, bar, gap, head = 250, 460, 18, 10, 48
    height = head + len(rows) * (bar + gap) + 40
    x = lambda v: left + width * v / top
    proxy = results.get("nginx-proxy", {}).get("rps")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="10" y="20" font-size="14" font-weight="bold">Gateway mode against nginx, '
        f'{run["connections"]} connections, commit {run["commit"]}</text>',
        f'<text x="10" y="38" fill="#555">requests/s: median of {len(rows[0][2]["rounds"])} '
        'rounds, whisker from the slowest round to the fastest; label: against nginx proxy_pass</text>',
    ]
    for i, (key, label, r) in enumerate(rows):
        y = head + i * (bar + gap)
        colour = "#4477aa" if key.startswith("gateway") else "#999999"
        out.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end">{label}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{x(r["rps"]) - left:.1f}" height="{bar}" fill="{colour}"/>')
        lo, hi = min(r["rounds"]), max(r["rounds"])
        mid = y + bar / 2
        out.append(f'<line x1="{x(lo):.1f}" y1="{mid}" x2="{x(hi):.1f}" y2="{mid}" stroke="black"/>')
        ratio = f' ({r["rps"] / proxy:.2f}×)' if proxy else ""
        out.append(f'<text x="{x(hi) + 6:.1f}" y="{y + 13}">{r["rps"] / 1000:.1f}k{ratio}</text>')
    axis = head + len(rows) * (bar + gap) + 4
    out.append(f'<line x1="{left}" y1="{axis}" x2="{left + width}" y2="{axis}" stroke="black"/>')
    for v in range(0, top + 1, 20000):
        out.append(f'<text x="{x(v):.1f}" y="{axis + 16}" text-anchor="middle">{v // 1000}k</text>')
    if proxy:
        out.append(f'<line x1="{x(proxy):.1f}" y1="{head - 4}" x2="{x(proxy):.1f}" y2="{axis}" '
                   'stroke="#cc3311" stroke-dasharray="4 3"/>')
    out.append("</svg>")
    open(dst, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
