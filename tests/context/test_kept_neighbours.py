"""The neighbours of the event search's hits kept between packs of a long-lived process
(context/evidence_search.py, `_neighbours`, under the event log's state: memory/indexes.py,
`event_index_state`). An event another process logs next to a hit, or a neighbour it
purges, shows in the next pack's manifest, equal to one built with nothing kept."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentstate.context.assemble import build_context
from agentstate.runs.log import append_event, start_run
from agentstate.store import kept
from agentstate.store.db import open_store

QUERY = "parser cache warm-up"


def _manifest(repo: Path, query: str = QUERY) -> list[tuple[str, str, str, str, float]]:
    """A pack's manifest (no run: every hit and neighbour is evidence), from a store opened
    afresh as each MCP call opens it."""
    store = open_store(start=repo)
    try:
        # Lexical only: on a store this small the dense ranking makes every event a hit,
        # and a hit is never a neighbour.
        pack = build_context(store, budget=8000, query=query, no_run=True, save=False,
                             principal="agent", dense=False)
        return [(e.ref, e.cls, e.decision, e.note, e.score) for e in pack.manifest]
    finally:
        store.close()


def _unkept(repo: Path, query: str = QUERY) -> list[tuple[str, str, str, str, float]]:
    kept.forget_kept()
    return _manifest(repo, query)


def _other_process(repo: Path, code: str) -> str:
    script = textwrap.dedent("""
        from agentstate.runs.log import append_event
        from agentstate.store.db import open_store
        store = open_store()
    """) + textwrap.dedent(code) + "\nstore.close()\n"
    return subprocess.run([sys.executable, "-c", script], cwd=repo, check=True,
                          env=os.environ, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def run(store):
    started, _ = start_run(store, "keep the login suite green")
    append_event(store, started.ref, "note", "lunch order for the team is sandwiches")
    append_event(store, started.ref, "note", "parser notes for the release")
    append_event(store, started.ref, "note", "the coffee machine is broken again")
    append_event(store, started.ref, "note", "the parser cache warm-up failed on the CI box")
    return started


def _neighbour_refs(manifest: list[tuple[str, str, str, str, float]]) -> set[str]:
    return {ref for ref, _, _, note, _ in manifest if note.startswith("next to ")}


def test_an_event_logged_next_to_a_hit_is_its_neighbour_in_the_next_pack(run, repo):
    # One hit: its score is the best's, whatever the log holds, so the hits read the same
    # after the write and only the log's state tells the neighbours apart.
    query = "cache warm-up"
    first = _manifest(repo, query)
    assert first == _unkept(repo, query)
    _manifest(repo, query)  # the neighbours kept for this hit from here on
    ref = _other_process(repo, f"""
        print(append_event(store, {run.ref!r}, "note", "zebra crossing repainted").ref)
    """)
    after = _manifest(repo, query)
    assert ref in _neighbour_refs(after) and ref not in _neighbour_refs(first)
    assert after == _unkept(repo, query)


def test_the_neighbours_are_kept_for_the_hits_they_were_read_for(run, repo):
    """Another query's hits have neighbours of their own: other events (a hit elsewhere in
    the run), or the same events in the same order at other scores (the two parser hits,
    scored otherwise by `parser cache`)."""
    for query in (QUERY, "lunch order sandwiches", "parser", "parser cache", QUERY):
        kept.forget_kept()
        _manifest(repo)  # the neighbours of QUERY's hits kept
        assert _manifest(repo, query) == _unkept(repo, query), query
