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
- `raw-history`: the newest events that fit.

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

if TYPE_CHECKING:
    from agentstate.store.db import Store

ARMS = ("full", "plain-search", "raw-history", "no-memory", "structured")


class Switches(TypedDict, total=False):
    """build_context's ablation switches; one left out keeps its default (on)."""

    retrieval: bool
    trajectory: bool
    read_gate: bool


# Switches of build_context per assembled arm (everything else as `context --query`).
ASSEMBLY_SWITCHES: dict[str, Switches] = {
    "full": {},
    "structured": {"read_gate": False},
    "no-memory": {"retrieval": False, "trajectory": False},
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


def check_names(names: list[str] | None, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """The names asked for, in the order given (default: all `known`); an unknown one is a
    usage error naming the choices."""
    if not names:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown {what} {unknown[0]!r}; expected some of {', '.join(known)}")
    return tuple(dict.fromkeys(names))


def check_arms(names: list[str] | None) -> tuple[str, ...]:
    """The arms asked for, in the order given (default: all); unknown names are a usage error."""
    return check_names(names, ARMS, "arm")


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

    def pack(self, arm: str, query: str, budget: int) -> ArmPack:
        started = time.perf_counter()
        if arm in ASSEMBLY_SWITCHES:
            pack = self._assembled(query, budget, ASSEMBLY_SWITCHES[arm])
        elif arm == "plain-search":
            if self._search is None:
                self._search = PlainSearch(self.lines)
            pack = self._fill(self._search.ranked(query), budget, skip_misfits=True)
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
                                      **switches)
        events = [e for e in pack.manifest if e.ref.startswith(("evt:", "mem:"))]
        refs = {e.ref for e in events if e.decision in IN_PACK}
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
                       list(dict.fromkeys(skills)))

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

