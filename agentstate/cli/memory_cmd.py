"""Memory commands: `remember`, `recall`, `forget`, `memory list|show|history|correct|confirm`,
and `run distill` (registered on the run sub-app)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import AsOption, JsonOption, acting_as, cli_store, emit, from_stdin
from agentstate.cli.runs_cmd import run_app
from agentstate.memory.status import MemoryStatus
from agentstate.output import info, shorten, warn
from agentstate.runs.status import RunStatus

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.memory.distill import DistillResult
    from agentstate.memory.forget import ForgetResult
    from agentstate.memory.history import HistoryEntry
    from agentstate.memory.model import Memory
    from agentstate.memory.recall import RecallResult
    from agentstate.memory.versions import WriteResult

memory_app = typer.Typer(
    help="Inspect and correct long-term memory (list, show, history, correct, confirm).",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")



def _say(console: Console, text: str) -> None:
    """Print user text literally: memory text may contain [brackets] rich would eat."""
    console.print(text, markup=False, highlight=False)




# What a write did, as a person would say it (the action names are the JSON's: a new
# version that `superseded` the old one is itself active; a `contested` one is not current).
_ACTIONS = {
    "superseded": "stored as the current value",
    "contested": "stored as contested: the current value stays",
}


def _write_human(console: Console, result: WriteResult) -> None:
    said = _ACTIONS.get(result.action, result.action)
    status = "" if result.status in said else f" ({result.status})"
    _say(console, f"{result.ref} {said}{status}")
    _say(console, f"  {result.reason}")
    if result.evidence_added:
        _say(console, f"  evidence: {', '.join(result.evidence_added)}")
    if result.replaced:
        _say(console, f"  superseded: {result.replaced}")
    if result.contests:
        _say(console, f"  contests the current {result.contests}")
    for dup in result.possible_duplicates:
        _say(console, f"  possible duplicate or conflict: {dup['ref']} "
                      f"(similarity {dup['similarity']:.2f}) — not merged")


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


@app.command("remember")
def remember_cmd(
    text: Annotated[str, typer.Argument(help="What to remember (one fact, preference, event "
                                             "or procedure); - reads it from stdin.")],
    kind: Annotated[str, typer.Option("--kind", "-k",
                                      help="fact, preference, event or procedure.")],
    key: Annotated[str | None, typer.Option(
        help="A slot such as test-command: a new value for the same key and scope becomes a "
             "new version (conflict rules in docs/memory.md).")] = None,
    scope: Annotated[str | None, typer.Option(
        help="repo (default), user, run:REF, branch:NAME or path:GLOB.")] = None,
    source: Annotated[str | None, typer.Option(
        help="user, model, tool:NAME, file:PATH@COMMIT or evt:REF. Default: user, or model "
             "for a principal that may not claim user (the agent).")] = None,
    evidence: Annotated[list[str] | None, typer.Option(
        "--evidence", "-e", help="evt:REF, file:PATH@COMMIT or user (repeatable); must exist.",
    )] = None,
    ttl: Annotated[str | None, typer.Option(
        help="Valid for this long: a number with s, m, h, d or w (e.g. 30d).")] = None,
    until: Annotated[str | None, typer.Option(help="Valid until this date (ISO 8601).")] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Store a memory through the write gate; says what the gate decided and why.

    Secrets are refused (exit 3) and nothing is stored. A fact or procedure without evidence
    (a hypothesis or question event is none) becomes a candidate; text that reads as
    instructions is quarantined; the same
    content refreshes the existing memory; a new value for a key makes a new version.
    """
    from agentstate.memory.write import remember

    text = from_stdin(text, "TEXT")
    with cli_store() as store:
        result = remember(store, text, kind=kind, key=key, scope=scope, source=source,
                          evidence=evidence or [], ttl=ttl, until=until,
                          principal=acting_as(store, principal))
    if not as_json and result.status in (MemoryStatus.QUARANTINED, MemoryStatus.CANDIDATE,
                                           MemoryStatus.CONTESTED):
        warn(f"{result.ref} is {result.status}: it is not in the default read set"
             if result.status != MemoryStatus.CONTESTED else
             f"{result.ref} is contested: recall shows it flagged beside {result.contests}")
    emit(result, as_json=as_json, human=_write_human)


@app.command("recall")
def recall_cmd(
    query: Annotated[str, typer.Argument(help="What to look for (any language).")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most hits to show.")] = 10,
    kind: Annotated[list[str] | None, typer.Option(
        "--kind", help="Only these kinds (repeatable or comma-separated).")] = None,
    scope: Annotated[list[str] | None, typer.Option(
        "--scope", help="Only these scopes (repeatable or comma-separated).")] = None,
    include: Annotated[str | None, typer.Option(
        help="Also show: superseded,expired,forgotten,candidate,quarantined.")] = None,
    run: Annotated[str | None, typer.Option(
        "--run", help="Rank for this run: run:REF scopes apply only to it.")] = None,
    branch: Annotated[str | None, typer.Option(
        help="Rank for this branch: branch:NAME scopes apply only to it.")] = None,
    path: Annotated[list[str] | None, typer.Option(
        "--path", help="Rank for these paths: path:GLOB scopes apply only to them.")] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search memory through the read gate.

    Ranked by BM25 relevance with recency, confidence and scope specificity; weak matches are
    cut. Expired, superseded, candidate, quarantined and forgotten memories are withheld
    unless --include names them; the answer counts what was withheld, by reason.
    """
    from agentstate.memory.recall import recall

    context = None
    if run or branch or path:
        context = {"run": run, "branch": branch, "paths": path or []}
    with cli_store() as store:
        result = recall(store, query, limit=limit, kinds=_split(kind) or None,
                        scopes=_split(scope) or None, principal=acting_as(store, principal),
                        include=_split([include] if include else None), context=context)

    def human(console: Console, r: RecallResult) -> None:
        if r.matched_nothing:
            _say(console, f"nothing matched {r.query!r}")
        for hit in r.hits:
            flags = f" [{', '.join(hit.flags)}]" if hit.flags else ""
            _say(console, f"{hit.ref} {hit.kind} · {hit.scope} · {hit.source} · "
                          f"confidence {hit.confidence:.2f} · {hit.age_days:.0f}d old{flags}")
            _say(console, f"  {shorten(hit.text, 200)}")
            details = []
            if hit.key:
                details.append(f"key {hit.key}")
            if hit.evidence:
                details.append("evidence " + ", ".join(hit.evidence))
            if hit.contests:
                details.append(f"contests the current {hit.contests}")
            if hit.contested_by:
                details.append("contested by " + ", ".join(hit.contested_by))
            if details:
                _say(console, "  " + " · ".join(details))
        if r.withheld:
            parts = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in r.withheld.items())
            _say(console, f"withheld: {parts}")

    emit(result, as_json=as_json, human=human)


@app.command("forget")
def forget_cmd(
    ref: Annotated[str | None, typer.Argument(
        help="mem:ID (every version) or mem:ID@vN (one version).")] = None,
    key: Annotated[str | None, typer.Option(help="Forget every memory with this key.")] = None,
    query: Annotated[str | None, typer.Option(
        help="Forget the current memories this query recalls (try --dry-run first).")] = None,
    scope: Annotated[str | None, typer.Option(help="Limit --key/--query to this scope.")] = None,
    reason: Annotated[str | None, typer.Option(help="Why (kept in the audit history).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would go.")] = False,
    purge: Annotated[bool, typer.Option(
        "--purge", help="Erase the text everywhere, ignoring case and spacing (tables, "
                        "search indexes, the file itself, skill drafts); only a keyed hash "
                        "stays in the history. What remains is listed in still_in.")] = False,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Forget memories: a tombstone by default (out of every default read, kept for audit);
    --purge erases the text from the database file and the files agentstate writes, lists
    where it still is (other memories, the skills registry's git objects, exports) and gives
    the git command that rewrites the registry. Purging what the user stated is owner-only."""
    from agentstate.memory.forget import forget

    with cli_store() as store:
        from agentstate.skills.export import TARGETS

        result = forget(store, ref, key=key, query=query, scope=scope, reason=reason,
                        dry_run=dry_run, purge=purge, principal=acting_as(store, principal),
                        export_dirs=[store.work_tree / t for t in TARGETS.values()])
    if not as_json and result.purge and result.wal_truncated is False:
        warn("another process is reading the store; the WAL could not be truncated fully")

    def human(console: Console, r: ForgetResult) -> None:
        verb = ("would purge" if r.purge else "would forget") if r.dry_run else (
            "purged" if r.purge else "forgot")
        _say(console, f"{verb} {len(r.targets)} version(s): {', '.join(r.targets)}")
        if r.skipped:
            _say(console, f"  already forgotten: {', '.join(r.skipped)}")
        if r.scrubbed:
            _say(console, ("  would also erase from: " if r.dry_run else "  also erased from: ")
                 + ", ".join(f"{name} ({n})" for name, n in r.scrubbed.items()))
        if r.files_scrubbed:
            _say(console, ("  would also rewrite: " if r.dry_run else "  also rewrote: ")
                 + ", ".join(r.files_scrubbed))
        if r.still_in:
            _say(console, "  the text is still in (not erased):")
            for place in r.still_in:
                _say(console, f"    {place}")
        if r.rewrite_command:
            _say(console, "  to rewrite the skills registry's history (it changes released "
                          "versions' commits):")
            _say(console, f"    {r.rewrite_command}")
        if r.vacuumed:
            _say(console, "  search indexes merged, database vacuumed, WAL truncated")
        _say(console, f"  reason: {r.reason}")

    emit(result, as_json=as_json, human=human)


@memory_app.command("list")
def memory_list(
    status: Annotated[str | None, typer.Option(
        help="active, contested, candidate, quarantined, superseded, forgotten, expired or "
             "all (default: current = active and contested).")] = None,
    kind: Annotated[str | None, typer.Option(help="fact, preference, event or procedure.")] = None,
    scope: Annotated[str | None, typer.Option(
        help="Exact scope, e.g. repo or branch:main.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", help="Most rows.")] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """List memory versions the principal may read, newest first."""
    from agentstate.memory.model import list_memories

    with cli_store() as store:
        found = list_memories(store, status=status, kind=kind, scope=scope, limit=limit,
                              principal=acting_as(store, principal))

    def human(console: Console, memories: list[Memory]) -> None:
        if not memories:
            _say(console, "no memories")
        for m in memories:
            key = f" key={m.key}" if m.key else ""
            text = "(purged)" if m.purged else shorten(m.text, 80)
            _say(console, f"{m.ref} {m.status:<11} {m.kind:<10} {m.scope}{key} "
                          f"conf {m.confidence:.2f}: {text}")

    emit(found, as_json=as_json, human=human)


@memory_app.command("show")
def memory_show(
    ref: Annotated[str, typer.Argument(help="mem:ID or mem:ID@vN.")],
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a memory: the version chain, evidence and status of each version."""
    from agentstate.memory.model import check_readable, get_chain, get_memory

    with cli_store() as store:
        focus = get_memory(store, ref)
        check_readable(store, focus, acting_as(store, principal))
        chain = get_chain(store, ref)
    data = {"ref": focus.ref, "current": focus, "versions": chain}

    def human(console: Console, _: object) -> None:
        _say(console, f"{focus.chain_ref}: {len(chain)} version(s); showing {focus.ref}")
        for m in chain:
            marker = "→" if m.ref == focus.ref else " "
            _say(console, f"{marker} {m.ref} {m.status} · {m.kind} · {m.scope} · {m.source} · "
                          f"confidence {m.confidence:.2f} · created {m.created}")
            _say(console, f"    {'(purged)' if m.purged else shorten(m.text, 200)}")
            if m.supersedes:
                _say(console, f"    follows {m.supersedes}")
            if m.evidence:
                _say(console, "    evidence: " + ", ".join(e.ref for e in m.evidence))
            if m.valid_until:
                _say(console, f"    valid until {m.valid_until}")
            if m.status_reason:
                _say(console, f"    why: {m.status_reason}")

    emit(data, as_json=as_json, human=human)


@memory_app.command("history")
def memory_history(
    ref: Annotated[str, typer.Argument(help="mem:ID (whole chain) or mem:ID@vN.")],
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """The audit trail: every gate decision with its actor, reason, time and text hash."""
    from agentstate.memory.history import get_history
    from agentstate.memory.model import check_readable, get_memory

    with cli_store() as store:
        entries = get_history(store, ref)
        check_readable(store, get_memory(store, ref), acting_as(store, principal))

    def human(console: Console, rows: list[HistoryEntry]) -> None:
        for h in rows:
            # "hmac-sha256:<hex>" (keyed) or a bare sha256 from before hashes were keyed.
            kind, _, hexdigest = (h.text_hash or "").rpartition(":")
            digest = f" {kind or 'sha256'}:{hexdigest[:12]}" if h.text_hash else ""
            _say(console, f"{h.time} {h.memory} {h.op} by {h.actor}{digest}")
            _say(console, f"    {h.reason}")

    emit(entries, as_json=as_json, human=human)


@memory_app.command("correct")
def memory_correct(
    ref: Annotated[str, typer.Argument(help="mem:ID or mem:ID@vN to correct.")],
    text: Annotated[str, typer.Argument(help="The corrected text.")],
    reason: Annotated[str | None, typer.Option(help="Why (kept in the history).")] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """A user correction: a new version from the user becomes current; the old is superseded."""
    from agentstate.memory.corrections import correct

    with cli_store() as store:
        result = correct(store, ref, text, principal=acting_as(store, principal), reason=reason)
    emit(result, as_json=as_json, human=_write_human)


@memory_app.command("confirm")
def memory_confirm(
    ref: Annotated[str, typer.Argument(help="mem:ID@vN (a candidate or contested version).")],
    evidence: Annotated[list[str], typer.Option(
        "--evidence", "-e", help="evt:REF, file:PATH@COMMIT or user (repeatable).")],
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add evidence: a candidate is promoted (conflict rules apply), a contested version
    becomes current, a current one gains confidence."""
    from agentstate.memory.corrections import confirm

    with cli_store() as store:
        result = confirm(store, ref, evidence, principal=acting_as(store, principal))
    emit(result, as_json=as_json, human=_write_human)


@run_app.command("distill")
def run_distill(
    ref: Annotated[str, typer.Argument(help="run:REF to distil.")],
    accept: Annotated[bool, typer.Option(
        "--accept", help="Store every proposal through the write gate.")] = False,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Propose what of a run deserves to outlive it (confirmed diagnoses, answers, passed
    verifications, working test/build commands), each with its evidence. Hypotheses and
    failed attempts are never proposed. Nothing is stored without --accept."""
    from agentstate.memory.distill import distill

    with cli_store() as store:
        result = distill(store, ref, accept=accept, principal=acting_as(store, principal))
    if not as_json and result.run_status == RunStatus.ACTIVE:
        info(f"note: {result.run} is still active; distil again when it is done")

    def human(console: Console, r: DistillResult) -> None:
        if not r.proposals:
            _say(console, f"nothing in {r.run} to keep beyond the run")
        for i, p in enumerate(r.proposals):
            key = f" key={p.key}" if p.key else ""
            _say(console, f"{i + 1}. {p.kind}{key} ({p.why}): {shorten(p.text, 160)}")
            _say(console, f"   evidence: {', '.join(p.evidence)}")
        for w in r.accepted:
            _say(console, f"kept {w.ref}: {w.action} ({w.status})")
        for item in r.rejected:
            _say(console, f"not kept #{item['proposal']} ({item['source']}): {item['error']}")
        if r.skipped:
            _say(console, "not proposed: " + ", ".join(f"{n} {k}" for k, n in r.skipped.items()))
        if r.proposals and not r.accepted and not r.rejected:
            _say(console, f"run `agentstate run distill {r.run} --accept` to keep them")

    emit(result, as_json=as_json, human=human)
