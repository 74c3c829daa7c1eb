"""`agentstate trace REF`: follow cross-layer references both ways.

    pack  → its fragments (decision, reason, position) → memory versions → their evidence
            (events, files at commits, the user)
    mem   → every version of the chain, each with its evidence; the packs that considered it
    evt   → the event; the packs that considered it; the memories drawn from it
    skill → its versions; the runs that loaded each; the packs that listed it
    run   → its packs and its skill loads

With this a wrong answer can be diagnosed: the fact was never assembled (no pack lists it, or
only as dropped), it was assembled but not used (included at some position), or its source is
stale (a superseded version, an evidence event that a later one superseded).

Reads only, and only through the owning domains: run and event lookups (runs/lookups.py),
memory versions and the memories drawn from events (memory/model.py), skill versions and
loads (skills/records.py, skills/load.py), packs (context/manifest.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentstate.context.manifest import load_pack, packs_including, packs_of_run
from agentstate.errors import NotFound, Refused
from agentstate.memory.model import versions_citing, versions_drawn_from
from agentstate.memory.status import MemoryStatus
from agentstate.output import shorten
from agentstate.runs.lookups import (
    event_id_at,
    event_ids_of_run,
    find_event,
    first_superseding_event,
    resolving_events,
    run_goal,
)
from agentstate.skills.load import loads_by_event, loads_in_run, loads_of_version
from agentstate.skills.records import find_version, version_numbers
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref, parse_position, parse_ref

MAX_LISTED = 50  # per relation; the JSON says how many more there were


@dataclass
class TraceNode:
    ref: str
    relation: str           # how this node relates to its parent ("root" for the root)
    summary: str            # one line a person reads
    detail: dict[str, Any] = field(default_factory=dict)
    children: list[TraceNode] = field(default_factory=list)


def trace(store: Store, ref: str, *, principal: Principal | str) -> TraceNode:
    """The trace of `ref` as `principal` sees it: the read gate applies to every memory it
    prints (a memory the principal may not read is named, its text withheld; tracing one
    directly is refused, as `memory show` refuses it)."""
    from agentstate.store.principals import acting

    who = acting(store, principal)
    at = parse_position(ref)
    if at is not None:  # `run:ID#N`, as a pack's evidence labels an event (`#N`)
        event_id = event_id_at(store, *at)
        if event_id is None:
            raise NotFound(f"no event {ref.strip()}")
        ref = make_ref("evt", event_id)
    parsed = parse_ref(ref)
    if parsed.kind == "pack":
        return _trace_pack(store, str(parsed), who)
    if parsed.kind == "mem":
        return _trace_memory(store, str(parsed), who)
    if parsed.kind == "evt":
        return _trace_event(store, str(parsed), who)
    if parsed.kind == "skill":
        return _trace_skill(store, parsed.id, parsed.version)
    return _trace_run(store, str(parsed), who)


# ---------------------------------------------------------------- helpers




def _use_node(use: Any, name_fragment: bool = False) -> TraceNode:
    where = f" at position {use.position}" if use.position is not None else ""
    run = f" ({use.run})" if use.run else ""
    # For a memory chain, several versions may sit in one pack: say which one this row is.
    what = f"{use.ref} " if name_fragment else ""
    return TraceNode(
        ref=use.pack, relation="considered in",
        summary=f"{what}{use.decision}{where}, reason {use.reason}{run}, {use.created[:19]}",
        detail={"decision": use.decision, "reason": use.reason, "position": use.position,
                "run": use.run, "created": use.created, "fragment": use.ref},
    )


def _event_node(store: Store, ref: str, relation: str) -> TraceNode:
    event = find_event(store, ref.removeprefix("evt:"))
    if event is None:
        return TraceNode(ref, relation, "event not found (purged or from another store)")
    superseded_by = first_superseding_event(store, event.id)
    detail = {"run": event.run, "seq": event.seq, "kind": event.kind,
              "source": event.source, "ts": event.ts}
    stale = ""
    if superseded_by:
        detail["superseded_by"] = make_ref("evt", superseded_by)
        stale = f" — STALE: superseded by {detail['superseded_by']}"
    body = shorten(event.text, 90)
    if event.collected_at:  # `agentstate gc` kept the row (it is cited) and removed the body
        detail.update({"collected_at": event.collected_at, "body_hash": event.body_hash})
        body = f"(body collected by gc at {event.collected_at[:19]}; hash {event.body_hash})"
    return TraceNode(ref, relation,
                     f"{event.kind} by {event.source} in {event.run}, {event.ts[:19]}: "
                     f"{body}{stale}", detail)


def _evidence_node(store: Store, evidence: Any) -> TraceNode:
    if evidence.ref.startswith("evt:"):
        node = _event_node(store, evidence.ref, "evidence")
    elif evidence.ref == "user":
        node = TraceNode("user", "evidence", "stated by the user")
    else:
        node = TraceNode(evidence.ref, "evidence", f"{evidence.kind} evidence")
    node.detail.update({"added": evidence.added, "actor": evidence.actor})
    return node


def _memory_version_node(store: Store, memory: Any, relation: str, who: Principal,
                         with_evidence: bool = True) -> TraceNode:
    if not who.can_read(memory.scope):
        return TraceNode(memory.ref, relation,
                         f"withheld: principal {who.name!r} may not read scope {memory.scope!r}",
                         {"withheld": True, "scope": memory.scope})
    flags = f", {memory.status}" if memory.status != MemoryStatus.ACTIVE else ""
    text = "(purged)" if memory.purged else shorten(memory.text, 90)
    node = TraceNode(
        memory.ref, relation,
        f"{memory.kind}{flags}, source {memory.source}, confidence {memory.confidence:.2f}, "
        f"scope {memory.scope}: {text}",
        {"status": memory.status, "kind": memory.kind, "key": memory.key,
         "scope": memory.scope, "source": memory.source, "confidence": memory.confidence,
         "created": memory.created, "last_confirmed": memory.last_confirmed,
         "supersedes": memory.supersedes},
    )
    if with_evidence:
        node.children = [_evidence_node(store, e) for e in memory.evidence[:MAX_LISTED]]
        if memory.source.startswith("evt:") and all(
            e.ref != memory.source for e in memory.evidence
        ):
            node.children.append(_event_node(store, memory.source, "source"))
    return node


def _memory_version(store: Store, ref: str) -> Any | None:
    from agentstate.memory.model import get_memory

    try:
        return get_memory(store, ref)
    except NotFound:
        return None


def _skill_version_node(store: Store, name: str, version: int, relation: str) -> TraceNode:
    found = find_version(store, name, version)
    ref = make_ref("skill", name, version)
    if found is None:
        return TraceNode(ref, relation, "skill version not found")
    revoked = found.revoked
    extra = (f", revoked {revoked[:10]}: {found.revoke_reason}"
             if found.status == SkillStatus.REVOKED and revoked else "")
    return TraceNode(ref, relation, f"{found.status}{extra} — {shorten(found.description, 70)}",
                     {"status": found.status, "commit": found.commit, "tree": found.tree,
                      "published": found.published, "revoked": revoked})


# ---------------------------------------------------------------- pack


def _trace_pack(store: Store, ref: str, who: Principal) -> TraceNode:
    pack = load_pack(store, ref)
    placed = sum(1 for i in pack.items if i.decision != "dropped")
    root = TraceNode(
        pack.ref, "root",
        f"context pack for {pack.run or '(no run)'}, {pack.tokens}/{pack.budget} tokens, "
        f"{placed} of {len(pack.items)} candidates placed, {pack.created[:19]}",
        {"run": pack.run, "principal": pack.principal, "query": pack.query,
         "budget": pack.budget, "tokens": pack.tokens, "text_hash": pack.text_hash,
         "created": pack.created, "allocation": pack.allocation},
    )
    for item in pack.items:
        where = f"#{item.position} " if item.position is not None else ""
        node = TraceNode(item.ref, "fragment",
                         f"{where}{item.cls}: {item.decision} ({item.reason}), "
                         f"{item.tokens} tokens, score {item.score:g}"
                         + (f"; {item.note}" if item.note else ""),
                         {"class": item.cls, "decision": item.decision, "reason": item.reason,
                          "position": item.position, "tokens": item.tokens,
                          "score": item.score, "note": item.note})
        if item.ref.startswith("mem:"):
            memory = _memory_version(store, item.ref)
            if memory is not None:
                node.children.append(_memory_version_node(store, memory, "memory version",
                                                          who))
        elif item.ref.startswith("evt:"):
            node.children.append(_event_node(store, item.ref, "event"))
        elif item.ref.startswith("skill:"):
            parsed = parse_ref(item.ref, expect="skill")
            if parsed.version is not None:
                node.children.append(
                    _skill_version_node(store, parsed.id, parsed.version, "skill version"))
        root.children.append(node)
    return root


# ---------------------------------------------------------------- memory


def _trace_memory(store: Store, ref: str, who: Principal) -> TraceNode:
    from agentstate.memory.model import get_chain

    parsed = parse_ref(ref, expect="mem")
    chain = get_chain(store, ref)
    hidden = sorted({m.scope for m in chain if not who.can_read(m.scope)})
    if hidden:
        names = ', '.join(map(repr, hidden))
        raise Refused(f"principal {who.name!r} may not read scope {names}")
    if parsed.version is not None and all(m.version != parsed.version for m in chain):
        raise NotFound(f"no memory {ref} (the chain has v1..v{chain[-1].version})")
    chain_ref = make_ref("mem", parsed.id)
    focus = [m for m in chain if parsed.version is None or m.version == parsed.version]
    current = [m.ref for m in chain if m.status == MemoryStatus.ACTIVE]
    root = TraceNode(
        ref, "root",
        f"memory chain {chain_ref}: {len(chain)} version(s); current "
        f"{', '.join(current) or 'none'}",
        {"versions": [m.ref for m in chain], "current": current},
    )
    for memory in chain:
        relation = "version" if memory in focus else "other version"
        root.children.append(_memory_version_node(store, memory, relation, who,
                                                  with_evidence=memory in focus))
    refs = [m.ref for m in focus] + ([chain_ref] if parsed.version is None else [])
    uses = packs_including(store, refs, limit=MAX_LISTED)
    root.children += [_use_node(u, name_fragment=True) for u in uses]
    if not uses:
        root.children.append(TraceNode("-", "considered in", "no context pack considered it"))
    return root


# ---------------------------------------------------------------- event


def _trace_event(store: Store, ref: str, who: Principal) -> TraceNode:
    event = find_event(store, ref.removeprefix("evt:"))
    if event is None:
        raise NotFound(f"no event {ref}")
    if not who.can_read(event.run):
        raise Refused(f"principal {who.name!r} may not read scope {event.run!r}")
    root = _event_node(store, ref, "root")
    root.detail["text"] = event.text
    if event.resolves:
        root.children.append(_event_node(store, event.resolves, "resolves"))
    if event.supersedes:
        root.children.append(_event_node(store, event.supersedes, "supersedes"))
    for other in resolving_events(store, event.id, limit=MAX_LISTED):
        root.children.append(_event_node(store, make_ref("evt", other), "resolved by"))
    # Memories drawn from it: as evidence, or as their source.
    for memory_ref in versions_drawn_from(store, ref, limit=MAX_LISTED):
        memory = _memory_version(store, memory_ref)
        if memory is not None:
            root.children.append(_memory_version_node(store, memory, "drawn into", who,
                                                      with_evidence=False))
    for load in loads_by_event(store, event.id):
        root.children.append(_skill_version_node(store, load.name, load.version, "loaded"))
    uses = packs_including(store, [ref], limit=MAX_LISTED)
    root.children += [_use_node(u) for u in uses]
    if not uses:
        root.children.append(TraceNode("-", "considered in", "no context pack considered it"))
    return root


# ---------------------------------------------------------------- skill


def _trace_skill(store: Store, name: str, version: int | None) -> TraceNode:
    versions = version_numbers(store, name)
    if not versions or (version is not None and version not in versions):
        wanted = make_ref("skill", name, version)
        raise NotFound(f"no skill version {wanted}" if versions else f"no skill {name!r}")
    focus = [version] if version is not None else versions
    root = TraceNode(make_ref("skill", name, version), "root",
                     f"skill {name}: version(s) {', '.join(f'v{v}' for v in versions)}",
                     {"versions": versions})
    for v in focus:
        node = _skill_version_node(store, name, v, "version")
        loads = loads_of_version(store, name, v, limit=MAX_LISTED)
        for load in loads:
            run_ref = make_ref("run", load.run) if load.run else "(no run)"
            goal = run_goal(store, load.run) if load.run else None
            event = make_ref("evt", load.event) if load.event else None
            node.children.append(TraceNode(
                run_ref, "loaded by",
                f"{load.ts[:19]}, event {event or '-'}"
                + (f": {shorten(goal, 60)}" if goal is not None else ""),
                {"event": event, "ts": load.ts, "tree": load.tree},
            ))
        if not loads:
            node.children.append(TraceNode("-", "loaded by", "no run loaded this version"))
        for use in packs_including(store, [make_ref("skill", name, v)], limit=MAX_LISTED):
            node.children.append(_use_node(use))
        root.children.append(node)
    return root


# ---------------------------------------------------------------- run


def _trace_run(store: Store, ref: str, who: Principal) -> TraceNode:
    from agentstate.runs.log import get_run, run_event_count

    run = get_run(store, ref)
    count = run_event_count(store, run)
    root = TraceNode(run.ref, "root",
                     f"run ({run.status}), {count} event(s): {shorten(run.goal, 90)}",
                     {"status": run.status, "goal": run.goal, "events": count,
                      "created": run.created, "branch": run.branch, "head": run.head})
    for pack in packs_of_run(store, run.id, limit=MAX_LISTED):
        root.children.append(TraceNode(
            pack.pack, "pack", f"{pack.tokens}/{pack.budget} tokens, {pack.created[:19]}",
            pack.as_dict()))
    for load in loads_in_run(store, run.id, limit=MAX_LISTED):
        node = _skill_version_node(store, load.name, load.version, "loaded skill")
        node.detail.update({"event": make_ref("evt", load.event) if load.event else None,
                            "ts": load.ts})
        root.children.append(node)
    event_refs = [make_ref("evt", i) for i in event_ids_of_run(store, run.id)]
    for memory_ref in versions_citing(store, event_refs, limit=MAX_LISTED):
        memory = _memory_version(store, memory_ref)
        if memory is not None:
            root.children.append(_memory_version_node(store, memory, "memory drawn from it",
                                                      who, with_evidence=False))
    return root
