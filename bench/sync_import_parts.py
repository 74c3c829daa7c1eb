"""Where the CPU of a first `sync` import goes, next to its floor, in one process.

    python bench/sync_import_parts.py [FACTS]     # 11,000 by default, as bench_sync.py

bench_sync.py's stores: store A's first export is copied into store B's shared folder, the
floor (`import_floor`: the same version and evidence rows inserted into a fresh store, each
table in one statement; and beside it the floor of earlier runs, a statement a row) is
timed, then B's import, split into the SQL statements it runs (timed on the connection), the
secret scan of each record (timed where it is called: sync/fields_scan.py, or sync/merge.py
in a tree from before it) and the injection check (timed where it is called: sync/arrival.py,
or sync/merge.py in a tree from before it),
reading and checking the folder (timed alone, on the same files, before the import) and the
rest: the per-record Python. CPU time (`time.process_time`) throughout.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any


class _TimedConnection:
    """A connection whose statements add their CPU time to `parts["sql"]` (a COMMIT too;
    iterating a cursor's rows is not counted)."""

    def __init__(self, conn: Any, parts: Counter[str]) -> None:
        self._conn, self._parts = conn, parts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def _timed(self, method: Callable[..., Any], *args: Any) -> Any:
        start = time.process_time()
        try:
            return method(*args)
        finally:
            self._parts["sql"] += time.process_time() - start

    def execute(self, *args: Any) -> Any:
        return self._timed(self._conn.execute, *args)

    def executemany(self, *args: Any) -> Any:
        return self._timed(self._conn.executemany, *args)


def _timing(parts: Counter[str], label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            parts[label] += time.process_time() - start
    return timed


def _scanning_module() -> Any:
    """The module whose `find_secrets` an import calls: sync/fields_scan.py, or merge.py
    itself in a tree from before it (the bench runs on both, alternated)."""
    try:
        import agentstate.sync.fields_scan as scanning
    except ImportError:
        import agentstate.sync.merge as scanning
    return scanning


def _injection_module() -> Any:
    """The module whose `find_injection` an import calls: sync/arrival.py, or merge.py in a
    tree from before it."""
    try:
        import agentstate.sync.arrival as checking
    except ImportError:
        import agentstate.sync.merge as checking
    return checking


def measure(facts: int) -> tuple[Counter[str], float, float, float]:
    """(parts, the import's CPU s, the floor's CPU s, the per-row floor's CPU s) for a
    folder of `facts` facts."""
    from agentstate.store.principals import resolve_principal
    from agentstate.sync import shared_path, sync
    try:
        from agentstate.sync.shared_files import read_folder
    except ImportError:  # a tree from before the files had their own module
        from agentstate.sync.records import read_folder
    from bench.bench_sync import _fill, _store, import_floor

    parts: Counter[str] = Counter()
    scanning, checking = _scanning_module(), _injection_module()
    real = scanning.find_secrets, checking.find_injection
    with tempfile.TemporaryDirectory(prefix="agentstate-import-parts-") as tmp:
        a = _store(Path(tmp) / "a")
        _fill(a, facts)
        sync(a, do_import=False, principal=resolve_principal(a))
        b = _store(Path(tmp) / "b")
        folder = shared_path(b)
        folder.mkdir(parents=True)
        for file in shared_path(a).glob("*.jsonl"):
            (folder / file.name).write_bytes(file.read_bytes())
        floor_store = _store(Path(tmp) / "floor")
        start = time.process_time()
        import_floor(a, floor_store)
        floor = time.process_time() - start
        per_row_store = _store(Path(tmp) / "floor-per-row")
        start = time.process_time()
        import_floor(a, per_row_store, staged=False)
        per_row = time.process_time() - start
        start = time.process_time()
        read_folder(folder)
        parts["folder read and checked"] = time.process_time() - start
        scanning.find_secrets = _timing(parts, "secret scan", scanning.find_secrets)
        checking.find_injection = _timing(parts, "injection check", checking.find_injection)
        b.db.conn = _TimedConnection(b.db.conn, parts)  # type: ignore[assignment]
        try:
            start = time.process_time()
            sync(b, do_export=False, principal=resolve_principal(b))
            took = time.process_time() - start
        finally:
            scanning.find_secrets, checking.find_injection = real
            b.db.conn = b.db.conn._conn  # type: ignore[attr-defined]
        for store in (a, b, floor_store, per_row_store):
            store.close()
    parts["per-record Python (the rest)"] = took - sum(parts.values())
    return parts, took, floor, per_row


def main() -> None:
    facts = int(sys.argv[1]) if len(sys.argv) > 1 else 11_000
    parts, took, floor, per_row = measure(facts)
    print(f"first import of {facts:,} facts: {took:.3f} s CPU = {took / floor:.2f}x its "
          f"floor ({floor:.3f} s); {took / per_row:.2f}x the floor of earlier runs, a "
          f"statement a row ({per_row:.3f} s)")
    for label, seconds in parts.most_common():
        print(f"  {label:<30} {seconds:6.3f} s  {seconds / floor:5.2f}x the floor")


if __name__ == "__main__":
    main()
