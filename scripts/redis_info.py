"""The `redis-cli INFO` sections the benchmark scripts keep, read back: one section a file.

    from redis_info import info, calls_per_second
"""
import re


def info(path):
    """The `key:value` lines of the INFO section saved at `path` ({} when there is none)."""
    try:
        return dict(l.strip().split(":", 1) for l in open(path) if ":" in l)
    except OSError:
        return {}


def calls_per_second(before, after, seconds):
    """Each command's calls a second between two `INFO commandstats` sections, busiest first."""
    def calls(stats, key):
        return int(re.search(r"calls=(\d+)", stats.get(key, "calls=0")).group(1))

    rates = {}
    for key in after:
        made = calls(after, key) - calls(before, key)
        if made:
            rates[key.removeprefix("cmdstat_")] = round(made / seconds, 1)
    return dict(sorted(rates.items(), key=lambda kv: -kv[1]))
