"""`agentstate ui`: how long each page takes on the large context store (100,000 realistic
events over 20 runs, the active run holding 10,000; 10,000 memories with candidates and
contested ones; 200 skills).

The server runs as `agentstate ui --no-browser` in its own process, as a user starts it; each
figure is the wall time of one HTTP GET of a whole page from this process (request, the
domain calls, rendering, the response read), median of several after one warm-up request.
The floor, in the same run, is the same round trip for `/favicon.ico` (the server and the
guard, no store). Pages: the runs list; the active run's timeline (first page, a page in
the middle, filtered by kind); the memory page with its review queue (first page and an
older one); what the model saw at 8,000 tokens (the page as first painted: the stored
packs and the newest one's manifest); a stored pack's manifest; the Eval page. Target
(issue 25): every page under 300 ms.

The previews "what the model saw" fetches after the first paint are measured apart: the
context pack at 8,000 tokens and the resume pack as kept by the server (the same request
again, nothing changed in the store), and the context pack assembled afresh (each request
a budget not asked before: 8,001, 8,002 …, the same work as 8,000 without the kept copy).
"""

from __future__ import annotations

import http.client
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.bench_context import SIZES, build_store
from bench.data import scaled, verdict

REPEATS = scaled(7, 1)
TARGET_S = 0.300
URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]+)")


def _start(repo: Path) -> tuple[subprocess.Popen, int, str]:
    process = subprocess.Popen([sys.executable, "-m", "agentstate", "ui", "--no-browser",
                                "--port", "18700"], cwd=repo, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        match = URL.search(line)
        if match:
            return process, int(match.group(1)), match.group(2)
    process.kill()
    raise SystemExit("agentstate ui did not start")


class _Client:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.cookie = ""
        deadline = time.monotonic() + 30
        while True:
            try:
                status, headers, _ = self.get(f"/?token={token}")
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert status == 303, status
        self.cookie = headers["set-cookie"].split(";", 1)[0]

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{self.port}",
                                           "Cookie": self.cookie})
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def timed(self, path: str, expect: int = 200, fresh: bool = False) -> float:
        """p50 of REPEATS requests after a warm-up; `fresh`: a new budget each time (see
        the module's docstring), so nothing kept by the server answers."""
        self.get(path)  # warm-up: imports, caches, the page's first compile
        times = []
        for n in range(REPEATS):
            asked = path.replace("budget=8000", f"budget={8001 + n}") if fresh else path
            began = time.perf_counter()
            status, _, body = self.get(asked)
            times.append(time.perf_counter() - began)
            if status != expect:
                raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
        return statistics.median(times)


def _targets(client: _Client) -> list[tuple[str, str]]:
    """(label, path) for each page, found through the pages themselves."""
    _, _, runs = client.get("/runs")
    run_ids = re.findall(rb'href="/runs/([a-z0-9]+)"', runs)
    counts = dict(re.findall(rb'data-ref="run:([a-z0-9]+)".*?<td class="num">(\d+)</td>', runs,
                             re.S))
    active = max(run_ids, key=lambda r: int(counts.get(r, b"0"))).decode()
    _, _, saw = client.get(f"/saw/{active}")
    packs = re.findall(rb'href="/packs/([a-z0-9]+)"', saw)
    _, _, first = client.get(f"/runs/{active}")
    seqs = [int(s) for s in re.findall(rb'<span class="muted">#(\d+) ', first)]
    middle = max(seqs[0] // 2, 1) if seqs else 1
    pages = [("runs list", "/runs"), ("timeline, first page", f"/runs/{active}"),
             ("timeline, a page in the middle", f"/runs/{active}?before={middle}"),
             ("timeline, kind=tool", f"/runs/{active}?kind=tool"),
             ("memory and review queue", "/memory"),
             ("memory, an older page (page 20)", "/memory?page=20"),
             ("what the model saw, first paint (budget 8000)", f"/saw/{active}?budget=8000"),
             ("eval", "/eval")]
    if packs:
        pages.append(("a stored pack's manifest", f"/packs/{packs[0].decode()}"))
    return pages


def _previews(client: _Client, active: str) -> list[tuple[str, str, bool]]:
    """(label, path, fresh) for what the page's script fetches after the first paint."""
    return [("context preview (budget 8000), kept", f"/saw/{active}/pack?budget=8000", False),
            ("resume pack, kept", f"/saw/{active}/resume", False),
            ("context preview, assembled afresh (budget 8001…)",
             f"/saw/{active}/pack?budget=8000", True)]


def main() -> None:
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
    except ImportError:
        print("  the ui extra is not installed: skipped")
        return
    events = SIZES[-1]
    repo = build_store(Path("unused"), events)
    # One recorded pack, so the stored-pack page has something to show.
    subprocess.run([sys.executable, "-m", "agentstate", "context", "--budget", "8000"],
                   cwd=repo, check=True, capture_output=True)
    process, port, token = _start(repo)
    try:
        client = _Client(port, token)
        # The floor: the favicon's round trip (204, no body, nothing from the store).
        floor = client.timed("/favicon.ico", expect=204)
        print(f"  store: {events:,} events; floor (GET /favicon.ico through the server and "
              f"its guard): {floor * 1000:.1f} ms (same run)")
        worst = 0.0
        pages = _targets(client)
        for label, path in pages:
            took = client.timed(path)
            worst = max(worst, took)
            print(f"  {label}: p50 {took * 1000:.0f} ms = {took / floor:.0f}x the floor")
        print(f"  slowest page {worst * 1000:.0f} ms (target ≤ {TARGET_S * 1000:.0f} ms: "
              f"{verdict(worst <= TARGET_S)})")
        active = pages[1][1].rsplit("/", 1)[1]
        for label, path, fresh in _previews(client, active):
            took = client.timed(path, fresh=fresh)
            print(f"  after the first paint, {label}: p50 {took * 1000:.0f} ms = "
                  f"{took / floor:.0f}x the floor")
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
