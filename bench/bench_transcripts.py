"""Transcript import throughput (lines/s): Claude Code and Codex files through the Python API.

A synthetic session of N turns (user request, assistant text with a tool call, the tool's
result — every 10th a failing test run with a long output) is imported into a fresh store,
then imported again (every line a duplicate). Reported: lines per second for both, best of
REPEATS runs; the second import measures the idempotence check alone. Last, what a hook's
catch-up pays once the session has grown by GROWTH turns: with the read cursor (only the new
lines are read) next to a whole-file re-import of the grown file (what it cost before).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

TURNS = 1_000
GROWTH = 10
REPEATS = 3
FAILING = "\n".join(f"tests/test_{n}.py::test_case PASSED" for n in range(300)) + \
    "\nE       AssertionError: assert 1 == 2\n1 failed, 300 passed in 1.0s"


def claude_lines(turns: int) -> list[str]:
    out = []
    for n in range(turns):
        ts = f"2026-01-14T10:{n // 60 % 60:02d}:{n % 60:02d}Z"
        base = {"sessionId": "bench-session", "cwd": "/repo", "gitBranch": "main",
                "isSidechain": False, "timestamp": ts}
        out.append({**base, "type": "user", "uuid": f"u{n}",
                    "message": {"role": "user", "content": f"step {n}: check module {n}"}})
        out.append({**base, "type": "assistant", "uuid": f"a{n}", "message": {
            "role": "assistant", "content": [
                {"type": "text", "text": f"Running the tests for module {n}."},
                {"type": "tool_use", "id": f"t{n}", "name": "Bash",
                 "input": {"command": f"pytest tests/test_{n}.py"}}]}})
        output = FAILING if n % 10 == 0 else "1 passed in 0.1s"
        out.append({**base, "type": "user", "uuid": f"r{n}", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                         "content": output, "is_error": n % 10 == 0}]}})
    return [json.dumps(x) for x in out]


def codex_lines(turns: int) -> list[str]:
    out = [{"timestamp": "2026-01-12T08:00:00Z", "type": "session_meta",
            "payload": {"id": "bench-codex", "cwd": "/repo", "git": {"branch": "main"}}}]
    for n in range(turns):
        ts = f"2026-01-12T08:{n // 60 % 60:02d}:{n % 60:02d}Z"
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": f"step {n}: check module {n}"}]}})
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": f"c{n}",
            "arguments": json.dumps({"command": ["bash", "-lc", f"pytest tests/test_{n}.py"]})}})
        output = FAILING if n % 10 == 0 else "1 passed in 0.1s"
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"c{n}", "output": json.dumps(
                {"output": output, "metadata": {"exit_code": 1 if n % 10 == 0 else 0}})}})
    return [json.dumps(x) for x in out]


def _measure(agent: str, lines: list[str], more: list[str]
             ) -> tuple[float, float, float, float]:
    from agentstate.integrations.claude_code import import_claude_code
    from agentstate.integrations.codex import import_codex
    from agentstate.integrations.transcripts import ReadCursor
    from agentstate.maintenance.init import init_store
    from agentstate.store.db import open_store

    best_first = best_again = best_cursor = best_whole = float("inf")
    importer = import_claude_code if agent == "claude-code" else import_codex
    for _ in range(REPEATS):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            init_store(target=root)
            path = root / "session.jsonl"
            path.write_text("\n".join(lines) + "\n")
            store = open_store(start=root)
            try:
                started = time.perf_counter()
                importer(store, path)
                first = time.perf_counter() - started
                started = time.perf_counter()
                again = importer(store, path)
                assert again.result.imported == 0
                best_first = min(best_first, first)
                best_again = min(best_again, time.perf_counter() - started)
                cursor = ReadCursor()
                importer(store, path, cursor=cursor)
                with path.open("a") as handle:
                    handle.write("\n".join(more) + "\n")
                started = time.perf_counter()
                grown = importer(store, path, cursor=cursor)
                best_cursor = min(best_cursor, time.perf_counter() - started)
                assert grown.result.imported > 0
                started = time.perf_counter()
                importer(store, path)
                best_whole = min(best_whole, time.perf_counter() - started)
            finally:
                store.close()
    return len(lines) / best_first, len(lines) / best_again, best_cursor, best_whole


def main() -> None:
    print(f"{'format':<12} {'lines':>7} {'first import':>16} {'re-import':>16} "
          f"{f'+{GROWTH} turns: cursor':>22} {'whole file':>11}")
    for agent, make in (("claude-code", claude_lines), ("codex", codex_lines)):
        grown = make(TURNS + GROWTH)
        lines, more = grown[:len(grown) * TURNS // (TURNS + GROWTH)], \
            grown[len(grown) * TURNS // (TURNS + GROWTH):]
        first, again, cursor, whole = _measure(agent, lines, more)
        print(f"{agent:<12} {len(lines):>7} {first:>11,.0f} l/s {again:>11,.0f} l/s "
              f"{cursor * 1000:>19.0f} ms {whole * 1000:>8.0f} ms")


if __name__ == "__main__":
    main()
