"""`agentstate sync`: export and import time for 10,000 memories and 1,000 tombstones, and
the size of the shared folder.

Store A holds 11,000 repo-scope facts (a third of them in keyed chains of two versions),
each with evidence. Measured through the Python API (`agentstate.sync.sync`), one run each:
the first export (11,000 memory records), an export with nothing new (what every `sync`
pays), the export of 1,000 tombstones after A forgets 1,000 facts; then store B's import of
A's first folder (11,000 new versions), of the tombstones (1,000 forgets applied) and a
repeated import with nothing new (what the post-merge hook pays on each pull).
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

MEMORIES = 10_000
TOMBSTONES = 1_000


def _store(path: Path):
    from agentstate.store.clock import Clock, IdSource
    from agentstate.store.db import open_store
    from agentstate.store.init import create_store

    path.mkdir(parents=True)
    create_store(target=path)  # no skills registry: sync never reads it
    return open_store(path / ".agentstate", clock=Clock(datetime(2026, 1, 15, tzinfo=UTC)),
                      ids=IdSource(seed=11))


def _fill(store, count: int) -> None:
    from agentstate.memory.versions import insert_version

    with store.transaction():
        for n in range(count):
            key = f"setting-{n}" if n % 3 == 0 else None
            memory_id = f"bench{n:05d}"
            insert_version(store, memory_id=memory_id, version=1, kind="fact", key=key,
                           scope="repo", text=f"service {n} listens on port {10000 + n} "
                           f"behind the gateway of zone {n % 17}", source="user",
                           status="superseded" if key else "active", confidence=0.9,
                           valid_until=None, supersedes=None, principal="owner",
                           reason="bench", evidence=[("user", "user")])
            if key:
                insert_version(store, memory_id=memory_id, version=2, kind="fact", key=key,
                               scope="repo", text=f"service {n} listens on port {20000 + n}",
                               source="user", status="active", confidence=0.9,
                               valid_until=None, supersedes=1, principal="owner",
                               reason="bench", evidence=[("user", "user")])


def _timed(label: str, action):
    start = time.perf_counter()
    result = action()
    took = time.perf_counter() - start
    return result, took, label


def main() -> None:
    from agentstate.sync import shared_path, sync

    with tempfile.TemporaryDirectory(prefix="agentstate-bench-sync-") as tmp:
        a = _store(Path(tmp) / "a")
        count = MEMORIES + TOMBSTONES
        _fill(a, count)
        versions = a.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        print(f"  store A: {count:,} facts, {versions:,} versions (keyed chains of two)")
        rows = []
        first, took, label = _timed("export, first (all records)",
                                    lambda: sync(a, do_import=False))
        rows.append((label, took, f"{first.exported:,} memory + "
                                  f"{first.exported_evidence:,} evidence records"))
        folder = shared_path(a)
        sizes = {p.name: p.stat().st_size for p in sorted(folder.glob("*.jsonl"))}
        snapshot = {name: (folder / name).read_bytes() for name in sizes}
        _, took, label = _timed("export, nothing new", lambda: sync(a, do_import=False))
        rows.append((label, took, ""))
        from agentstate.memory.forget import forget

        with a.transaction():
            for n in range(TOMBSTONES):
                forget(a, f"mem:bench{n:05d}", reason="bench")
        tombs, took, label = _timed(f"export, {TOMBSTONES:,} tombstones",
                                    lambda: sync(a, do_import=False))
        rows.append((label, took, f"{tombs.exported_tombstones:,} tombstone records"))
        after = {p.name: p.stat().st_size for p in sorted(folder.glob("*.jsonl"))}

        b = _store(Path(tmp) / "b")
        b_folder = shared_path(b)
        b_folder.mkdir(parents=True)
        for name, data in snapshot.items():
            (b_folder / name).write_bytes(data)
        got, took, label = _timed("import, first (new versions)",
                                  lambda: sync(b, do_export=False))
        rows.append((label, took, f"{got.imported:,} versions imported"))
        for name in after:
            (b_folder / name).write_bytes((folder / name).read_bytes())
        got, took, label = _timed(f"import, {TOMBSTONES:,} tombstones",
                                  lambda: sync(b, do_export=False))
        rows.append((label, took, f"{got.tombstoned:,} versions forgotten"))
        _, took, label = _timed("import, nothing new (each pull)",
                                lambda: sync(b, do_export=False))
        rows.append((label, took, ""))
        for label, took, note in rows:
            print(f"  {label:<34} {took:>7.2f} s  {note}")
        total = sum(after.values())
        print(f"  shared folder: {total / 1e6:.2f} MB "
              + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in after.items())
              + f" ({total / versions:.0f} bytes a version)")
        a.close()
        b.close()


if __name__ == "__main__":
    main()
