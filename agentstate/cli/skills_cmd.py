"""`agentstate skill …`: skills as versioned releases (thin layer over agentstate.skills)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstate.cli import app
from agentstate.cli.common import (
    JsonOption,
    RunOption,
    acting_as,
    cli_store,
    emit,
    parse_key_values,
    store_override,
)

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.config import ToolSettings
    from agentstate.skills.acceptance import AcceptanceReport
    from agentstate.skills.authoring import NewSkill
    from agentstate.skills.propose import Proposal
    from agentstate.skills.publishing import PublishResult
    from agentstate.skills.revocation import RevokeResult
    from agentstate.store.db import Store

skill_app = typer.Typer(
    help="Skills as versioned releases: new, validate, propose, test, publish, revoke, list, "
    "load, match, history, diff, export, push, pull. A skill is SKILL.md (Agent Skills format) "
    "plus skill.toml (triggers, steps, acceptance...); the registry is .agentstate/skills/ (git).",
    no_args_is_help=True,
)
app.add_typer(skill_app, name="skill")

ParamOption = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", help="NAME=VALUE for a skill input (repeatable)."),
]




@contextmanager
def _optional_store() -> Iterator[Store | None]:
    """The store when there is one; None otherwise (validate works without one)."""
    from agentstate.errors import StoreMissing
    from agentstate.maintenance.join import open_or_join
    from agentstate.output import info

    try:
        store, joined = open_or_join(store_override())
        if joined is not None:
            info(joined.summary())
    except StoreMissing:
        store = None
    try:
        yield store
    finally:
        if store is not None:
            store.close()


def _tools_without_store() -> ToolSettings:
    """Policy for validation outside a store: a committed .agentstate/config.toml above the
    working directory (as in a CI checkout, where state.db is not committed), else defaults."""
    from agentstate.config import CONFIG_NAME, ToolSettings, load_settings

    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        path = candidate / ".agentstate" / CONFIG_NAME
        if path.is_file():
            return load_settings(path).tools
    return ToolSettings()


# ---------------------------------------------------------------- new


@skill_app.command("new")
def skill_new(
    name: Annotated[str, typer.Argument(help="Lowercase letters, digits and hyphens.")],
    description: Annotated[
        str | None, typer.Option(help="One line: what it does and when to use it.")
    ] = None,
    path: Annotated[
        Path | None,
        typer.Option("--path", help="Write the scaffold into DIR/NAME instead of the "
                                    "registry (e.g. a skills/ folder in your repository)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Write a skill scaffold (SKILL.md, skill.toml, scripts/check.py) as a draft.

    Without --path the draft goes into the registry (.agentstate/skills/NAME/). It has no
    version until `skill publish NAME` releases it, and publish refuses it while the
    placeholders are left (the body, the description, the check whose --self-test always
    passes): write the procedure, then `skill test NAME` and `skill publish NAME`.
    """
    from agentstate.skills.authoring import new_skill

    if path is not None:
        result = new_skill(None, name, description=description, path=path, principal=None)
    else:
        with cli_store() as store:
            result = new_skill(store, name, description=description,
                               principal=acting_as(store))

    def human(console: Console, r: NewSkill) -> None:
        console.print(f"{r.name}: draft written to {r.path} (no version until it is "
                      "published)", markup=False)
        for file in r.files:
            console.print(f"  {file}", markup=False)
        if r.draft:
            console.print(f"next: replace the placeholders, then `agentstate skill test "
                          f"{r.name}` and `agentstate skill publish {r.name}`", markup=False)

    emit(result, as_json=as_json, human=human)


@skill_app.command("add")
def skill_add(
    path: Annotated[Path, typer.Argument(help="A skill folder (with SKILL.md), e.g. from "
                                              "your repository's skills/.")],
    replace: Annotated[
        bool, typer.Option("--replace", help="Overwrite a different draft of the same name.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Copy a skill folder into the registry as a candidate (then test and publish it).

    Its files are untrusted input: publishing it needs a human --approve.
    """
    from agentstate.skills.authoring import add_skill

    with cli_store() as store:
        result = add_skill(store, path, replace=replace, principal=acting_as(store))
    emit(result, as_json=as_json,
         human=lambda c, r: c.print(f"{r.name}: candidate written to {r.path} (no version "
                                    "until it is published); publish with "
                                    f"`agentstate skill publish {r.name} --approve`",
                                    markup=False))


# ---------------------------------------------------------------- validate


@skill_app.command("validate")
def skill_validate(
    targets: Annotated[
        list[str] | None,
        typer.Argument(help="Skill names (registry drafts), skill folders, or files inside "
                            "them (as pre-commit passes them). Default: every registry draft.",
                       show_default=False),
    ] = None,
    spec_only: Annotated[
        bool, typer.Option("--spec-only", help="Only the Agent Skills SKILL.md rules "
                                               "(for folders without skill.toml).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check skills against every rule; each problem names its file and line.

    SKILL.md: front matter present and valid YAML; name (1-64 chars, a-z 0-9 and single
    hyphens, equal to the folder); description (1-1024 chars); license, compatibility
    (<= 500), metadata (strings), allowed-tools (a string, and nothing the [tools] policy
    denies); no other key; referenced files exist. skill.toml: valid TOML, known keys,
    triggers, outputs, steps, failure handling and acceptance present; every program is
    declared in required_tools, on PATH and allowed by [tools] (or declared in [tools]
    definitions); placeholders declared; scripts and resources exist. Every file: no
    symlink out of the folder, within [skills] max_file_bytes / max_skill_bytes, not named
    like a [tools] program, no secret (any encoding); injected instructions are a warning
    (publish then needs --approve). `skill publish` runs these same checks.
    Exit 1 when any error is found (warnings do not fail). Works without a store, so it can
    run as the pre-commit hook `agentstate-skill-validate`.
    """
    from agentstate.errors import InvalidInput
    from agentstate.skills.authoring import validate_targets

    with _optional_store() as store:
        tools = store.settings.tools if store is not None else _tools_without_store()
        reports = validate_targets(store, tools, list(targets or []), spec_only=spec_only)
    errors = sum(len(r.errors) for r in reports)
    data = [
        {"path": r.path, "name": r.name, "ok": r.ok,
         "problems": [{"file": p.file, "line": p.line, "severity": p.severity, "rule": p.rule,
                       "message": p.message} for p in r.problems]}
        for r in reports
    ]
    if errors:
        bad = sum(1 for r in reports if not r.ok)
        message = f"{errors} error(s) in {bad} of {len(reports)} skill(s)"
        if not as_json:
            from agentstate.output import stdout_console

            console = stdout_console()
            for report in reports:
                for problem in report.problems:
                    console.print(str(problem), markup=False, highlight=False)
        raise InvalidInput(message, details={"reports": data})

    def human(console: Console, rows: list[dict[str, Any]]) -> None:
        if not rows:
            console.print("no skills to validate")
        for report, row in zip(reports, rows, strict=True):
            for problem in report.problems:
                console.print(str(problem), markup=False, highlight=False)
            console.print(f"ok  {row['path']}", markup=False, highlight=False)

    emit(data, as_json=as_json, human=human)


# ---------------------------------------------------------------- propose / test / publish


@skill_app.command("propose")
def skill_propose(
    from_run: Annotated[str, typer.Option("--from-run", help="A finished run (run:…).")],
    name: Annotated[str, typer.Option("--name", help="Name of the new skill.")],
    as_json: JsonOption = False,
) -> None:
    """Distil a candidate skill from a finished run's successful tool calls.

    goal → description; successful calls in order → steps; verification-like calls →
    acceptance. Absolute paths, temp dirs, timestamps and ids become parameters; a temp file
    or folder the run used becomes {tmp_dir}/scratchN, made by a step before its first use.
    Before the candidate is written, its steps are tried in order through the tool layer in
    a scratch copy of the work tree: a failing step refuses the proposal (exit 3, naming the
    step); steps that need a value only a person can give are not tried. Provenance points
    at the run and its events; untrusted or injected content means the candidate can only
    be published with a human --approve.
    """
    from agentstate.skills.propose import propose_from_run

    with cli_store() as store:
        proposal = propose_from_run(store, from_run, name, principal=acting_as(store))

    def human(console: Console, p: Proposal) -> None:
        console.print(f"{p.name}: candidate written to {p.path}, from {p.run} (no version "
                      "until it is published)", markup=False)
        console.print("steps:")
        for step in p.steps:
            console.print(f"  $ {step}", markup=False)
        console.print("acceptance:")
        for cmd in p.acceptance:
            console.print(f"  $ {cmd}", markup=False)
        if p.trial:
            console.print("tried in a scratch copy of the work tree:")
            for t in p.trial:
                console.print(f"  step {t['step']}: {t['status']}", markup=False)
        if p.parameters:
            console.print("parameters (accidental state stripped): "
                          + ", ".join("{" + k + "}" for k in p.parameters), markup=False)
        if p.needs_approval:
            console.print("publishing needs a human --approve:")
            for reason in p.needs_approval:
                console.print(f"  - {reason}", markup=False)
        console.print(f"next: review it, `agentstate skill test {p.name}`, "
                      f"`agentstate skill publish {p.name}`", markup=False)

    emit(proposal, as_json=as_json, human=human)


@skill_app.command("test")
def skill_test(
    target: Annotated[str, typer.Argument(help="NAME (the draft) or NAME@vN (a release).")],
    run: RunOption = None,
    param: ParamOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the acceptance commands through the tool layer and record the result.

    Each command is checked by the [tools] policy and logged as a tool event (in the current
    run, if any). Exit 0 when every command exits as expected, 1 otherwise.
    """
    from agentstate.errors import AgentStateError
    from agentstate.skills.acceptance import run_acceptance

    with cli_store() as store:
        report = run_acceptance(store, target, run_ref=run,
                                params=parse_key_values(param, "--param"))
    if not report.passed:
        if not as_json:
            from agentstate.output import stdout_console

            _print_test(stdout_console(), report)
        failed = [r.command for r in report.results if not r.ok]
        raise AgentStateError(f"{report.name}: acceptance failed: {', '.join(failed)}",
                              details={"report": _jsonable(report)})
    emit(report, as_json=as_json, human=_print_test)


def _jsonable(value: object) -> Any:
    from agentstate.output import to_jsonable

    return to_jsonable(value)


def _print_test(console: Console, report: AcceptanceReport) -> None:
    for result in report.results:
        mark = "ok  " if result.ok else "FAIL"
        where = result.event or f"tool call {result.tool_call}"
        console.print(f"{mark} $ {result.command} → {result.status} ({where})", markup=False)
        if not result.ok and result.excerpt:
            for line in result.excerpt.splitlines()[-10:]:
                console.print(f"     {line}", markup=False)
    verdict = "passed" if report.passed else "failed"
    console.print(f"{report.name} ({report.tested}, tree {(report.tree or '')[:12]}): {verdict}",
                  markup=False)


@skill_app.command("publish")
def skill_publish(
    target: Annotated[str, typer.Argument(help="NAME: publish the draft as the next version.")],
    approve: Annotated[
        bool, typer.Option("--approve", help="Approve, as a human, a candidate built from "
                                             "untrusted content (recorded with the version).")
    ] = False,
    run: RunOption = None,
    param: ParamOption = None,
    as_json: JsonOption = False,
) -> None:
    """Publish the draft: commit its folder, tag NAME/vN, record the version — together.

    Refused (exit 3, with every reason) unless validation passes and the acceptance commands
    pass for this exact content (run now unless `skill test` already passed them). Content
    from untrusted sources or that reads as injected instructions needs --approve from a
    principal with write = ["*"] (the owner by default; AGENTSTATE_PRINCIPAL=agent may not).
    """
    from agentstate.skills.publishing import publish_skill

    # A refusal lists its reasons one per line: the boundary's report does that for any
    # error whose details carry `reasons`.
    with cli_store() as store:
        result = publish_skill(store, target, approve=approve, run_ref=run,
                               principal=acting_as(store),
                               params=parse_key_values(param, "--param"))

    def human(console: Console, r: PublishResult) -> None:
        console.print(f"{r.ref} published (commit {r.commit[:12]}, tag {r.tag}, "
                      f"tree {r.tree[:12]})", markup=False)
        if r.approver:
            console.print(f"approved by {r.approver}", markup=False)
            for reason in r.reasons:
                console.print(f"  - {reason}", markup=False)

    emit(result, as_json=as_json, human=human)


@skill_app.command("revoke")
def skill_revoke(
    target: Annotated[str, typer.Argument(help="NAME (every version) or NAME@vN.")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is withdrawn (recorded).")],
    as_json: JsonOption = False,
) -> None:
    """Withdraw a version (or every version): no new loads, out of the catalog and exports.

    History stays (rows, commits, tags). After revoking NAME@vN the current version is the
    highest remaining published one (the previous release), or none.
    """
    from agentstate.skills.revocation import revoke_skill

    with cli_store() as store:
        result = revoke_skill(store, target, reason, principal=acting_as(store))

    def human(console: Console, r: RevokeResult) -> None:
        console.print(f"revoked {', '.join(r.revoked)}: {r.reason}", markup=False)
        console.print(f"current version now: {r.current or 'none (out of the catalog)'}",
                      markup=False)
        for target_name in r.exports_updated:
            console.print(f"export {target_name} updated", markup=False)

    emit(result, as_json=as_json, human=human)
