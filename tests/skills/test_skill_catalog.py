"""Catalog and discovery: current published versions only, deterministic ranking."""

from __future__ import annotations

import json

from agentstate.skills.catalog import list_catalog, match_skills, tokens


def _clear(store):
    # The store fixture runs `init`, which publishes the shipped skills; these tests build
    # their own catalog.
    store.conn.execute("DELETE FROM skill_versions")


def _row(store, name, version, status, description, triggers):
    store.db["skill_versions"].insert(
        {
            "name": name, "version": version, "status": status, "description": description,
            "triggers": json.dumps(triggers), "created": store.now(), "provenance": "{}",
            "reasons": "[]",
        }
    )


def test_empty_store_matches_nothing(store):
    _clear(store)
    assert match_skills(store, "run the tests") == []
    assert list_catalog(store) == []


def test_only_current_published_versions_are_matched(store):
    _clear(store)
    _row(store, "verify-tests", 1, "published", "Run the test suite.", ["run the tests"])
    _row(store, "verify-tests", 2, "revoked", "Run the test suite v2.", ["run the tests"])
    _row(store, "draft-thing", 1, "candidate", "Run the tests differently.", ["run the tests"])
    _row(store, "gone", 1, "revoked", "Run the tests, gone.", ["run the tests"])
    found = match_skills(store, "please run the tests before merging")
    assert [m.ref for m in found] == ["skill:verify-tests@v1"]
    assert [e.ref for e in list_catalog(store)] == ["skill:verify-tests@v1"]
    every = {e.name: e.status for e in list_catalog(store, include_all=True)}
    assert every == {"verify-tests": "published", "draft-thing": "candidate", "gone": "revoked"}


def test_ranking_prefers_triggers_and_is_deterministic(store):
    _clear(store)
    _row(store, "verify-tests", 1, "published", "Verify a repository through its tests.",
         ["run the tests", "check tests pass"])
    _row(store, "record-memory", 1, "published", "Record a memory with its evidence.",
         ["remember a fact"])
    _row(store, "resume-task", 1, "published", "Resume an interrupted task.",
         ["resume work", "continue where I left off"])
    first = match_skills(store, "Resume the interrupted refactor and run the tests", limit=3)
    again = match_skills(store, "Resume the interrupted refactor and run the tests", limit=3)
    assert first == again
    assert {m.name for m in first} == {"verify-tests", "resume-task"}
    assert match_skills(store, "remember this fact")[0].name == "record-memory"
    assert match_skills(store, "unrelated astronomy question") == []
    assert len(match_skills(store, "tests resume memory evidence", limit=1)) == 1


def test_tokens_stem_both_sides():
    assert tokens("Testing verified tests") == ["test", "verify", "test"]
