#!/usr/bin/env python3
"""The waiting page's weight and first paint, two builds side by side in one run.

    scripts/page-weight.py OLD_BIN NEW_BIN [ROUNDS]

Starts each build on a free loopback port (embedded store), makes a show with a few fans,
and loads its waiting page (with a ticket, so it paints the place) ROUNDS times (default 20)
in headless Chromium through chromedriver's W3C API, alternating builds. For each load it
reads the Navigation and Paint Timing APIs: the bytes transferred (the page and everything
it loads, each compressed as served), the HTML alone, and first contentful paint. It prints
the medians and the ratio new/old, and writes OUT/page-weight.json (OUT: target/bench).

Only what it started is ended, by PID. Needs chromium and chromedriver (scripts/test.sh
installs them).
"""
import json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time
import urllib.request

ADMIN = "page-weight-admin-token-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, url, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as res:
        text = res.read().decode()
        return json.loads(text) if text.strip().startswith(("{", "[")) else text


def wait_for(url, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except Exception:
            time.sleep(0.2)
    sys.exit(f"nothing answered at {url}")


def start_server(binary, started):
    """Starts `binary` and makes its show; the process is in `started` (under its path) from
    the moment it runs, so a failure setting it up still ends it."""
    port = free_port()
    env = dict(os.environ, ADMIN_TOKEN=ADMIN, RUST_LOG="warn", JOIN_RATE_LIMIT="0")
    proc = subprocess.Popen([binary, "--bind", f"127.0.0.1:{port}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started[binary] = (proc, None)
    base = f"http://127.0.0.1:{port}"
    wait_for(base + "/healthz")
    auth = {"Authorization": f"Bearer {ADMIN}"}
    call("PUT", base + "/orders/waiting-room/weigh/config", {"admitPerSecond": 1}, auth)
    # Closed to admission (not opened), so the fans wait and the page paints a place.
    ticket = None
    for _ in range(30):
        ticket = call("POST", base + "/orders/waiting-room/weigh/join", {})["ticketId"]
    return proc, f"{base}/wait/weigh?ticket={ticket}"


class Driver:
    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen([os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"),
                                      f"--port={self.port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        wait_for(self.base + "/status")

    def session(self):
        profile = tempfile.mkdtemp(prefix="page-weight-")
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--no-first-run", "--window-size=1100,1000",
                f"--user-data-dir={profile}", "--disable-cache", "--disk-cache-size=1"]
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": os.environ.get("CHROMIUM", "/usr/bin/chromium"), "args": args}}}}
        sid = call("POST", self.base + "/session", caps)["value"]["sessionId"]
        return sid, profile

    def measure(self, url):
        sid, profile = self.session()
        try:
            call("POST", f"{self.base}/session/{sid}/url", {"url": url})
            script = """
                const done = arguments[0];
                const read = () => {
                  const nav = performance.getEntriesByType('navigation')[0];
                  const paint = performance.getEntriesByName('first-contentful-paint')[0];
                  if (!paint || !nav || nav.loadEventEnd === 0) return setTimeout(read, 50);
                  const res = performance.getEntriesByType('resource');
                  done({
                    html: nav.transferSize, htmlBody: nav.decodedBodySize,
                    total: nav.transferSize + res.reduce((a, r) => a + r.transferSize, 0),
                    decoded: nav.decodedBodySize + res.reduce((a, r) => a + r.decodedBodySize, 0),
                    requests: 1 + res.length,
                    fcp: paint.startTime, load: nav.loadEventEnd,
                  });
                };
                read();
            """
            return call("POST", f"{self.base}/session/{sid}/execute/async",
                        {"script": script, "args": []})["value"]
        finally:
            call("DELETE", f"{self.base}/session/{sid}")
            shutil.rmtree(profile, ignore_errors=True)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    old_bin, new_bin = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    out = os.environ.get("OUT", "target/bench")
    os.makedirs(out, exist_ok=True)
    servers = {}
    driver = Driver()
    try:
        for name, binary in (("old", old_bin), ("new", new_bin)):
            servers[name] = start_server(binary, servers)
        runs = {"old": [], "new": []}
        for i in range(rounds):
            for name in (("old", "new") if i % 2 == 0 else ("new", "old")):
                runs[name].append(driver.measure(servers[name][1]))
            print(f"\rround {i + 1}/{rounds}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        driver.stop()
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    figures = {}
    for key in ("html", "htmlBody", "total", "decoded", "requests", "fcp", "load"):
        o = statistics.median(r[key] for r in runs["old"])
        n = statistics.median(r[key] for r in runs["new"])
        figures[key] = {"old": o, "new": n, "ratio": round(n / o, 3) if o else None}
        print(f"{key:>9}: old {o:>10.1f}  new {n:>10.1f}  new/old {figures[key]['ratio']}")
    with open(os.path.join(out, "page-weight.json"), "w") as f:
        json.dump({"rounds": rounds, "figures": figures, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
