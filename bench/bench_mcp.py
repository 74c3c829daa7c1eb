"""`agentstate mcp`: start-up and the `context` call on the large context store (100,000
realistic events, 10,000 memories of which a tenth are pinned preferences, 200 skills).

Measured through a real MCP client over stdio, as an agent talks to it: start-up is the time
from spawning the server to the end of the `initialize` handshake (next to `python -c pass`
and `agentstate --help` in the same run); the call is the round trip of a `context` tool
call (budget 8000) on the warm server, median of several, next to the same `build_context`
called in this process (the domain work alone). Targets (issue 24): call ≤ 40 ms, start-up
≤ 0.4 s.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from bench.bench_context import SIZES, build_store
from bench.data import python_floor, scaled, verdict, wall

CALLS = scaled(15, 1)
STARTS = scaled(5, 1)
CALL_TARGET_S = 0.040
START_TARGET_S = 0.4


def _client_figures(repo: Path) -> tuple[list[float], list[float]]:
    """(start-up times, context call times) through the stdio client."""
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "agentstate", "mcp"],
                                   env=dict(os.environ, NO_COLOR="1"), cwd=str(repo))
    starts, calls = [], []
    with start_blocking_portal() as portal:
        for n in range(STARTS):
            began = time.perf_counter()
            with portal.wrap_async_context_manager(stdio_client(params)) as (read, write):
                with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                    portal.call(session.initialize)
                    starts.append(time.perf_counter() - began)
                    if n:
                        continue
                    for _ in range(CALLS + 1):  # the first call is not counted
                        began = time.perf_counter()
                        result = portal.call(lambda: session.call_tool(
                            "context", {"budget": 8000}))
                        calls.append(time.perf_counter() - began)
                        if result.is_error:
                            raise SystemExit(f"mcp context failed: {result.content}")
    return starts, calls[1:]


def _in_process(repo: Path) -> float:
    from agentstate.context.assemble import build_context
    from agentstate.store.db import open_store

    def once() -> None:
        store = open_store(start=repo)
        try:
            build_context(store, budget=8000, principal="agent")
        finally:
            store.close()

    once()
    times = []
    for _ in range(CALLS):
        began = time.perf_counter()
        once()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def _handler_in_process(repo: Path) -> float:
    """The server's own `context` handler in this process (StoreService: the store opened
    and closed per call, the idle connection held between calls), p50 of the answer; what
    the server runs once a call is answered (a checkpoint every few answers) is not counted
    but runs between samples, as in the server."""
    from agentstate.integrations.mcp_server import StoreService
    from agentstate.integrations.mcp_tools import _context

    service = StoreService(str(repo), "agent")
    args = {"run": None, "budget": 8000, "query": None}

    def once() -> None:
        envelope, _ = service.run_sync(lambda: service.envelope(
            "context", lambda store: _context(store, args, "agent")))
        if not envelope["ok"]:
            raise SystemExit(f"the context handler failed: {envelope}")

    try:
        once()
        service.run_sync(service.after_answer)
        times = []
        for _ in range(CALLS):
            began = time.perf_counter()
            once()
            times.append(time.perf_counter() - began)
            service.run_sync(service.after_answer)
    finally:
        service.shutdown()
    return statistics.median(times)


def main() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("  the mcp SDK is not installed: skipped")
        return
    events = SIZES[-1]
    repo = build_store(Path("unused"), events)
    base = python_floor()
    helps = statistics.median(wall([sys.executable, "-m", "agentstate", "--help"])
                              for _ in range(max(STARTS, 1)))
    starts, calls = _client_figures(repo)
    inproc = _in_process(repo)
    handler = _handler_in_process(repo)
    start, call = statistics.median(starts), statistics.median(calls)
    print(f"  store: {events:,} events; python -c pass {base * 1000:.0f} ms, agentstate --help "
          f"{helps * 1000:.0f} ms (same run)")
    print(f"  start-up to initialized: {start * 1000:.0f} ms = {start / base:.1f}x python "
          f"(target ≤ {START_TARGET_S * 1000:.0f} ms: {verdict(start <= START_TARGET_S)})")
    print(f"  context call (budget 8000), round trip: p50 {call * 1000:.1f} ms, max "
          f"{max(calls) * 1000:.1f} ms (target ≤ {CALL_TARGET_S * 1000:.0f} ms: "
          f"{verdict(call <= CALL_TARGET_S)})")
    print(f"  the same build_context in this process (open, assemble, save the manifest): "
          f"{inproc * 1000:.1f} ms; the server adds {(call - inproc) * 1000:+.1f} ms")
    print(f"  the server's handler in this process (the same, with the idle connection the "
          f"server holds; what it runs after an answer not counted): {handler * 1000:.1f} "
          f"ms; the round trip adds {(call - handler) * 1000:+.1f} ms")
