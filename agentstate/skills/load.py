"""`skill load`: hand a published version's body to the agent and record the load.

The body and resources are read from the release (the tag), never from the draft. Each load
appends a `skill_load` event to the run (with the version and tree hash) and a `skill_loads`
row: the skill-instance → skill-version reference `agentstate trace skill:NAME@vN` follows.
Resources are checked out under `.agentstate/skills/.releases/NAME/vN/` so scripts can be run
(through `agentstate exec`, never directly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput, NotFound, Refused
from agentstate.runs.log import append_event, current_run, resolve_run
from agentstate.runs.status import RunStatus
from agentstate.skills import contract_toml, release_files, skill_md
from agentstate.skills import skill_file as mf
from agentstate.skills.records import (
    SkillVersion,
    current_release,
    get_version,
    parse_target,
    release_folder,
    versions_of,
)
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store
from agentstate.store.principals import Principal, acting


@dataclass
class LoadedSkill:
    ref: str
    name: str
    version: int
    tree: str
    commit: str
    description: str
    body: str
    folder: str  # where the release's files are checked out
    resources: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    approver: str | None = None
    event: str | None = None
    run: str | None = None
    load_id: str = ""


def _pick_version(store: Store, target: str) -> SkillVersion:
    name, version = parse_target(target)
    if version is not None:
        row = get_version(store, name, version)
        if row.status == SkillStatus.REVOKED:
            current = current_release(store, name)
            hint = f"; the current version is {current.ref}" if current else ""
            raise Refused(f"{row.ref} is revoked ({row.revoke_reason}){hint}")
        if row.status == SkillStatus.CANDIDATE:
            raise InvalidInput(f"{row.ref} is a candidate, not published; only published "
                               "versions load")
        return row
    release = current_release(store, name)
    if release is not None:
        return release
    rows = versions_of(store, name)
    if not rows:
        raise NotFound(f"no skill named {name!r} (see `agentstate skill list`)")
    if any(r.status == SkillStatus.REVOKED for r in rows):
        raise Refused(f"skill {name!r} is revoked; no version may be loaded")
    raise InvalidInput(f"skill {name!r} has no published version yet (publish it first)")


def _refuse_unavailable(store: Store, row: SkillVersion) -> None:
    """A version whose required tools cannot run here is refused (exit 3), saying why: its
    procedure would only fail at the first step that needs the missing tool."""
    from agentstate.skills.catalog import unavailable_reasons

    why = unavailable_reasons(store, [{"name": row.name, "version": row.version,
                                       "tree": row.tree}]).get((row.name, row.version))
    if why:
        raise Refused(f"{row.ref} is unavailable here: {why} (see `agentstate doctor`)")


def load_skill(store: Store, target: str, *, run_ref: str | None = None,
               principal: Principal | str) -> LoadedSkill:
    """Load `target` for `principal`. A load is recorded in a run (a `skill_load` event), so
    the principal must be allowed to write that run's scope (`run:ID`) — the same rule for
    the CLI, the MCP server and the library, since they all come here."""
    who = acting(store, principal)
    row = _pick_version(store, target)
    _refuse_unavailable(store, row)
    run = resolve_run(store, run_ref) if run_ref else current_run(store)
    if run is not None and run.status != RunStatus.ACTIVE:
        raise InvalidInput(f"{run.ref} has ended ({run.status}); name an active run")
    if run is not None and not who.can_write(run.ref):
        raise Refused(f"principal {who.name!r} may not write scope {run.ref!r}: a skill load "
                      f"is recorded in the run (write: {', '.join(who.write) or 'nothing'})")
    text = release_files.read_version_file(store.skills_path, row.name, row.version,
                                           mf.SKILL_MD).decode("utf-8", errors="replace")
    split = skill_md.split_front_matter(text)
    body = split[1] if split and split[2] > 0 else text
    folder = release_folder(store, row)
    files = release_files.version_files(store.skills_path, row.name, row.version)
    resources = [f for f in files if f not in (mf.SKILL_MD, mf.SKILL_TOML)]
    contract = mf.load_folder(folder).contract
    steps = []
    if contract:
        for step in contract.steps:
            steps.append({"do": step.do, "run": step.run.text if step.run else None})
    loaded = LoadedSkill(
        ref=row.ref, name=row.name, version=row.version, tree=row.tree or "",
        commit=row.commit or "", description=row.description, body=body.strip() + "\n",
        folder=str(folder), resources=resources, steps=steps, approver=row.approver,
    )
    load_id = store.new_id()
    with store.transaction():
        event = None
        if run is not None:
            event = append_event(
                store, run.ref, "skill_load",
                f"loaded {row.ref} (tree {loaded.tree[:12]})",
                source="tool:agentstate",
                meta={"skill": row.ref, "name": row.name, "version": row.version,
                      "tree": loaded.tree, "commit": loaded.commit, "skill_load": load_id},
                allow_system_kinds=True,
            )
        store.insert("skill_loads", {
            "id": load_id, "run": run.id if run else None, "name": row.name,
            "version": row.version, "tree": loaded.tree, "event": event.id if event else None,
            "ts": store.now(),
        })
    loaded.event = event.ref if event else None
    loaded.run = run.ref if run else None
    loaded.load_id = load_id
    return loaded


@dataclass(frozen=True)
class SkillLoad:
    """One recorded load of a skill version (a `skill_loads` row)."""

    name: str
    version: int
    run: str | None     # the run's id, None for a load outside any run
    event: str | None   # the id of the run's `skill_load` event
    ts: str
    tree: str


_LOAD_COLUMNS = "name, version, run, event, ts, tree"


def loads_of_version(store: Store, name: str, version: int, *, limit: int) -> list[SkillLoad]:
    """The newest `limit` loads of one version (for trace: skill version → runs)."""
    return [SkillLoad(*r) for r in store.conn.execute(
        f"SELECT {_LOAD_COLUMNS} FROM skill_loads WHERE name = ? AND version = ? "
        "ORDER BY ts DESC LIMIT ?", (name, version, limit))]


def loads_in_run(store: Store, run_id: str, *, limit: int) -> list[SkillLoad]:
    """The first `limit` loads made in a run, oldest first (for trace: run → skills)."""
    return [SkillLoad(*r) for r in store.conn.execute(
        f"SELECT {_LOAD_COLUMNS} FROM skill_loads WHERE run = ? ORDER BY ts LIMIT ?",
        (run_id, limit))]


def loads_by_event(store: Store, event_id: str) -> list[SkillLoad]:
    """The loads a `skill_load` event recorded (for trace: event → skill version)."""
    return [SkillLoad(*r) for r in store.conn.execute(
        f"SELECT {_LOAD_COLUMNS} FROM skill_loads WHERE event = ?", (event_id,))]


@dataclass
class StepRun:
    step: int
    do: str
    command: str
    ok: bool
    status: str
    event: str | None
    tool_call: str
    stdout: str = ""
    stderr: str = ""


@dataclass
class SkillRun:
    ref: str
    steps: list[StepRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)


def run_skill_steps(store: Store, target: str, *, step: int | None = None,
                    params: dict[str, str] | None = None,
                    run_ref: str | None = None) -> SkillRun:
    """Run a published version's step commands (all, in order, or step N) through the one
    tool layer, with `{skill}` pointing at the release's files. Stops at the first failure.

    This is how a skill's scripts run: never directly, always policy-checked and logged.
    Revoked versions are refused like loads.
    """
    import tempfile

    from agentstate.skills.acceptance import fill_params, param_values
    from agentstate.tools.runner import run_tool

    row = _pick_version(store, target)
    folder = release_folder(store, row)
    contract = mf.load_folder(folder).contract
    if contract is None:
        raise InvalidInput(f"{row.ref} has no readable skill.toml")
    runnable = [(i, s) for i, s in enumerate(contract.steps, 1) if s.run is not None]
    if step is not None:
        if not 1 <= step <= len(contract.steps):
            raise InvalidInput(f"{row.ref} has steps 1-{len(contract.steps)}, not {step}")
        runnable = [(i, s) for i, s in runnable if i == step]
        if not runnable:
            raise InvalidInput(f"step {step} of {row.ref} has no command (it is done by hand: "
                               f"{contract.steps[step - 1].do})")
    result = SkillRun(ref=row.ref)
    with tempfile.TemporaryDirectory(prefix=f"agentstate-{row.name}-") as tmp:
        values = param_values(contract, folder, store.work_tree, Path(tmp), params)
        for index, item in runnable:
            assert item.run is not None
            argv = fill_params(item.run.argv, values)
            missing = sorted(contract_toml.command_params(argv))
            if missing:
                raise InvalidInput(f"step {index} needs a value for "
                                   f"{', '.join('{' + m + '}' for m in missing)}: pass "
                                   "--param NAME=VALUE")
            cwd = folder if item.run.cwd == "skill" else store.work_tree
            done = run_tool(store, argv, run_ref=run_ref, cwd=cwd,
                            purpose=f"{row.ref} step {index}", writable=[tmp])
            result.steps.append(StepRun(
                step=index, do=item.do, command=item.run.text, ok=done.ok,
                status=done.status if done.allowed and not done.not_found else done.reason,
                event=done.event, tool_call=done.call_id, stdout=done.stdout,
                stderr=done.stderr,
            ))
            if not done.ok:
                break
    return result
