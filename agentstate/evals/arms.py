"""The arms of an evaluation: the real system and its ablations, side by side on one store.

Three arms are the one assembly (`agentstate.context.assemble.build_context`, the function
`agentstate context --query Q --budget N` calls) with one part switched off; the two
baselines do not assemble a pack at all:

- `full`: the real system, exactly as `context --query` builds it;
- `structured`: memories and events without the read gate (no permission, scope, status,
  staleness or relevance checks on search hits);
- `no-memory`: pinned content and task state only (no evidence retrieval, no trajectory);
- `plain-search`: SQLite FTS5 BM25 (porter tokenizer) over the event texts, the OR of the
  query's non-stop words, best-ranked events added while they fit;
- `raw-history`: the newest events that fit;
- `dense`: the events nearest to the query by the dense model (memory/dense.py) alone;
- `hybrid`: `plain-search` and `dense` fused by reciprocal rank fusion at equal weight
  (the textbook hybrid the issue measured against).

Three more assembled arms are ablations, measured only when asked for (`--arm`):
`no-dense` (`full` with the event search kept lexical), `no-speakers` (`full` matching a
speaker's name as plain text, not as the turn's speaker field) and `no-answer-lines`
(`full` whose one-line items are the matched sentence alone).

An arm returns the refs of the events and memories whose text is in front of the model
(whole or compressed — a pointer line in the index is not the text), the warnings they
carry, and the tokens it used.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from agentstate.errors import UsageError
from agentstate.store.principals import resolve_principal

if TYPE_CHECKING:
    from agentstate.store.db import Store

ARMS = ("full", "dense", "hybrid", "plain-search", "raw-history", "no-memory", "structured")
# Measured only when named with --arm: `full` with one of its parts switched off.
ABLATIONS = ("no-dense", "no-speakers", "no-answer-lines")
# Arms that need the dense model; without it they are a usage error naming the extra.
DENSE_ARMS = ("dense", "hybrid")
# `eval scenarios` keeps its five arms: its questions are about facts and skills, where the
# dense arms' text-only packs measure nothing the plain search does not.
SCENARIO_ARMS = ("full", "plain-search", "raw-history", "no-memory", "structured")


class Switches(TypedDict, total=False):
    """build_context's ablation switches; one left out keeps its default (on)."""

    retrieval: bool
    trajectory: bool
    read_gate: bool
    dense: bool
    speakers: bool
    answer_lines: bool


# Switches of build_context per assembled arm (everything else as `context --query`).
ASSEMBLY_SWITCHES: dict[str, Switches] = {
    "full": {},
    "structured": {"read_gate": False},
    "no-memory": {"retrieval": False, "trajectory": False},
    "no-dense": {"dense": False},
    "no-speakers": {"speakers": False},
    "no-answer-lines": {"answer_lines": False},
}
IN_PACK = ("included", "compressed")


@dataclass
class ArmPack:
    """What one arm put in front of the model for one query and budget."""

    refs: set[str]        # evt: and mem: refs whose text is in the pack
    tokens: int
    seconds: float        # assembly time
    text_hash: str = ""   # assembled arms: the pack's hash (the same as `context` prints)
    # Events that were candidates but are not in the pack, with why (the manifest's
    # decision and reason); an event absent from here was never retrieved.
    left_out: dict[str, str] = field(default_factory=dict)
    # Refs in the pack that carry a warning the model reads (untrusted, contested,
    # unconfirmed); the baselines mark nothing.
    marks: dict[str, set[str]] = field(default_factory=dict)
    # Skills the pack offers (catalog lines, whole or as a pointer), in the pack's order:
    # the first is the pack's top recommendation. The baselines offer none.
    skills: list[str] = field(default_factory=list)
    # Refs in the pack as a one-line (compressed) form, with the line: the answer-visible
    # recall counts such an item only where the line shows the answer's words. Refs in the
    # pack and not here are there whole.
    lines: dict[str, str] = field(default_factory=dict)


def check_names(names: list[str] | None, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """The names asked for, in the order given (default: all `known`); an unknown one is a
    usage error naming the choices."""
    if not names:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}; expected some of {', '.join(known)}")
    return tuple(dict.fromkeys(names))


def check_arms(names: list[str] | None, known: tuple[str, ...] = ARMS) -> tuple[str, ...]:
    """The arms asked for, in the order given (default: every arm of ARMS, the dense ones
    only where the model is installed); unknown names are a usage error, and so is a dense
    arm asked for without the model."""
    from agentstate.memory.dense import load_embedder

    have_dense = load_embedder() is not None
    if not names:
        return tuple(a for a in known if have_dense or a not in DENSE_ARMS)
    chosen = check_names(names, known + ABLATIONS, "arm")
    if not have_dense and (wanted := [a for a in chosen if a in DENSE_ARMS]):
        raise UsageError(f"the {wanted[0]!r} arm needs the dense model: "
                         "pip install 'agentstate-cli[dense]'")
    return chosen


class Arms:
    """The arms for one imported conversation; built once, asked once per query and budget."""

    def __init__(self, store: Store, events: list[Any]) -> None:
        from agentstate.tokens import counter_for

        self.store = store
        self.counter = counter_for(store.settings.tokens)
        self.refs = [e.ref for e in events]
        self.lines = [e.text for e in events]
        # One count per event text (the memo caches them across runs too).
        self.costs = self.counter.count_many(self.lines) if self.lines else []
        self._search: PlainSearch | None = None
        self._index = {ref: n for n, ref in enumerate(self.refs)}

    def pack(self, arm: str, query: str, budget: int) -> ArmPack:
        started = time.perf_counter()
        if arm in ASSEMBLY_SWITCHES:
            pack = self._assembled(query, budget, ASSEMBLY_SWITCHES[arm])
        elif arm == "plain-search":
            if self._search is None:
                self._search = PlainSearch(self.lines)
            pack = self._fill(self._search.ranked(query), budget, skip_misfits=True)
        elif arm in DENSE_ARMS:
            from agentstate.memory.dense import dense_ranked, fuse

            near = [self._index[f"evt:{eid}"] for eid, _ in
                    dense_ranked(self.store, query, len(self.refs))
                    if f"evt:{eid}" in self._index]
            order = near
            if arm == "hybrid":
                if self._search is None:
                    self._search = PlainSearch(self.lines)
                order = [int(i) for i in fuse([str(i) for i in self._search.ranked(query)],
                                              [str(i) for i in near], 1.0)]
            pack = self._fill(order, budget, skip_misfits=True)
        elif arm == "raw-history":
            newest_first = list(range(len(self.lines) - 1, -1, -1))
            pack = self._fill(newest_first, budget, skip_misfits=False)
        else:
            raise UsageError(f"unknown arm {arm!r}; expected some of {', '.join(ARMS)}")
        pack.seconds = time.perf_counter() - started
        return pack

    def _assembled(self, query: str, budget: int, switches: Switches) -> ArmPack:
        # Looked up on the module at call time, so that there is one assembly and a test
        # can see this arm use it.
        from agentstate.context import assemble

        pack = assemble.build_context(self.store, query=query, budget=budget, save=False,
                                      principal=resolve_principal(self.store), **switches)
        events = [e for e in pack.manifest if e.ref.startswith(("evt:", "mem:"))]
        refs = {e.ref for e in events if e.decision in IN_PACK}
        lines = {e.ref: e.form or "" for e in events if e.decision == "compressed"}
        marks: dict[str, set[str]] = {}
        for e in events:
            if e.decision in IN_PACK and e.flags:
                marks.setdefault(e.ref, set()).update(e.flags)
        # One event can be two candidates (evidence and trajectory): every reason is kept.
        why: dict[str, set[str]] = {}
        for e in events:
            if e.ref not in refs:
                why.setdefault(e.ref, set()).add(
                    "pointer" if e.decision == "pointer" else e.reason or e.decision)
        left_out = {ref: " + ".join(sorted(reasons)) for ref, reasons in why.items()}
        skills = [e.ref for e in pack.manifest
                  if e.ref.startswith("skill:") and e.decision in (*IN_PACK, "pointer")]
        return ArmPack(refs, pack.tokens, 0.0, pack.text_hash, left_out, marks,
                       list(dict.fromkeys(skills)), lines)

    def _fill(self, order: list[int], budget: int, *, skip_misfits: bool) -> ArmPack:
        """Event texts in `order`, one per line, while they fit in `budget` tokens.

        Each line costs its own count plus one for the newline; the joined text is then
        measured with the same tokenizer and trimmed from the end if it is over (it never is
        in practice: cl100k does not merge across a newline after a word).
        """
        chosen: list[int] = []
        used = 0
        for i in order:
            cost = self.costs[i] + (1 if chosen else 0)
            if used + cost > budget:
                if skip_misfits:
                    continue
                break
            chosen.append(i)
            used += cost
        tokens = self._measure(chosen)
        while chosen and tokens > budget:
            chosen.pop()
            tokens = self._measure(chosen)
        taken = set(chosen)
        left_out = {self.refs[i]: "budget" for i in order if i not in taken}
        return ArmPack({self.refs[i] for i in chosen}, tokens, 0.0, left_out=left_out)

    def _measure(self, chosen: list[int]) -> int:
        text = "\n".join(self.lines[i] for i in chosen)
        return self.counter.count(text) if text else 0

    def close(self) -> None:
        if self._search is not None:
            self._search.close()


class PlainSearch:
    """The baseline: FTS5 BM25 with the porter tokenizer over the texts, in memory.

    A separate in-memory database, not the store's own index (which uses `unicode61` without
    stemming), so the baseline is the textbook one and cannot change when the store does.
    """

    def __init__(self, texts: list[str]) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE texts USING fts5(body, "
                          "tokenize = 'porter unicode61 remove_diacritics 2')")
        self.conn.executemany("INSERT INTO texts (rowid, body) VALUES (?, ?)",
                              [(n, t) for n, t in enumerate(texts)])

    def ranked(self, query: str) -> list[int]:
        """Indexes of the matching texts, best BM25 first (ties by position)."""
        match = or_query(query)
        if not match:
            return []
        return [r[0] for r in self.conn.execute(
            "SELECT rowid FROM texts WHERE texts MATCH ? ORDER BY rank, rowid", (match,))]

    def close(self) -> None:
        self.conn.close()


def or_query(query: str) -> str:
    """The query's non-stop words, quoted and OR'd (FTS5 syntax); '' when none is left."""
    from agentstate.memory.terms import STOP_WORDS, split_query

    words = [w for w in split_query(query)[0] if w not in STOP_WORDS]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)

