"""The batched writers a sync import uses (memory/model.py `record_histories`,
memory/versions.py `add_evidence_rows`) against the one-row ones they stand for: the same
calls into two identical stores, one each way, leave the same rows."""

from __future__ import annotations

from agentstate.memory.history import record_histories, record_history
from agentstate.memory.versions import add_evidence, add_evidence_rows, insert_version
from tests.conftest import fresh_store

# Details a history row may hold: keys out of order, non-ASCII text, nesting, no text.
ENTRIES = [
    ("chain01", 1, "import", "owner", "imported", "the café opens at 8",
     {"source": "user", "record": "0f" * 16, "scope": "path:docs/naïve"}),
    ("chain01", 2, "superseded", "sync", "a newer value", None, {"record": "1e" * 16}),
    ("chain02", None, "contested", "sync", "a rival", "zone ✓", {"z": [1, "ä"], "a": None}),
    ("chain03", 1, "import", "owner", "imported", "plain", {}),
]


def _history(store):
    return store.conn.execute("SELECT * FROM memory_history ORDER BY hid").fetchall()


def _same_key(store):
    from agentstate.store.keys import KEY_FILE

    (store.root / KEY_FILE).write_text("cd" * 32 + "\n", encoding="ascii")


def test_record_histories_writes_what_record_history_writes_row_by_row():
    with fresh_store() as one, fresh_store() as many:
        _same_key(one)
        _same_key(many)
        for memory, version, op, actor, reason, text, detail in ENTRIES:
            record_history(one, memory, version, op, actor, reason, text, **detail)
        record_histories(many, ENTRIES)
        rows = _history(many)
        assert len(rows) == len(ENTRIES)
        assert rows == _history(one)
        assert any("naïve" in str(row) for row in rows)  # kept as written, not escaped


def _versions(store, count):
    return [insert_version(store, memory_id=f"fact{n:02d}", version=1, kind="fact", key=None,
                           scope="repo", text=f"fact number {n} holds", source="user",
                           status="active", confidence=0.9, valid_until=None,
                           supersedes=None, principal="owner", reason="test",
                           evidence=[("user", "user")] if n == 0 else [])
            for n in range(count)]


def _evidence(store):
    return (store.conn.execute("SELECT memory_row, ref, kind, added, actor FROM "
                               "memory_evidence ORDER BY rowid").fetchall(),
            store.conn.execute("SELECT row, evidence_count FROM memories ORDER BY row")
            .fetchall())


def test_add_evidence_rows_leaves_the_rows_and_counts_of_add_evidence_one_at_a_time():
    with fresh_store() as one, fresh_store() as many:
        rows = _versions(one, 4)
        assert _versions(many, 4) == rows
        # Several refs for one version, a ref it holds already, a repeat, rows out of order.
        items = [(rows[2], "evt:aaaa1111", "evt"), (rows[0], "user", "user"),
                 (rows[2], "file:docs/a.md@0123abc", "file"), (rows[1], "evt:bbbb2222", "evt"),
                 (rows[2], "evt:aaaa1111", "evt"), (rows[0], "evt:cccc3333", "evt")]
        for row, ref, kind in items:
            add_evidence(one, row, [(ref, kind)], "sync")
        add_evidence_rows(many, items, "sync")
        evidence, counts = _evidence(many)
        assert (evidence, counts) == _evidence(one)
        assert dict(counts) == {rows[0]: 2, rows[1]: 1, rows[2]: 2, rows[3]: 0}


def test_insert_scanned_versions_leaves_the_rows_of_insert_version_and_add_evidence():
    """A sync import's batch inserts versions with their evidence counted as they go in."""
    from agentstate.memory.versions import NewVersion, insert_scanned_versions

    evidence = [(), (("user", "user"),),
                (("evt:aaaa1111", "evt"), ("file:docs/a.md@0123abc", "file")),
                (("evt:bbbb2222", "evt"), ("evt:bbbb2222", "evt"), ("user", "user"))]
    versions = [NewVersion(memory_id=f"fact{n:02d}", version=1, kind="fact", key=None,
                           scope="repo", text=f"fact number {n} holds", source="tool:ci",
                           status="active", confidence=0.7, valid_until=None,
                           supersedes=None, principal="sync:owner", reason="imported",
                           evidence=refs)
                for n, refs in enumerate(evidence)]
    with fresh_store() as one, fresh_store() as many:
        for v in versions:
            row = insert_version(one, memory_id=v.memory_id, version=v.version, kind=v.kind,
                                 key=v.key, scope=v.scope, text=v.text, source=v.source,
                                 status=v.status, confidence=v.confidence,
                                 valid_until=v.valid_until, supersedes=v.supersedes,
                                 principal=v.principal, reason=v.reason, evidence=[],
                                 scanned=True, line_ids=False)  # as sync/merge.py's
            add_evidence(one, row, list(v.evidence), "sync", line_ids=False)
        insert_scanned_versions(many, versions, "sync")

        def rows(store):
            return (store.conn.execute("SELECT * FROM memories ORDER BY row").fetchall(),
                    store.conn.execute("SELECT * FROM memory_evidence ORDER BY memory_row, "
                                       "ref").fetchall())

        assert rows(many) == rows(one)
        assert [count for _, count in _evidence(many)[1]] == [0, 1, 2, 2]


def test_insert_scanned_versions_indexes_counts_and_attaches_as_a_version_at_a_time():
    """The batch goes in through a temporary table and one INSERT ... SELECT a table: the
    word and trigram indexes find what they find after one insert a version, each evidence
    ref lands on its own version of a chain (two in the batch), the change counters count
    each row, and a second batch in the same transaction finds no table left behind."""
    from agentstate.memory.versions import NewVersion, insert_scanned_versions

    def version(memory_id, number, text, evidence):
        return NewVersion(memory_id=memory_id, version=number, kind="fact",
                          key="port" if memory_id == "chain" else None, scope="repo",
                          text=text, source="tool:ci", status="active", confidence=0.7,
                          valid_until=None, supersedes=number - 1 or None,
                          principal="sync:owner", reason="imported", evidence=evidence)

    batches = [[version("chain", 1, "the gateway listens on port 8080", (("evt:a1", "evt"),)),
                version("chain", 2, "the gateway listens on port 9090",
                        (("evt:b2", "evt"), ("user", "user"))),
                version("other", 1, "naïve café 東京タワー opens at eight", ())],
               [version("third", 1, "the gateway's cache is warm", (("evt:a1", "evt"),))]]
    with fresh_store() as one, fresh_store() as many:
        with one.transaction():
            for v in (v for batch in batches for v in batch):
                row = insert_version(one, memory_id=v.memory_id, version=v.version,
                                     kind=v.kind, key=v.key, scope=v.scope, text=v.text,
                                     source=v.source, status=v.status,
                                     confidence=v.confidence, valid_until=v.valid_until,
                                     supersedes=v.supersedes, principal=v.principal,
                                     reason=v.reason, evidence=[], scanned=True,
                                     line_ids=False)  # as sync/merge.py's
                add_evidence(one, row, list(v.evidence), "sync", line_ids=False)
        with many.transaction():
            for batch in batches:
                insert_scanned_versions(many, batch, "sync")

        def found(store):
            conn = store.conn
            return ([conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
                                  "ORDER BY rank, rowid", (words,)).fetchall()
                     for words in ("gateway", "port 9090", "cafe", "key:port")],
                    [conn.execute("SELECT rowid FROM memories_tri WHERE text LIKE ? "
                                  "ORDER BY rowid", (part,)).fetchall()
                     for part in ("%東京タ%", "%ort 80%", "%way's%")],
                    conn.execute("SELECT m.id, m.version, e.ref FROM memory_evidence e JOIN "
                                 "memories m ON m.row = e.memory_row ORDER BY 1, 2, 3")
                    .fetchall(),
                    conn.execute("SELECT * FROM memories ORDER BY row").fetchall(),
                    conn.execute("SELECT name FROM sqlite_temp_master").fetchall())

        assert found(many) == found(one)
        hits, trigrams, evidence, _, temporary = found(many)
        assert [len(h) for h in hits] == [3, 1, 1, 2] and all(trigrams)
        assert evidence == [("chain", 1, "evt:a1"), ("chain", 2, "evt:b2"),
                            ("chain", 2, "user"), ("third", 1, "evt:a1")]
        assert temporary == []
        # A row each: 4 versions and 4 evidence rows (the one-version path also counts
        # its evidence counts' refresh, so its counters are not the reference here).
        assert [many.value(f"SELECT changes FROM {counter}")
                for counter in ("sync_changes", "memory_changes")] == [8, 8]
