"""Import is order-independent and idempotent (hypothesis, bounded examples).

A teammate's folder is generated as records (chains of values for a few keys, keyless
facts, forget and purge tombstones; a purge takes its record's lines out, as an export
does). The same folder is imported into identical stores: at once, with its lines in
another order, in two pulls (a parent-closed part first), and twice. Every way must end
in the same readable memories with the same statuses.
"""

from __future__ import annotations

import atexit
import random
import shutil
import tempfile
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agentstate.memory.write import remember
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import open_store
from agentstate.store.init import create_store
from agentstate.store.principals import resolve_principal
from agentstate.sync.merge import import_folder
from agentstate.sync.records import FILES, Record, make_record
from agentstate.sync.shared_files import Folder

TEXTS = ["the port is 8080", "the port is 9090", "the cache is redis", "the cache is memcached",
         "logs go to stdout", "ci runs on main"]
KEYS = [None, "port", "cache"]


_TEMPLATE: list[Path] = []


def _template() -> Path:
    """One migrated store (without the skills registry: sync never reads it), made once and
    copied for every example: enough examples to reach every branch, in seconds."""
    if not _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="agentstate-sync-template-"))
        atexit.register(shutil.rmtree, folder, True)
        create_store(target=folder)
        _TEMPLATE.append(folder / ".agentstate")
    return _TEMPLATE[0]


@contextmanager
def bare_store():
    with tempfile.TemporaryDirectory(prefix="agentstate-sync-") as tmp:
        shutil.copytree(_template(), Path(tmp) / ".agentstate")
        store = open_store(Path(tmp) / ".agentstate",
                           clock=Clock(datetime(2026, 1, 15, 9, 0, tzinfo=UTC)),
                           ids=IdSource(seed=3))
        try:
            yield store
        finally:
            store.close()


@st.composite
def folders(draw):
    records: list[Record] = []
    for n in range(draw(st.integers(1, 7))):
        text = draw(st.sampled_from(TEXTS))
        key = draw(st.sampled_from(KEYS))
        parent = None
        candidates = [r for r in records if r.data["key"] == key and key is not None]
        if candidates and draw(st.booleans()):
            parent = draw(st.sampled_from(candidates))
        rel = draw(st.sampled_from(["supersedes", "contests"])) if parent else None
        records.append(make_record(
            "memory", kind="fact", key=key, scope="repo", text=text, source="tool:ci",
            principal="owner", created=f"2026-01-0{1 + n % 9}T00:00:00.000000Z",
            valid_until=None, parent=parent.id if parent else None, rel=rel, held=None))
    tombs = []
    for record in records:
        fate = draw(st.sampled_from(["keep", "keep", "forget", "purge"]))
        if fate != "keep":
            tombs.append(make_record(fate, target=record.id))
    purged = {t.data["target"] for t in tombs if t.type == "purge"}
    lines = [r for r in records if r.id not in purged] + tombs
    local = draw(st.lists(st.tuples(st.sampled_from(TEXTS), st.sampled_from(KEYS)),
                          max_size=2))
    return lines, local, draw(st.randoms(use_true_random=False))


def _folder(records: list[Record]) -> Folder:
    folder = Folder(Path("/nonexistent"))
    for record in records:
        folder.records.setdefault(record.id, record)
        folder.lines.setdefault(FILES[record.type], []).append(record.line)
    return folder


def _state(store) -> list[tuple]:
    """Every version a read can reach, with its status. Forgotten versions are left out: a
    tombstone that arrives after its record leaves a forgotten row that a tombstone
    arriving with it never inserts; either way the fact is gone."""
    rows = store.conn.execute("SELECT text, key, status FROM memories WHERE status != "
                              "'forgotten'").fetchall()
    return sorted(rows, key=repr)


def _run(local, batches) -> list[tuple]:
    with bare_store() as store:
        for text, key in local:
            remember(store, text, kind="fact", key=key, source="user",
                     principal=resolve_principal(store))
        for batch in batches:
            import_folder(store, _folder(batch), principal=resolve_principal(store))
        return _state(store)


def _parent_closed_part(records: list[Record], rng: random.Random) -> list[Record]:
    chosen = {r.id for r in records if rng.random() < 0.5}
    by_id = {r.id: r for r in records}
    changed = True
    while changed:  # a record's parent comes with it, as in any state of a teammate's folder
        changed = False
        for rid in list(chosen):
            parent = by_id[rid].data.get("parent")
            if parent in by_id and parent not in chosen:
                chosen.add(parent)
                changed = True
    return [r for r in records if r.id in chosen]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(folders())
def test_import_is_order_independent_and_idempotent(example):
    records, local, rng = example
    at_once = _run(local, [records])
    shuffled = list(records)
    rng.shuffle(shuffled)
    assert _run(local, [shuffled]) == at_once
    assert _run(local, [records, records]) == at_once
    assert _run(local, [_parent_closed_part(records, rng), shuffled]) == at_once
