"""A pack's record is its one row (m061, context/pack_refs.py): a store made before is
converted with every manifest as it was; the readers (`load_pack`, the packs that considered
a ref, gc's retention) answer as they did from one row per fragment; a record writes a few
pages however many packs are stored."""

from __future__ import annotations

from pathlib import Path

from agentstate.context.manifest import (
    load_pack,
    packs_including,
    packs_including_each,
    save_pack,
)
from agentstate.context.pack_refs import event_refs_in_packs
from agentstate.maintenance.init import init_store
from agentstate.store.db import open_store
from tests.conftest import store_before

# (pack, created, [(seq, ref, class, score, tokens, decision, reason, position, note)]):
# rows inserted out of their order considered; one ref (non-ASCII) spelled with escapes
# in JSON; one pack's reason and note name a ref it does not list.
OLD_PACKS = [
    ("pk01", "2026-01-01T00:00:01Z", [
        (2, "evt:e2", "evidence", 0.25, 9, "dropped", "over budget", None, ""),
        (0, "mem:m1@v2", "evidence", 0.8125, 12, "included", "recall hit", 3, "ranks first"),
        (1, "file:données.md", "pinned", 1.0, 30, "included", "pinned", 0, ""),
    ]),
    ("pk02", "2026-01-01T00:00:02Z", [
        (0, "evt:e2", "evidence", 0.5, 9, "compressed", "one line", 1, ""),
        (1, "skill:lint@v1", "catalog", 0.3333333333333333, 4, "pointer", "index", 2,
         "same as evt:e9"),
    ]),
    ("pk03", "2026-01-01T00:00:03Z", [
        (0, "evt:e3", "trajectory", 0.1, 5, "included", "recent; not [\"evt:e9\"] or mem:m1@v2",
         0, "mem:m1@v2 repeats it"),
    ]),
]


def _old_store(tmp_path: Path) -> Path:
    """A repository whose store is as the migrations before m061 left it, with the packs of
    OLD_PACKS stored a row per fragment."""
    with store_before(tmp_path, "m060_compact_vectors") as (repo, conn):
        conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                     "VALUES ('run1', 'g', 'active', 't', 't')")
        for pack, created, items in OLD_PACKS:
            conn.execute("INSERT INTO packs (id, run, principal, query, budget, tokens, "
                         "text_hash, created, allocation) VALUES (?, 'run1', 'owner', '', 800, "
                         "50, 'h', ?, '[]')", (pack, created))
            conn.executemany("INSERT INTO pack_items (pack, seq, ref, class, score, tokens, "
                             "decision, reason, position, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                             "?, ?)", [(pack, *item) for item in items])
    return repo


def _as_read(items: list[tuple]) -> list[tuple]:
    """An old pack's items as `load_pack` gives them: in the order considered, no seq."""
    return [item[1:] for item in sorted(items)]


def test_an_old_store_keeps_every_manifest_as_it_was(tmp_path):
    store = open_store(start=_old_store(tmp_path))
    try:
        assert "m061_pack_items_inline" in store.upgraded
        assert not store.has_table("pack_items")
        for pack, _, items in OLD_PACKS:
            loaded = load_pack(store, f"pack:{pack}")
            assert [(i.ref, i.cls, i.score, i.tokens, i.decision, i.reason, i.position, i.note)
                    for i in loaded.items] == _as_read(items)
            assert loaded.run == "run:run1" and loaded.budget == 800
    finally:
        store.close()


def test_the_packs_that_considered_a_ref_are_found_as_before(tmp_path):
    store = open_store(start=_old_store(tmp_path))
    try:
        uses = packs_including(store, ["evt:e2"])
        assert [(u.pack, u.decision, u.reason, u.position) for u in uses] == [
            ("pack:pk02", "compressed", "one line", 1),
            ("pack:pk01", "dropped", "over budget", None)]
        # Written with escapes in the column, found by its own spelling.
        assert [u.pack for u in packs_including(store, ["file:données.md"])] == ["pack:pk01"]
        # Named only in a reason or a note: not considered there.
        assert [u.pack for u in packs_including(store, ["mem:m1@v2"])] == ["pack:pk01"]
        assert packs_including(store, ["evt:e9"]) == []
        both = packs_including(store, ["evt:e3", "skill:lint@v1"], limit=1)
        assert [(u.pack, u.ref) for u in both] == [("pack:pk03", "evt:e3")]
        assert event_refs_in_packs(store) == {"evt:e2", "evt:e3"}
    finally:
        store.close()


def test_each_ref_gets_the_packs_it_alone_would_in_one_pass(tmp_path):
    """The web view's "why not" asks for several refs at once: each gets what asking for it
    alone gives, up to its own limit, however soon another ref is answered."""
    store = open_store(start=_old_store(tmp_path))
    try:
        refs = ["evt:e2", "evt:e9", "skill:lint@v1", "evt:e3", "file:données.md"]
        for limit in (1, 2, 5):
            each = packs_including_each(store, refs, limit=limit)
            assert list(each) == refs
            for ref in refs:
                assert each[ref] == packs_including(store, [ref], limit=limit), (ref, limit)
        assert [u.pack for u in packs_including_each(store, refs, limit=1)["evt:e2"]] == [
            "pack:pk02"]
        assert [u.pack for u in packs_including_each(store, refs)["evt:e2"]] == [
            "pack:pk02", "pack:pk01"]
        assert packs_including_each(store, []) == {}
    finally:
        store.close()


def test_a_record_writes_a_few_pages_however_many_packs_are_stored(tmp_path):
    """The pages one more record puts in the log (the close's checkpoint copies each): the
    same after 80 stored packs that each listed refs of their own as after one."""
    repo = tmp_path / "repo"
    repo.mkdir()
    init_store(target=repo)
    store = open_store(start=repo)
    wal = Path(f"{store.db_path}-wal")

    def frames_of_one_record(n: int) -> int:
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        save_pack(store, _Pack([f"evt:e{n}x{k:03d}" for k in range(300)]))
        return wal.stat().st_size // (store.value("PRAGMA page_size") + 24)

    try:
        first = frames_of_one_record(0)
        for n in range(1, 80):
            frames_of_one_record(n)
        assert frames_of_one_record(80) <= first + 1 <= 8
        assert load_pack(store, "pack:" + store.value(
            "SELECT id FROM packs ORDER BY rowid DESC LIMIT 1")).items[299].ref == "evt:e80x299"
    finally:
        store.close()


class _Pack:
    """What `save_pack` reads of a pack: a manifest of dropped evidence refs."""

    def __init__(self, refs: list[str]) -> None:
        from agentstate.context.candidates import ManifestEntry

        self.query, self.run, self.principal, self.budget, self.tokens = "", None, "owner", 1, 1
        self.text_hash, self.created, self.allocation = "h", "2026-01-01T00:00:00Z", []
        self.manifest = [ManifestEntry(ref=r, cls="evidence", score=0.5, tokens=20,
                                       decision="dropped", reason="over budget the pack's "
                                       "budget", position=None) for r in refs]
