"""`sync` with nothing new skips the work (issue 24): a digest kept after a sync that found
nothing to do says so; any change to the memories, the shared files or the options makes the
next sync do the full work again."""

from __future__ import annotations

import shutil

import pytest

from agentstate.memory.forget import forget
from agentstate.memory.write import remember
from agentstate.store.principals import resolve_principal
from agentstate.sync import shared_path, sync
from agentstate.sync.shared import stored_digest
from tests.conftest import fresh_store


@pytest.fixture
def reads(monkeypatch):
    """Counts the times a sync reads the shared folder (the expensive part it skips)."""
    import agentstate.sync.shared_files as shared_files

    calls = []
    real = shared_files.read_folder

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(shared_files, "read_folder", counting)
    return calls


def _fact(store, text: str):
    return remember(store, text, kind="fact", source="user", evidence=["user"],
                    principal=resolve_principal(store))


def test_a_second_idle_sync_skips_and_any_change_brings_the_work_back(reads):
    with fresh_store() as store:
        _fact(store, "the api listens on port 8080")
        first = sync(store, principal=resolve_principal(store))
        assert first.exported == 1
        assert stored_digest(store) is None  # it wrote something: not a fixed point yet
        idle = sync(store, principal=resolve_principal(store))
        assert idle.exported == idle.imported == 0 and stored_digest(store)
        before = len(reads)
        skipped = sync(store, principal=resolve_principal(store))
        assert len(reads) == before  # the folder was not read at all
        assert skipped.exported == skipped.imported == 0
        # A new memory: exported by the next sync.
        _fact(store, "the queue is drained every night at two")
        assert sync(store, principal=resolve_principal(store)).exported == 1
        sync(store, principal=resolve_principal(store))
        # A status change without a new version (forget): its tombstone is written.
        fact = _fact(store, "deploys go out on thursdays")
        sync(store, principal=resolve_principal(store))
        sync(store, principal=resolve_principal(store))
        forget(store, fact.ref, reason="wrong", principal=resolve_principal(store))
        assert sync(store, principal=resolve_principal(store)).exported_tombstones == 1
        # Other options: never answered from the digest of the default call.
        sync(store, principal=resolve_principal(store))
        before = len(reads)
        sync(store, include_candidates=True, principal=resolve_principal(store))
        assert len(reads) == before + 1


def test_a_teammates_record_in_the_shared_folder_is_imported_after_an_idle_sync(reads):
    with fresh_store(seed=3) as theirs, fresh_store(seed=4) as ours:
        _fact(theirs, "the staging database is read only on fridays")
        sync(theirs, principal=resolve_principal(theirs))
        sync(ours, principal=resolve_principal(ours))
        sync(ours, principal=resolve_principal(ours))
        assert stored_digest(ours)
        # A pull brings the teammate's file: same store, new shared file content.
        folder = shared_path(ours)
        folder.mkdir(parents=True, exist_ok=True)
        for file in shared_path(theirs).glob("*.jsonl"):
            shutil.copyfile(file, folder / file.name)
        got = sync(ours, principal=resolve_principal(ours))
        assert got.imported == 1


def test_dry_runs_and_one_way_syncs_never_use_or_keep_the_digest(reads):
    with fresh_store() as store:
        _fact(store, "the cache lives in redis")
        sync(store, dry_run=True, principal=resolve_principal(store))
        sync(store, do_import=False, principal=resolve_principal(store))
        sync(store, do_export=False, principal=resolve_principal(store))
        assert stored_digest(store) is None
