#!/usr/bin/env python3
"""Two reports side by side (GET …/report?format=json, or simulate's report.json): the
figures a prediction is judged by, and how far apart they are.

    scripts/report-compare.py PREDICTED.json REAL.json
"""
import json
import sys


def figures(path):
    with open(path) as f:
        r = json.load(f)["figures"]
    w = r["wait"]
    return {
        "arrivals": r["arrivals"],
        "admitted": r["admitted"],
        "admitted a second": r["admittedPerSecond"],
        "orders": r["orders"],
        "wait p50 (s)": w["p50"],
        "wait p90 (s)": w["p90"],
        "wait p99 (s)": w["p99"],
        "longest wait (s)": w["max"],
        "still waiting": r["queued"],
    }


def main():
    predicted, real = figures(sys.argv[1]), figures(sys.argv[2])
    print(f"{'':<20} {'predicted':>12} {'real':>12} {'apart':>8}")
    for name, p in predicted.items():
        r = real[name]
        apart = "0 %" if p == r == 0 else f"{(r - p) / abs(p) * 100:+.1f} %" if p else "n/a"
        print(f"{name:<20} {p:>12.1f} {r:>12.1f} {apart:>8}")


if __name__ == "__main__":
    main()
