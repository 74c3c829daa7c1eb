"""What the dense extra costs a `context` process: with vectors and a kept ranking in the
store, a `context` imports neither numpy nor the model's tokenizer or weight loader
(memory/dense_static.py, memory/dense_queries.py). Checked in real subprocesses, by the
modules they end with, and by what they stored (the dense signal did run)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from agentstate.memory import dense

HEAVY = ("numpy", "tokenizers", "safetensors")


def _heavy_after(argv: list[str], cwd) -> list[str]:
    code = (
        f"import sys; sys.argv = ['agentstate', *{argv!r}]\n"
        "from agentstate.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("HEAVY"))
    return json.loads(line.removeprefix("HEAVY ").replace("'", '"'))


def _counts(repo) -> tuple[int, int, int]:
    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        return tuple(conn.execute(  # type: ignore[return-value]
            "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM event_vectors), "
            "(SELECT count(*) FROM dense_queries WHERE ranked IS NOT NULL)").fetchone())
    finally:
        conn.close()


def test_context_on_a_small_store_loads_neither_numpy_nor_the_model(cli, initialised):
    cli.ok("run", "start", "make the flaky parser test pass")
    for text in ("the parser test fails on a trailing comma",
                 "pytest -k parser: 1 failed, 40 passed",
                 "the tokenizer splits the comma off the last field"):
        cli.ok("log", "note", text)
    for argv in (["context", "--budget", "8000"], ["context", "--budget", "8000"],
                 ["context", "--query", "why does the comma break parsing", "--budget",
                  "8000"]):
        assert _heavy_after(argv, initialised) == [], argv
    events, vectors, ranked = _counts(initialised)
    assert vectors == events and ranked >= 2  # the dense signal ran, and kept its answers


def test_a_repeated_context_on_a_large_store_needs_no_numpy(cli, initialised):
    from agentstate.runs.log import append_event, start_run
    from agentstate.store.db import open_store

    store = open_store(start=initialised)
    try:
        run, _ = start_run(store, "make the flaky parser test pass")
        for i in range(dense.PY_VECTORS + 50):
            append_event(store, run.ref, "note", f"step {i}: parser field {i % 97} checked")
    finally:
        store.close()
    cli.ok("context", "--budget", "8000")  # embeds the store (numpy, once) and keeps
    append_event_cli = ["log", "note", "the comma case passes now"]
    cli.ok(*append_event_cli)  # one new event: embedded by the numpy-free reader
    assert _heavy_after(["context", "--budget", "8000"], initialised) == []
    events, vectors, ranked = _counts(initialised)
    assert vectors == events and ranked >= 1
