"""What a long-lived process keeps between packs (the MCP server: document frequencies per
term, query coverage per text, the one-line forms of the same events) changes nothing a
pack says: on a varied store, with other processes writing between the calls, every pack
built with the kept values is byte for byte the pack a process with nothing kept builds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from agentstate.context.assemble import build_context
from agentstate.runs.log import append_event, start_run
from agentstate.store.db import open_store

# Long enough (over event_items.WHOLE_TURN_CHARS) to be cut to one line around what a query
# matched, with each query's words in other sentences: the lines differ by query.
TEXTS = [
    "pytest tests/test_login.py::test_timeout failed: TimeoutError after 30 s in the fixture. "
    "Nothing else in the log looked wrong, and the rest of the suite passed as before. "
    "The parser cache was cold when the workers started. Retried twice, same result.",
    "Kate: did the login fixture ever pass on the parser branch? I think it timed out. "
    "Bob: it passed once on Monday, when nobody else was running anything on the box. "
    "Kate: then the cache warm-up is the likely difference between the workers.",
    "hypothesis: the parser cache is shared between workers and the fixture races it. "
    "If so, pinning one worker per cache directory makes the failure go away entirely, "
    "and the login timeout is only the first test to notice the race.",
    "登录接口在高并发时返回错误 while testing the login timeout. 这个错误只在负载下出现。 "
    "The cache directory was shared by every worker of the suite at that time.",
    "decided to pin the parser version; the cache key includes it now. Next: rerun the "
    "suite under load, with the fixture's timeout raised, and compare the worker logs.",
]
QUERIES = [None, "why does the login timeout fixture fail", "parser cache workers",
           "登录接口 错误"]
BUDGETS = (600, 8000)


def _kept(repo) -> list[str]:
    """Every pack, one after the other, in this process (which keeps what it may)."""
    texts = []
    for query in QUERIES:
        for budget in BUDGETS:
            store = open_store(start=repo)
            try:
                texts.append(build_context(store, budget=budget, query=query, save=False,
                                           principal="agent").text)
            finally:
                store.close()
    return texts


ONE_QUERY = textwrap.dedent("""
    import json, sys
    from agentstate.context.assemble import build_context
    from agentstate.store.db import open_store
    query, budgets = json.loads(sys.argv[1])
    texts = []
    for budget in budgets:
        store = open_store()
        texts.append(build_context(store, budget=budget, query=query, save=False,
                                   principal="agent").text)
        store.close()
    print(json.dumps(texts))
""")


def _afresh(repo) -> list[str]:
    """Every pack, those of each query built by a process of their own."""
    texts: list[str] = []
    for query in QUERIES:
        out = subprocess.run([sys.executable, "-c", ONE_QUERY, json.dumps([query, BUDGETS])],
                             cwd=repo, check=True, env=os.environ, capture_output=True,
                             text=True).stdout
        texts += json.loads(out)
    return texts


WRITER = textwrap.dedent("""
    import sys
    from agentstate import api
    from agentstate.runs.log import append_event, current_run
    from agentstate.store.db import open_store
    store = open_store()
    run = current_run(store)
    n = int(sys.argv[1])
    for i in range(n * 7):
        append_event(store, run.ref, "observation",
                     f"round {n}: the login fixture timed out again ({i}); parser cache cold",
                     source="tool:pytest")
    api.remember(store, f"the parser cache must be warmed before the login suite ({n})",
                 principal="owner", kind="fact")
    # What the essentials pin and list: a preference, an open question.
    api.remember(store, f"keep the parser cache per worker ({n})", principal="owner",
                 kind="preference")
    append_event(store, run.ref, "question", f"is the parser cache shared by workers ({n})?")
    store.close()
""")


def test_packs_with_what_the_process_kept_are_the_packs_of_a_fresh_process(store, repo):
    run, _ = start_run(store, "fix the flaky login timeout in the parser cache")
    for n in range(40):
        for text in TEXTS:
            append_event(store, run.ref, "note" if n % 3 else "observation", f"{text} ({n})")
    append_event(store, run.ref, "question", "does the parser cache survive a restart?")
    first = _kept(repo)
    assert first == _kept(repo) == _afresh(repo)
    # Another process logs and remembers between the calls.
    subprocess.run([sys.executable, "-c", WRITER, "1"], cwd=repo, check=True, env=os.environ)
    kept = _kept(repo)
    assert kept == _afresh(repo)
    assert kept != first  # the writes are in the packs
    assert all("keep the parser cache per worker (1)" in text for text in kept)
    assert all("is the parser cache shared by workers (1)?" in text for text in kept)
