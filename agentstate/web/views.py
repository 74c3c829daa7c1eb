"""What each page shows: the same domain calls the CLI makes, gathered for a template.

Each function takes an open store and plain arguments and returns a dict for its template.
No SQL here (the web layer owns no table): the run log, memory, context and skills modules
answer, as they answer `events`, `memory list`, `context`, `trace` and `skill history`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from agentstate.errors import InvalidInput, NotFound
from agentstate.store.db import Store
from agentstate.store.refs import parse_ref

# The ui acts as the store's owner: it is the user at their own machine (issue 25).
PRINCIPAL = "owner"
RUNS_SHOWN = 200
MEMORIES_SHOWN = 100  # newest first; the filters narrow it (the page says when it is cut)
REVIEW_SHOWN = 50  # per status; the banner counts them all
APART_SHOWN = 50  # expired and forgotten, shown apart
PACKS_SHOWN = 50
LOADS_SHOWN = 50
# A pack at 8,000 tokens on a large store considers thousands of candidates; rendering every
# row costs more than the rest of the page (measured: ~0.6 s for 2,500 rows on a loaded
# machine). Every row that got in is shown; of the dropped ones the first DROPPED_SHOWN, with
# the counts by reason above and `rows=all` for the rest.
DROPPED_SHOWN = 100


# How a view keeps what it assembled between requests (web/previews.py): (key, build) → value.
Remember = Callable[[Hashable, Callable[[], Any]], Any]


def _no_keeping(key: Hashable, build: Callable[[], Any]) -> Any:
    return build()


def review_counts(store: Store) -> dict[str, int]:
    from agentstate.memory.review import review_queue_counts

    return review_queue_counts(store, PRINCIPAL)


# ---------------------------------------------------------------- runs


def runs_page(store: Store) -> dict[str, Any]:
    from agentstate.runs.log import list_runs
    from agentstate.runs.run_listing import event_counts_by_run, marked_current_run_id

    runs = list_runs(store, limit=RUNS_SHOWN)
    counts = event_counts_by_run(store)
    return {"runs": runs, "counts": {r.ref: counts.get(r.ref.removeprefix("run:"), 0)
                                     for r in runs},
            "current": marked_current_run_id(store)}


def timeline_page(store: Store, run_id: str, *, kind: str | None, session: str | None,
                  before: int | None) -> dict[str, Any]:
    from agentstate.runs.log import get_run, readable_events
    from agentstate.runs.records import EVENT_KINDS
    from agentstate.runs.run_listing import event_counts_by_kind
    from agentstate.runs.timeline import event_page
    from agentstate.runs.tool_results import tool_failed

    run = get_run(store, f"run:{run_id}")
    page = event_page(store, run.ref, kind=kind or None, session=session or None,
                      before=before)
    events = readable_events(store, page.events, PRINCIPAL, run.ref)
    return {"run": run, "page": page, "events": events, "kind": kind or "",
            "session": session or "", "kinds": sorted(EVENT_KINDS),
            "counts": event_counts_by_kind(store, run),
            "failed": {e.ref for e in events if e.kind == "tool" and tool_failed(e.meta)}}


def event_view(store: Store, event_id: str) -> dict[str, Any]:
    from agentstate.runs.log import get_event, readable_events

    event = get_event(store, f"evt:{event_id}")
    readable_events(store, [event], PRINCIPAL, event.run)  # refuses what owner may not read
    return {"event": event}


# ---------------------------------------------------------------- what the model saw


def saw_page(store: Store, run_id: str, *, budget: str | None, query: str | None,
             why: str | None, all_rows: bool = False, now: bool = False,
             remember: Remember = _no_keeping) -> dict[str, Any]:
    """The page around the previews. By default the first paint holds what is stored —
    the run, the stored packs of past turns and the newest one's manifest — and the
    previews (a context pack at the chosen budget and query, the resume pack) are fetched
    by the page's script from saw_pack / saw_resume; `now` (the no-JavaScript path)
    assembles them inline."""
    from agentstate.context.assemble import parse_budget
    from agentstate.context.manifest import load_pack, packs_of_run
    from agentstate.runs.log import get_run

    run = get_run(store, f"run:{run_id}")
    # A budget that is not a number is said now; one below the pinned floor, by the preview.
    parse_budget(budget or None, store.settings.context.default_budget)
    stored = packs_of_run(store, run.ref.removeprefix("run:"), limit=PACKS_SHOWN)
    data: dict[str, Any] = {"run": run, "budget": budget or "", "query": query or "",
                            "why": why or "", "stored": stored, "pack": None,
                            "resume": None, "last": None}
    if now:
        return {**data, **saw_pack(store, run_id, budget=budget, query=query, why=why,
                                   all_rows=all_rows, remember=remember),
                **saw_resume(store, run_id, remember=remember)}
    if stored:
        last = load_pack(store, stored[0].pack)
        data["last"] = {"pack": last, **_manifest_view(
            store, [_entry(e) for e in last.items], None, all_rows=False)}
    return data


def saw_pack(store: Store, run_id: str, *, budget: str | None, query: str | None,
             why: str | None, all_rows: bool = False, remember: Remember = _no_keeping
             ) -> dict[str, Any]:
    """A context pack at the chosen budget and query, with its manifest and the why-not
    answer. A preview, not a turn: it is not recorded (`agentstate context` records the
    packs a model is given, and those are the stored packs)."""
    from agentstate.context.assemble import build_context

    run_ref = f"run:{run_id}"
    pack = remember(("pack", run_ref, budget or "", query or ""), lambda: build_context(
        store, run=run_ref, budget=budget or None, query=query or None, principal=PRINCIPAL,
        save=False))
    entries = [_entry(e) for e in pack.manifest]
    return {"pack": pack, **_manifest_view(store, entries, why, all_rows)}


def saw_resume(store: Store, run_id: str, *, remember: Remember = _no_keeping
               ) -> dict[str, Any]:
    from agentstate.context.resume import build_pack
    from agentstate.runs.log import get_run

    run = get_run(store, f"run:{run_id}")
    return {"resume": remember(("resume", run.ref), lambda: build_pack(
        store, run.ref, principal=PRINCIPAL))}


def pack_page(store: Store, pack_id: str, *, why: str | None, all_rows: bool = False
              ) -> dict[str, Any]:
    from agentstate.context.manifest import load_pack

    stored = load_pack(store, f"pack:{pack_id}")
    return {"pack": stored,
            **_manifest_view(store, [_entry(e) for e in stored.items], why, all_rows)}


def _manifest_view(store: Store, entries: list[dict[str, Any]], why: str | None,
                   all_rows: bool) -> dict[str, Any]:
    """The manifest as shown (see DROPPED_SHOWN), its counts by reason, and the why-not
    answer (over every row, shown or not)."""
    shown, dropped_seen = [], 0
    for e in entries:
        if e["decision"] == "dropped":
            dropped_seen += 1
            if dropped_seen > DROPPED_SHOWN and not all_rows:
                continue
        shown.append(e)
    return {"entries": shown, "total": len(entries), "hidden": len(entries) - len(shown),
            "dropped": _dropped(entries), "why": why or "",
            "answer": why_not(store, why, entries) if why else None,
            "max_tokens": max([e["tokens"] for e in entries] or [1]) or 1}


def _entry(e: Any) -> dict[str, Any]:
    return {"ref": e.ref, "class": e.cls, "kind": e.kind, "score": e.score,
            "tokens": e.tokens, "decision": e.decision, "reason": e.reason,
            "position": e.position, "note": e.note}


def _dropped(entries: list[dict[str, Any]]) -> dict[str, int]:
    """Reason → how many items were not included whole for it."""
    out: dict[str, int] = {}
    for e in entries:
        if e["decision"] != "included":
            label = f"{e['decision']}: {e['reason']}"
            out[label] = out.get(label, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def why_not(store: Store, wanted: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Where X fell out of this pack: the manifest rows for a ref (`mem:ID` matches every
    version), or — for words — the memories and events that match them through the same
    search the packs use, each with this pack's decision about it (none: never a
    candidate here), and the other packs that considered it."""
    from agentstate.context.manifest import packs_including_each

    wanted = wanted.strip()
    if not wanted:
        raise InvalidInput("say what to look for: a ref (evt:…, mem:…) or words")
    refs: list[str]
    try:
        parsed = parse_ref(wanted)
        refs = [str(parsed)]
        by_words = False
    except (InvalidInput, NotFound, ValueError):
        refs = _matching_refs(store, wanted)
        by_words = True
    here = {ref: [e for e in entries if e["ref"] == ref or e["ref"].startswith(ref + "@")
                  or ref.startswith(e["ref"] + "@")] for ref in refs}
    # The other packs of every ref this pack did not consider, read in one pass.
    elsewhere = packs_including_each(store, [ref for ref in refs if not here[ref]], limit=5)
    rows = [{"ref": ref, "entries": here[ref], "elsewhere": elsewhere.get(ref, [])}
            for ref in refs]
    return {"query": wanted, "by_words": by_words, "rows": rows}


def _matching_refs(store: Store, words: str) -> list[str]:
    """Memories (every status the owner may read) and events matching the words."""
    from agentstate.memory.recall import recall
    from agentstate.memory.search import search_events

    found = recall(store, words, limit=5, principal=PRINCIPAL,
                   include=("superseded", "expired", "forgotten", "candidate", "quarantined"))
    refs = [hit.ref for hit in found.hits]
    refs += [hit.ref for hit in search_events(store, words, limit=5)]
    return refs


# ---------------------------------------------------------------- trace


def trace_page(store: Store, ref: str) -> dict[str, Any]:
    from agentstate.context.trace import trace

    return {"root": trace(store, ref, principal=PRINCIPAL), "ref": ref}


# ---------------------------------------------------------------- memory


def memory_page(store: Store, *, status: str | None, scope: str | None, page: int = 1
                ) -> dict[str, Any]:
    """One page of memories (MEMORIES_SHOWN, newest first; one more is read to know
    whether an older page exists), the review queue and the expired and forgotten ones
    apart. Every list is read in index order up to its last row (m031)."""
    from agentstate.memory.model import list_memories

    if page < 1:
        raise InvalidInput(f"page must be 1 or more, not {page}")
    listed = list_memories(store, status=status or None, scope=scope or None,
                           limit=MEMORIES_SHOWN + 1, offset=(page - 1) * MEMORIES_SHOWN,
                           principal=PRINCIPAL)
    queue = [m for s in ("contested", "candidate")
             for m in list_memories(store, status=s, limit=REVIEW_SHOWN, principal=PRINCIPAL)]
    apart = {s: list_memories(store, status=s, limit=APART_SHOWN, principal=PRINCIPAL)
             for s in ("expired", "forgotten")}
    return {"memories": listed[:MEMORIES_SHOWN], "review": queue, "apart": apart,
            "status": status or "", "shown": MEMORIES_SHOWN, "page": page,
            "older": len(listed) > MEMORIES_SHOWN, "scope": scope or "",
            "statuses": ["current", "active", "contested", "candidate", "quarantined",
                         "superseded", "forgotten", "expired", "all"]}


def memory_detail(store: Store, ref: str) -> dict[str, Any]:
    from agentstate.memory.history import get_history
    from agentstate.memory.model import check_readable, get_chain, get_memory

    focus = get_memory(store, ref)
    check_readable(store, focus, PRINCIPAL)
    return {"focus": focus, "chain": get_chain(store, ref), "history": get_history(store, ref)}


def memory_action(store: Store, action: str, ref: str, *, reason: str,
                  evidence: str) -> str:
    """An owner's review decision, through the gates `memory confirm` and `forget` use.
    Returns what happened, in a sentence."""
    from agentstate.memory.corrections import confirm
    from agentstate.memory.forget import forget
    from agentstate.memory.model import get_memory

    memory = get_memory(store, ref)
    reason = reason.strip()
    if action == "confirm":
        # The owner's click is the user's word; an event ref may be given instead.
        refs = [r.strip() for r in evidence.split(",") if r.strip()] or ["user"]
        result = confirm(store, memory.ref, refs, principal=PRINCIPAL)
        return f"{result.ref}: {result.action} ({result.status}). {result.reason}"
    if action == "reject":  # this version only; a contested one leaves the current value
        done = forget(store, memory.ref, reason=reason or "rejected in agentstate ui",
                      principal=PRINCIPAL)
        return f"rejected {', '.join(done.targets)}: {done.reason}"
    if action == "forget":  # the whole memory, every version (a tombstone, not a purge)
        done = forget(store, memory.chain_ref, reason=reason or "forgotten in agentstate ui",
                      principal=PRINCIPAL)
        return f"forgot {', '.join(done.targets)}: {done.reason}"
    raise NotFound(f"no action {action!r}")


# ---------------------------------------------------------------- skills


def skills_page(store: Store) -> dict[str, Any]:
    from agentstate.skills.catalog import list_catalog

    return {"skills": list_catalog(store, include_all=True)}


def skill_page(store: Store, name: str, *, a: str | None, b: str | None) -> dict[str, Any]:
    from agentstate.skills.history import skill_diff, skill_history
    from agentstate.skills.load import loads_of_version

    history = skill_history(store, name)
    versions = [f"v{v.version}" for v in history.versions]
    diff = None
    if a and b:
        diff = skill_diff(store, history.name, a, b)
    elif len(versions) >= 2:
        a, b = versions[-2], versions[-1]
        diff = skill_diff(store, history.name, a, b)
    loads = {v.ref: loads_of_version(store, history.name, v.version, limit=LOADS_SHOWN)
             for v in history.versions}
    return {"history": history, "versions": versions, "a": a or "", "b": b or "",
            "diff": diff, "loads": loads}


# ---------------------------------------------------------------- eval


def eval_page(store: Store, *, report: str | None) -> dict[str, Any]:
    """The newest kept report of each kind drawn as --plot draws it (or the one asked
    for), and the list of every kept report."""
    from agentstate.evals.results import get_report, latest_reports, list_reports
    from agentstate.web.charts import figure

    shown = [get_report(store, report)] if report else latest_reports(store)
    return {"reports": [{"stored": s, "figure": figure(s.kind, s.report)} for s in shown],
            "history": list_reports(store)}
