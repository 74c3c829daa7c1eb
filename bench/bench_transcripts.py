"""Transcript import throughput (lines/s): Claude Code and Codex files through the Python API.

A synthetic session of N turns (user request, assistant text with a tool call, the tool's
result — every 10th a failing test run with a long output) of about 2, 10 and 50 MB is
imported into a fresh store, then imported again twice: as `import` run again does (from
where the first stopped: nothing to read) and reading every line (each a duplicate, found by
its import key before any scan). Reported: lines per second of the first, the two others as
shares of it, best of REPEATS runs (one run at 50 MB). Last, what a hook's catch-up pays
once the session has grown by GROWTH turns: with the read cursor (only the new lines are
read) next to a whole-file re-import of the grown file (what it cost before).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from bench.data import SMOKE, Texts, scaled, verdict

# Sessions of about 2, 10 and 50 MB in a full run (the range is 2-50 MB).
SIZES_MB = (2, 10, 50) if not SMOKE else (0.05,)
GROWTH = 10
REPEATS = scaled(2, 1)
LARGE_MB = 50  # sessions this large are imported once (best of one): ~a minute per format
LINES_TARGET = 3_000  # lines/s (issue 24, item 1)
AGAIN_TARGET = 0.10  # a re-import that adds nothing: at most 10% of the first


def _turn_texts(texts: Texts, n: int) -> tuple[str, str, str, bool]:
    """(prompt, assistant text, tool output, failed) of turn n: realistic sizes, every
    tenth tool output a long pytest run with a failure and a traceback."""
    failed = n % 10 == 0
    output = texts.pytest_failure() if n % 2 else texts.diff()
    if failed:
        output = "\n".join(f"tests/test_{texts.ident()}.py::test_{texts.ident()} PASSED"
                           for _ in range(150)) + "\n" + texts.traceback() + "\n" + \
            texts.pytest_failure()
    return texts.prompt(), texts.note(), output, failed


def claude_lines(turns: int) -> list[str]:
    texts = Texts(3)
    out = []
    for n in range(turns):
        prompt, said, output, failed = _turn_texts(texts, n)
        ts = f"2026-01-14T10:{n // 60 % 60:02d}:{n % 60:02d}Z"
        base = {"sessionId": "bench-session", "cwd": "/repo", "gitBranch": "main",
                "isSidechain": False, "timestamp": ts}
        out.append({**base, "type": "user", "uuid": f"u{n}",
                    "message": {"role": "user", "content": prompt}})
        out.append({**base, "type": "assistant", "uuid": f"a{n}", "message": {
            "role": "assistant", "content": [
                {"type": "text", "text": said},
                {"type": "tool_use", "id": f"t{n}", "name": "Bash",
                 "input": {"command": f"pytest tests/test_{n}.py"}}]}})
        out.append({**base, "type": "user", "uuid": f"r{n}", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                         "content": output, "is_error": failed}]}})
    return [json.dumps(x) for x in out]


def codex_lines(turns: int) -> list[str]:
    texts = Texts(4)
    out = [{"timestamp": "2026-01-12T08:00:00Z", "type": "session_meta",
            "payload": {"id": "bench-codex", "cwd": "/repo", "git": {"branch": "main"}}}]
    for n in range(turns):
        prompt, said, output, failed = _turn_texts(texts, n)
        ts = f"2026-01-12T08:{n // 60 % 60:02d}:{n % 60:02d}Z"
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": prompt}]}})
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": said}]}})
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": f"c{n}",
            "arguments": json.dumps({"command": ["bash", "-lc", f"pytest tests/test_{n}.py"]})}})
        out.append({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": f"c{n}", "output": json.dumps(
                {"output": output, "metadata": {"exit_code": 1 if failed else 0}})}})
    return [json.dumps(x) for x in out]


def lines_of_size(make, megabytes: float) -> list[str]:
    """A session of about `megabytes` MB: sized from a sample of 100 turns."""
    sample = sum(len(line) + 1 for line in make(100)) / 100
    return make(max(int(megabytes * 1e6 / sample), 5))


def parse_floor(path: Path) -> float:
    """Reading the file and parsing every line as JSON, nothing else: the floor of an
    import (same run)."""
    start = time.perf_counter()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            json.loads(line)
    return time.perf_counter() - start


def _measure(agent: str, lines: list[str], more: list[str], repeats: int = REPEATS
             ) -> tuple[float, float, float, float, float, float]:
    from agentstate.integrations.claude_code import import_claude_code
    from agentstate.integrations.codex import import_codex
    from agentstate.integrations.transcript_lines import ReadCursor
    from agentstate.maintenance.init import init_store
    from agentstate.store.db import open_store

    best_first = best_again = best_cursor = best_whole = best_floor = float("inf")
    best_reread = float("inf")
    importer = import_claude_code if agent == "claude-code" else import_codex
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            init_store(target=root)
            path = root / "session.jsonl"
            path.write_text("\n".join(lines) + "\n")
            store = open_store(start=root)
            best_floor = min(best_floor, parse_floor(path))
            try:
                started = time.perf_counter()
                importer(store, path)
                first = time.perf_counter() - started
                started = time.perf_counter()
                again = importer(store, path)  # as `import` run again: from the saved read
                assert again.result.imported == 0
                best_first = min(best_first, first)
                best_again = min(best_again, time.perf_counter() - started)
                started = time.perf_counter()
                reread = importer(store, path, cursor=ReadCursor())  # every line, key first
                assert reread.result.imported == 0
                best_reread = min(best_reread, time.perf_counter() - started)
                cursor = ReadCursor()
                importer(store, path, cursor=cursor)
                with path.open("a") as handle:
                    handle.write("\n".join(more) + "\n")
                started = time.perf_counter()
                grown = importer(store, path, cursor=cursor)
                best_cursor = min(best_cursor, time.perf_counter() - started)
                assert grown.result.imported > 0
                started = time.perf_counter()
                importer(store, path, cursor=ReadCursor())
                best_whole = min(best_whole, time.perf_counter() - started)
            finally:
                store.close()
    return best_floor, best_first, best_again, best_reread, best_cursor, best_whole


def main() -> None:
    print(f"{'format':<12} {'MB':>5} {'lines':>7} {'parse floor':>11} {'first import':>22} "
          f"{'again / whole':>16} {f'+{GROWTH} turns: cursor':>22} {'whole file':>11}")
    verdicts = []
    for agent, make in (("claude-code", claude_lines), ("codex", codex_lines)):
        for megabytes in SIZES_MB:
            grown = lines_of_size(make, megabytes)
            cut = len(grown) - GROWTH * (4 if agent == "codex" else 3)
            lines, more = grown[:cut], grown[cut:]
            size = sum(len(line) + 1 for line in lines) / 1e6
            floor, first, again, reread, cursor, whole = _measure(
                agent, lines, more, 1 if megabytes >= LARGE_MB else REPEATS)
            print(f"{agent:<12} {size:>5.1f} {len(lines):>7} {floor:>9.2f} s "
                  f"{len(lines) / first:>8,.0f} l/s {size / first:>5.2f} MB/s "
                  f"{again / first:>7.0%} {reread / first:>7.0%}  {cursor * 1000:>19.0f} ms "
                  f"{whole * 1000:>8.0f} ms")
            speed = len(lines) / first
            verdicts.append(f"{agent} {size:.0f} MB: first import {speed:,.0f} "
                            f"lines/s = {first / floor:.0f}x the parse floor (target ≥ "
                            f"{LINES_TARGET:,} lines/s: {verdict(speed >= LINES_TARGET)})")
            verdicts.append(f"{agent} {size:.0f} MB: re-import {again / first:.0%} of the first "
                            f"(target ≤ "
                            f"{AGAIN_TARGET:.0%}: {verdict(again <= AGAIN_TARGET * first)}"
                            f"; every line read again, key first: {reread / first:.0%})")
    for line in verdicts:
        print("  " + line)


if __name__ == "__main__":
    main()
