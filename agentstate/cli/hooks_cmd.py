"""`agentstate hooks install|uninstall|status|helper` and `agentstate hook AGENT`, the handler."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, emit, store_override

if TYPE_CHECKING:
    from rich.console import Console

TARGETS = ("claude-code", "codex", "agents-md", "git")
hooks_app = typer.Typer(
    help="Plug agentstate into agents' lifecycle hooks (Claude Code, Codex CLI), AGENTS.md "
         "and git hooks.", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")

TargetArg = Annotated[str, typer.Argument(help="claude-code, codex, agents-md or git.")]
UserOption = Annotated[bool, typer.Option(
    "--user", help="The user's settings (~/.claude/settings.json, ~/.codex/hooks.json) "
                   "instead of the project's (claude-code and codex only).")]
ProjectOption = Annotated[bool, typer.Option(
    "--project", help="The project's settings at the repository root (the default).")]
TrustOption = Annotated[bool, typer.Option(
    "--trust", help="codex only: also record in your Codex config.toml that you trust this "
                    "project and reviewed our hooks, as Codex's own review does (owner only; "
                    "refused under a coding agent).")]


def _root() -> Path:
    """The repository root: the store's work tree, else the git top level of here."""
    from agentstate.errors import StoreMissing
    from agentstate.store.db import find_store, init_location

    try:
        return find_store(override=store_override()).parent
    except StoreMissing:
        return init_location()


def _scope(target: str, user: bool, project: bool) -> str:
    from agentstate.errors import UsageError

    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}: expected {', '.join(TARGETS)}")
    if user and project:
        raise UsageError("pass either --user or --project, not both")
    if user and target not in ("claude-code", "codex"):
        raise UsageError(f"--user applies to claude-code and codex only, not {target}")
    return "user" if user else "project"


def _change(target: str, scope: str, install: bool, trust: bool = False) -> dict[str, Any]:
    from agentstate.integrations import agent_config, git_hooks

    root = _root()
    if trust:
        _check_owner(root)
    if target == "git":
        changes = (git_hooks.install_git_hooks(root) if install
                   else git_hooks.uninstall_git_hooks(root))
        return {"target": target, "path": str(git_hooks.hooks_dir(root)),
                "changed": bool(changes), "changes": changes}
    if target == "agents-md":
        result = (agent_config.install_agents_md(root) if install
                  else agent_config.uninstall_agents_md(root))
    else:
        path = agent_config.settings_path(target, scope, root)
        result = (agent_config.install_agent_hooks(target, path) if install
                  else agent_config.uninstall_agent_hooks(target, path))
    data: dict[str, Any] = {"target": target, "scope": scope, "path": result.path,
                            "changed": result.changed, "events": result.events}
    if install and target in ("claude-code", "codex"):
        data |= _after_install(target, scope, root, Path(result.path), trust)
    return data


def _after_install(agent: str, scope: str, root: Path, path: Path, trust: bool) -> dict[str, Any]:
    """What the client needs before the hooks run, and whether the command resolves."""
    import shutil

    from agentstate.integrations import agent_config

    program = agent_config.agentstate_program()
    extra: dict[str, Any] = {"command": agent_config.hook_command(agent, program)}
    notes = []
    if agent_config.resolve_program(program) is None:
        notes.append(f"warning: {program!r} is not an executable this shell finds; the hooks "
                     "would fail. Install agentstate where your agent's shell finds it "
                     "(e.g. `pipx install agentstate`), then install the hooks again")
    elif shutil.which(agent_config.PROGRAM) is None:
        notes.append(f"agentstate is not on this PATH; the hooks call it by its absolute path "
                     f"({program})")
    if agent == "codex":
        from agentstate.integrations.codex_trust import codex_trust_status, trust_codex_hooks

        if trust:
            extra["trust"] = trust_codex_hooks(root, path, project_scope=scope == "project")
        status = codex_trust_status(root, path, project_scope=scope == "project")
        extra["codex"] = status
        if not status["will_run"] and not trust:
            notes.append("Codex runs these hooks only once you trust the project and review "
                         "each new or changed hook: start `codex` here, accept the trust "
                         "prompt, then type /hooks and approve them; or run `agentstate hooks "
                         "install codex --trust` (records both in " + status["config"] + ")")
    extra["notes"] = notes
    return extra


def _check_owner(root: Path) -> None:
    """--trust speaks for the person: refused (exit 3) unless the environment's principal
    is one that may approve (the owner), and always under a coding agent."""
    from agentstate.config import PrincipalsSettings, load_settings
    from agentstate.errors import Refused
    from agentstate.store.principals import principal_from_environment

    config = root / ".agentstate" / "config.toml"
    section = load_settings(config).principals if config.is_file() else PrincipalsSettings()
    env = principal_from_environment(section)
    if env.agent is not None or not env.principal.may("approve"):
        raise Refused(f"--trust records that you trust this project and its hooks; principal "
                      f"{env.principal.name!r} ({env.decided_by}) may not: run it from your "
                      "own shell as the owner")


def _show_change(console: Console, data: dict[str, Any]) -> None:
    verb = "installed" if data.get("install") else "removed"
    if not data["changed"]:
        state = "already installed" if data.get("install") else "not installed"
        console.print(f"{data['target']}: {state} ({data['path']}); nothing changed",
                      markup=False)
        return
    detail = data.get("changes") or data.get("events") or []
    console.print(f"{data['target']}: {verb} in {data['path']}", markup=False)
    for line in detail:
        console.print(f"  {line}", markup=False)
    if data.get("command"):
        console.print(f"  command: {data['command']}", markup=False)


def _show_install(console: Console, data: dict[str, Any]) -> None:
    _show_change(console, data)
    trust = data.get("trust")
    if trust is not None:
        if trust["written"]:
            console.print(f"recorded in {trust['config']}:", markup=False)
            for line in trust["written"]:
                console.print(f"  {line}", markup=False)
        else:
            console.print(f"{trust['config']}: trust already recorded; nothing changed",
                          markup=False)
    codex = data.get("codex")
    if codex is not None:
        state = "will run" if codex["will_run"] else "will not run yet: " + "; ".join(
            codex["reasons"])
        console.print(f"codex: the hooks {state}", markup=False)
    for note in data.get("notes") or []:
        console.print(note, markup=False)


@hooks_app.command("install")
def hooks_install(target: TargetArg, user: UserOption = False, project: ProjectOption = False,
                  trust: TrustOption = False, as_json: JsonOption = False) -> None:
    """Install agentstate's hooks for TARGET, next to any hooks already there.

    claude-code: entries in .claude/settings.json (SessionStart → resume pack; prompts, tool
    calls, compaction and session end → the run log). codex: the same in .codex/hooks.json;
    Codex runs them once the project is trusted and each hook reviewed (`--trust` records
    both in your Codex config.toml). The commands name this agentstate by its absolute path.
    agents-md: a marked block in AGENTS.md telling any agent to run `agentstate resume` first
    and log through agentstate. git: post-commit, post-checkout and post-merge hooks
    (commits and branch switches on the run log; after a merge, pull or branch switch,
    teammates' shared facts are imported when .agentstate/shared/ exists; core.hooksPath is
    honoured; an existing hook is kept and still runs). Installing twice changes nothing.
    A settings file that is not valid JSON is reported (exit 1) and left untouched.
    """
    from agentstate.errors import UsageError

    if trust and target != "codex":
        raise UsageError(f"--trust applies to codex only, not {target}")
    data = _change(target, _scope(target, user, project), install=True, trust=trust) | {
        "install": True}
    emit(data, as_json=as_json, human=_show_install)


@hooks_app.command("uninstall")
def hooks_uninstall(target: TargetArg, user: UserOption = False,
                    project: ProjectOption = False, as_json: JsonOption = False) -> None:
    """Remove only agentstate's hooks for TARGET (recognised by their exact command, marker
    or block); other hooks and hand edits stay. For git, the previous hook is put back
    byte for byte."""
    data = _change(target, _scope(target, user, project), install=False) | {"install": False}
    emit(data, as_json=as_json, human=_show_change)


@hooks_app.command("status")
def hooks_status(as_json: JsonOption = False) -> None:
    """Show what is installed where: Claude Code and Codex (project and user settings),
    AGENTS.md, git hooks, and the last hook errors."""
    from agentstate.errors import AgentStateError
    from agentstate.integrations import agent_config, git_hooks
    from agentstate.store.hooklog import last_hook_errors

    root = _root()
    agents = []
    for agent in ("claude-code", "codex"):
        for scope in ("project", "user"):
            path = agent_config.settings_path(agent, scope, root)
            entry = {"agent": agent, "scope": scope,
                     **agent_config.agent_hooks_status(agent, path)}
            agents.append(entry | _will_run(agent, scope, root, path, entry))
    try:
        git: Any = [vars(s) for s in git_hooks.git_hooks_status(root)]
    except AgentStateError as exc:
        git = {"error": exc.message}
    store_dir = root / ".agentstate"
    data = {"root": str(root), "agents": agents,
            "agents_md": agent_config.agents_md_status(root), "git": git,
            "errors": last_hook_errors(store_dir if store_dir.is_dir() else None)}

    def human(console: Console, d: dict[str, Any]) -> None:
        for entry in d["agents"]:
            if entry.get("error"):
                state = f"unreadable: {entry['error']}"
            elif not entry["events"]:
                state = "not installed"
            elif entry["missing"]:
                state = f"partly installed (missing {', '.join(entry['missing'])})"
            else:
                state = "installed"
            if entry["events"]:
                state += ("; will run" if entry["will_run"] else
                          "; will NOT run: " + "; ".join(entry["reasons"]))
            console.print(f"{entry['agent']:12} {entry['scope']:8} {state}  {entry['path']}",
                          markup=False)
        md = d["agents_md"]
        md_state = md.get("error") or ("installed" + ("" if md.get("current") else
                                                      " (outdated; install again)")
                                       if md["installed"] else "not installed")
        console.print(f"{'agents-md':12} {'project':8} {md_state}  {md['path']}", markup=False)
        if isinstance(d["git"], dict):
            console.print(f"{'git':12} {'project':8} {d['git']['error']}", markup=False)
        else:
            for hook in d["git"]:
                state = ("installed" + (" (chained to the previous hook)" if hook["chained"]
                                        else "")) if hook["installed"] else "not installed"
                console.print(f"{'git':12} {hook['name']:13} {state}  {hook['path']}",
                              markup=False)
        for error in d["errors"]:
            console.print(f"hook error {error.get('ts')} {error.get('agent')} "
                          f"{error.get('event')}: {error.get('error')}", markup=False)
        if d["errors"]:
            console.print("fix the cause, then check with `agentstate hooks status`; the log "
                          f"is {d['errors'][-1].get('log')}", markup=False)

    emit(data, as_json=as_json, human=human)


@hooks_app.command("helper")
def hooks_helper(stop: Annotated[bool, typer.Option(
        "--stop", help="Stop the running helper (hooks run in process until a hook starts "
                       "the next one).")] = False,
                 as_json: JsonOption = False) -> None:
    """Show the hook helper: the background process that runs agents' hooks warm (a hook
    then costs little more than starting Python). The first hook that finds none starts it;
    it leaves after AGENTSTATE_HOOK_HELPER_IDLE seconds without a hook (default 600) or when
    agentstate's files change. AGENTSTATE_HOOK_HELPER=0 runs every hook in process."""
    from agentstate.integrations.hook_client import enabled, socket_path
    from agentstate.integrations.hook_server import helper_pid, idle_seconds, stop_helper

    path = socket_path()
    pid = stop_helper(path) if stop else helper_pid(path)
    data = {"enabled": enabled(), "socket": path, "pid": pid,
            "running": pid is not None and not stop, "stopped": stop and pid is not None,
            "idle_seconds": idle_seconds()}

    def human(console: Console, d: dict[str, Any]) -> None:
        if d["stopped"]:
            state = f"stopped (pid {d['pid']})"
        elif d["running"]:
            state = f"running (pid {d['pid']}, leaves after {d['idle_seconds']:g} s idle)"
        else:
            state = "not running" + ("" if stop else "; the next agent hook starts it")
        if not d["enabled"]:
            state += "; off (AGENTSTATE_HOOK_HELPER=0: hooks run in process)"
        console.print(f"hook helper: {state}  {d['socket']}", markup=False)

    emit(data, as_json=as_json, human=human)


def _will_run(agent: str, scope: str, root: Path, path: Path, entry: dict[str, Any]
              ) -> dict[str, Any]:
    """Whether the client will actually run our installed hooks, and if not why."""
    if not entry.get("events"):
        return {"will_run": False, "reasons": ["not installed"]}
    reasons = [f"{program!r} is not found (fix: `agentstate hooks install {agent}` from an "
               "environment where agentstate runs, so the command names it by its full path)"
               for program in entry.get("unresolved", [])]
    extra: dict[str, Any] = {}
    if agent == "codex":
        from agentstate.integrations.codex_trust import codex_trust_status

        codex = codex_trust_status(root, path, project_scope=scope == "project")
        extra["codex"] = codex
        reasons += codex["reasons"]
        if codex["reasons"] and not codex.get("error"):
            reasons.append("fix: `agentstate hooks install codex --trust`, or trust the "
                           "project and approve the hooks in codex's /hooks")
    return {"will_run": not reasons, "reasons": reasons} | extra


@app.command("hook", context_settings={"allow_extra_args": True,
                                        "ignore_unknown_options": True})
def hook(
    agent: Annotated[str, typer.Argument(help="claude-code or codex (JSON on stdin), or git "
                                              "(post-commit, post-checkout ARGS).")],
    args: Annotated[list[str] | None, typer.Argument(help="For git: the hook name and "
                                                          "git's arguments.")] = None,
) -> None:
    """The hook handler the installed hooks call. Not for typing by hand.

    Always exits 0: a problem is one line on stderr and an entry in the hook-error log
    (`agentstate doctor` and `agentstate hooks status` show the last ones).
    """
    from agentstate.integrations.hook_runner import run_hook

    sys.exit(run_hook(agent, list(args or []), sys.stdin, directory=store_override()))
