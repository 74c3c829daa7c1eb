"""`agentstate skill list|match|load|run|history|diff|export|push|pull`: using and sharing
published skills (thin layer over agentstate.skills; the lifecycle commands are in
skills_cmd)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli.common import (
    JsonOption,
    RunOption,
    acting_as,
    cli_store,
    emit,
    parse_key_values,
)
from agentstate.cli.skills_cmd import ParamOption, skill_app
from agentstate.output import shorten, to_jsonable
from agentstate.skills.status import SkillStatus

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.skills.catalog import CatalogEntry, SkillMatch
    from agentstate.skills.export import ExportResult
    from agentstate.skills.history import SkillHistory
    from agentstate.skills.load import LoadedSkill, SkillRun
    from agentstate.skills.remote import RemoteResult


# ---------------------------------------------------------------- catalog


@skill_app.command("list")
def skill_list(
    all_: Annotated[
        bool, typer.Option("--all", help="Also skills with no published version "
                                         "(candidates, revoked).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """The catalog: name, current version, status and a one-line description.

    A skill whose required tools cannot run here (not allowed, not found, or no longer
    declared in [tools]) is marked unavailable with the reason: it is not matched, not
    offered in context or resume packs, and `skill load` refuses it (exit 3)."""
    from agentstate.skills.catalog import list_catalog

    with cli_store() as store:
        entries = list_catalog(store, include_all=all_)

    def human(console: Console, rows: list[CatalogEntry]) -> None:
        if not rows:
            console.print("no published skills (see `agentstate skill new`, `skill propose`)")
            return
        width = max(len(e.ref) for e in rows)
        for e in rows:
            status = "" if e.status == SkillStatus.PUBLISHED else f" [{e.status}]"
            console.print(f"{e.ref:<{width}}  {shorten(e.description, 100)}{status}",
                          markup=False, highlight=False)
            if e.unavailable:
                console.print(f"{'':<{width}}  [unavailable] {e.unavailable}",
                              markup=False, highlight=False)

    emit(entries, as_json=as_json, human=human)


@skill_app.command("match")
def skill_match(
    task: Annotated[str, typer.Argument(help="The task, in words.")],
    limit: Annotated[int, typer.Option(help="At most this many skills.")] = 3,
    as_json: JsonOption = False,
) -> None:
    """Discovery: published skills ranked by their triggers and description for a task."""
    from agentstate.errors import InvalidInput
    from agentstate.skills.catalog import match_skills

    if limit < 1:
        raise InvalidInput("--limit must be at least 1")
    with cli_store() as store:
        matches = match_skills(store, task, limit=limit)

    def human(console: Console, rows: list[SkillMatch]) -> None:
        if not rows:
            console.print("no published skill matches")
            return
        for m in rows:
            console.print(f"{m.ref}  {m.score:.2f}  {shorten(m.description, 90)}", markup=False)

    emit(matches, as_json=as_json, human=human)


@skill_app.command("load")
def skill_load(
    target: Annotated[str, typer.Argument(help="NAME (current version) or NAME@vN.")],
    run: RunOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a published skill's body and resources; record the load against its version.

    Appends a `skill_load` event (version and tree hash) to the run (the current one by
    default) and a skill_loads row. Revoked versions do not load (exit 3).
    """
    from agentstate.skills.load import load_skill

    with cli_store() as store:
        loaded = load_skill(store, target, run_ref=run, principal=acting_as(store))
        work_tree = str(store.work_tree)

    def human(console: Console, s: LoadedSkill) -> None:
        trust = f"approved by {s.approver}" if s.approver else "published"
        console.print(f"<!-- agentstate {s.ref} · {trust} · tree {s.tree[:12]} -->",
                      markup=False, highlight=False)
        console.print(f"<!-- {{skill}} = {s.folder} ; {{repo}} = {work_tree} -->",
                      markup=False, highlight=False)
        console.print(s.body.rstrip(), markup=False, highlight=False)
        if s.resources:
            console.print(f"\nResources (in {s.folder}):", markup=False)
            for rel in s.resources:
                console.print(f"  {rel}", markup=False)
        console.print("\nRun its commands through the tool layer: agentstate exec -- COMMAND",
                      markup=False)
        recorded = f"{s.event} in {s.run}" if s.event else "no active run: load row only"
        console.print(f"<!-- end {s.ref}; load recorded: {recorded} -->", markup=False,
                      highlight=False)

    emit(loaded, as_json=as_json, human=human)


@skill_app.command("run")
def skill_run(
    target: Annotated[str, typer.Argument(help="NAME (current version) or NAME@vN.")],
    step: Annotated[int | None, typer.Option("--step", help="Only step N (1-based).")] = None,
    param: ParamOption = None,
    run: RunOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run a published skill's step commands through the tool layer, stopping at the first
    failure. `{skill}` is the release's folder; inputs come from --param or their defaults.

    Exit 0 when every step ran and exited 0, 1 otherwise (each step is a logged tool call).
    """
    from agentstate.errors import AgentStateError
    from agentstate.skills.load import run_skill_steps

    with cli_store() as store:
        result = run_skill_steps(store, target, step=step,
                                 params=parse_key_values(param, "--param"), run_ref=run)

    def human(console: Console, r: SkillRun) -> None:
        for s in r.steps:
            mark = "ok  " if s.ok else "FAIL"
            console.print(f"{mark} step {s.step}: $ {s.command} → {s.status} "
                          f"({s.event or 'tool call ' + s.tool_call})", markup=False)
            for line in (s.stdout + s.stderr).rstrip().splitlines()[-20:]:
                console.print(f"     {line}", markup=False, highlight=False)

    if not result.ok:
        if not as_json:
            from agentstate.output import stdout_console

            human(stdout_console(), result)
        failed = next(s for s in result.steps if not s.ok)
        raise AgentStateError(f"{result.ref}: step {failed.step} failed ({failed.status})",
                              details={"result": to_jsonable(result)})
    emit(result, as_json=as_json, human=human)


@skill_app.command("history")
def skill_history_cmd(
    name: Annotated[str, typer.Argument(help="Skill name.")],
    as_json: JsonOption = False,
) -> None:
    """Every version of a skill: status, commit, approver, revocation, loads; and tests."""
    from agentstate.skills.history import skill_history

    with cli_store() as store:
        history = skill_history(store, name)

    def human(console: Console, h: SkillHistory) -> None:
        for v in h.versions:
            line = f"{v.ref}  {v.status:<9}  "
            if v.commit:
                line += f"commit {v.commit[:10]}  published {(v.published or '')[:19]}  "
            line += f"loads {v.loads}"
            if v.approver:
                line += f"  approved by {v.approver}"
            console.print(line, markup=False, highlight=False)
            if v.status == SkillStatus.REVOKED:
                console.print(f"    revoked {(v.revoked or '')[:19]} by {v.revoked_by}: "
                              f"{v.revoke_reason}", markup=False, highlight=False)
            for reason in v.reasons:
                console.print(f"    approval needed: {reason}", markup=False, highlight=False)
        console.print(f"current: {h.current or 'none'}", markup=False)
        if h.draft_changed:
            console.print(f"draft in {h.draft} differs from the current version", markup=False)

    emit(history, as_json=as_json, human=human)


@skill_app.command("diff")
def skill_diff_cmd(
    name: Annotated[str, typer.Argument(help="Skill name.")],
    version_a: Annotated[str, typer.Argument(help="vN")],
    version_b: Annotated[str, typer.Argument(help="vM")],
    as_json: JsonOption = False,
) -> None:
    """The git diff between two released versions of a skill."""
    from agentstate.skills.history import skill_diff

    with cli_store() as store:
        text = skill_diff(store, name, version_a, version_b)
    emit({"name": name, "from": version_a, "to": version_b, "diff": text},
         as_json=as_json,
         human=lambda c, d: c.print(d["diff"] or "(no differences)", markup=False,
                                    highlight=False))


@skill_app.command("export")
def skill_export(
    target: Annotated[
        str, typer.Option("--target", help="agents (.agents/skills/) or claude "
                                           "(.claude/skills/).")
    ],
    as_json: JsonOption = False,
) -> None:
    """Write current published versions where agents discover skills; remove revoked ones.

    Only folders agentstate exported are ever replaced or removed (tracked in
    .agentstate-export.json); a hand-made skill of the same name is left alone.
    """
    from agentstate.skills.export import export_skills

    with cli_store() as store:
        result = export_skills(store, target)

    def human(console: Console, r: ExportResult) -> None:
        console.print(f"exported to {r.path}", markup=False)
        for ref in r.written:
            console.print(f"  wrote {ref}", markup=False)
        for ref in r.unchanged:
            console.print(f"  unchanged {ref}", markup=False)
        for name in r.removed:
            console.print(f"  removed {name} (no current published version)", markup=False)
        for name in r.skipped:
            console.print(f"  skipped {name} (a folder not written by agentstate)", markup=False)

    emit(result, as_json=as_json, human=human)



# ---------------------------------------------------------------- sharing (push, pull)

RemoteArgument = Annotated[
    str | None,
    typer.Argument(help="A remote of this repository (default: origin), a URL or a path. "
                        "Skills travel under refs/agentstate/skills/, never as branches or "
                        "tags of the repository."),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Say what would move; change nothing.")
]
SkipConflictsOption = Annotated[
    bool, typer.Option("--skip-conflicts", help="Leave out each NAME/vN that names different "
                                                "commits here and on the remote (listed as "
                                                "refused) instead of stopping.")
]


def _print_remote(verb: str) -> Callable[[Console, RemoteResult], None]:
    def human(console: Console, r: RemoteResult) -> None:
        moved = r.pushed if verb == "push" else r.pulled
        head = "would " + verb if r.dry_run else verb + "ed"
        console.print(f"{head} {len(moved)} release(s) and {len(r.revoked)} revocation(s) "
                      f"{'to' if verb == 'push' else 'from'} {r.remote}", markup=False)
        for ref in moved:
            console.print(f"  {verb} {ref}", markup=False, highlight=False)
        for ref in r.revoked:
            console.print(f"  revoked {ref}", markup=False, highlight=False)
        for note in r.notes:
            console.print(f"  {note}", markup=False, highlight=False)
        if r.refused:
            from agentstate.output import warn

            for item in r.refused:
                what = ("needs --approve" if item.approval_required
                        else "conflict, left out" if item.conflict else "refused")
                warn(f"{item.ref} {what}: {'; '.join(item.reasons)}")
    return human


@skill_app.command("push")
def skill_push(
    remote: RemoteArgument = None,
    dry_run: DryRunOption = False,
    skip_conflicts: SkipConflictsOption = False,
    as_json: JsonOption = False,
) -> None:
    """Send releases and revocations to a git remote (one atomic push).

    Every release the remote lacks goes to refs/agentstate/skills/tags/NAME/vN, every
    revocation to refs/agentstate/skills/revoked/NAME/vN; skills shipped with agentstate stay
    home. If a NAME/vN on the remote is a different commit, nothing is pushed (exit 3)
    unless --skip-conflicts leaves that version out.
    """
    from agentstate.skills.remote import push_skills

    with cli_store() as store:
        result = push_skills(store, remote, dry_run=dry_run, skip_conflicts=skip_conflicts)
    emit(result, as_json=as_json, human=_print_remote("push"))


@skill_app.command("pull")
def skill_pull(
    remote: RemoteArgument = None,
    approve: Annotated[
        bool, typer.Option("--approve", help="Take in releases that need a human approval "
                                             "(recorded; only a principal that may approve).")
    ] = False,
    dry_run: DryRunOption = False,
    skip_conflicts: SkipConflictsOption = False,
    as_json: JsonOption = False,
) -> None:
    """Take in releases and revocations from a git remote.

    Each release passes the publish checks here (validation, file checks, secrets; not its
    acceptance commands — `skill test NAME@vN` runs them); one that fails, or needs --approve,
    is listed and left out. A revocation from the remote blocks loads here. If a NAME/vN
    names different commits here and on the remote, nothing is applied (exit 3) unless
    --skip-conflicts leaves that version out.
    """
    from agentstate.skills.remote_pull import pull_skills

    with cli_store() as store:
        result = pull_skills(store, remote, approve=approve, dry_run=dry_run,
                                 principal=acting_as(store),
                             skip_conflicts=skip_conflicts)
    emit(result, as_json=as_json, human=_print_remote("pull"))
