"""Installing our hook entries into agents' own settings files, and the AGENTS.md block.

Claude Code (`.claude/settings.json`) and Codex CLI (`.codex/hooks.json`) share one shape:

    {"hooks": {"EVENT": [{"matcher": "...", "hooks": [{"type": "command", "command": "..."}]}]}}

Our entries are recognised by their command: `agentstate hook AGENT`, the program named by
any path whose file name is `agentstate`. Installing writes the absolute path of the
agentstate that runs the install (an agent's shell often lacks the venv it was installed
in: a bare `agentstate` then fails on every event, out of our sight), merges it in next to
whatever is there (never replacing a foreign hook) and moves an entry of ours that names
another program to this one; installing twice adds nothing, and uninstalling removes only
ours. A file that is not valid JSON is reported and never written.
Writes go to a temp file in the same folder and are renamed into place.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput

PROGRAM = "agentstate"
# Tools whose calls become `tool` events; reads and searches would only add noise (and the
# transcript catch-up brings in whatever matters from them).
CLAUDE_TOOLS = "Bash|Edit|MultiEdit|Write|NotebookEdit"
CODEX_TOOLS = "Bash|apply_patch"
HOOK_TIMEOUT_S = 30
# Codex clamps a SessionEnd hook's timeout to 3 s (and warns at every start if asked for more).
CODEX_SESSION_END_TIMEOUT_S = 3

# event → matcher (None: the event takes no matcher)
CLAUDE_EVENTS: dict[str, str | None] = {
    "SessionStart": "startup|resume|clear|compact",
    "UserPromptSubmit": None,
    "PostToolUse": CLAUDE_TOOLS,
    "PostToolUseFailure": CLAUDE_TOOLS,
    "PreCompact": None,
    "Stop": None,
    "SessionEnd": None,
}
CODEX_EVENTS: dict[str, str | None] = {
    "SessionStart": "startup|resume|clear",
    "UserPromptSubmit": None,
    "PostToolUse": CODEX_TOOLS,
    "PreCompact": None,
    "Stop": None,
    "SessionEnd": None,
}
AGENT_EVENTS = {"claude-code": CLAUDE_EVENTS, "codex": CODEX_EVENTS}


def agentstate_program() -> str:
    """The absolute path of the agentstate running now, for a hook command the client finds
    whatever PATH its shell has: the console script beside this interpreter (a venv's or
    pipx's bin), else the `agentstate` this PATH finds, else the bare name."""
    here = Path(sys.executable).parent / PROGRAM
    if here.is_file() and os.access(here, os.X_OK):
        return str(here.absolute())
    found = shutil.which(PROGRAM)
    return str(Path(found).absolute()) if found else PROGRAM


def hook_command(agent: str, program: str | None = None) -> str:
    """The command line our hook entry runs (the program quoted for a POSIX shell)."""
    return f"{shlex.quote(program or agentstate_program())} hook {agent}"


def is_our_command(agent: str, command: Any) -> bool:
    """`agentstate hook AGENT`, with agentstate bare or at any path."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (len(words) == 3 and Path(words[0]).name == PROGRAM
            and words[1:] == ["hook", agent])


def command_program(command: str) -> str:
    """The program a hook command line runs (its first word)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return words[0] if words else command


def resolve_program(program: str, path: str | None = None) -> str | None:
    """Where a shell would find `program`: itself when it is a path to an executable file,
    else the PATH lookup (`path`: the PATH to search, default this process's); None if not
    found."""
    if os.sep in program:
        candidate = Path(program).expanduser()
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which(program, path=path)


def hook_timeout(agent: str, event: str) -> int:
    if agent == "codex" and event == "SessionEnd":
        return CODEX_SESSION_END_TIMEOUT_S
    return HOOK_TIMEOUT_S


@dataclass
class SettingsChange:
    path: str
    changed: bool
    events: list[str]  # events our entry was added to (install) or removed from (uninstall)


def settings_path(agent: str, scope: str, root: Path) -> Path:
    """Where the agent reads hooks for this scope (project: the repository root)."""
    if agent == "claude-code":
        if scope == "user":
            base = os.environ.get("CLAUDE_CONFIG_DIR")
            return (Path(base) if base else Path.home() / ".claude") / "settings.json"
        return root / ".claude" / "settings.json"
    if agent == "codex":
        if scope == "user":
            base = os.environ.get("CODEX_HOME")
            return (Path(base) if base else Path.home() / ".codex") / "hooks.json"
        return root / ".codex" / "hooks.json"
    raise InvalidInput(f"unknown agent {agent!r}")


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object ({} when the file is missing or empty); InvalidInput otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text; nothing was changed") from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                           f"{exc.colno}); fix it first, nothing was changed") from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing was changed")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or any(not isinstance(v, list) for v in hooks.values()):
        raise InvalidInput(f"{path}: \"hooks\" is not an object of event → list of matcher "
                           f"groups; nothing was changed")
    return data


def _our_handlers(groups: list[Any], agent: str) -> list[dict[str, Any]]:
    return [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"] if isinstance(h, dict) and is_our_command(agent, h.get("command"))]


def write_atomic(path: Path, text: str) -> None:
    """Write via a temp file in the same folder and a rename; keep an existing file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.agentstate-{os.getpid()}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        if path.exists():
            temp.chmod(path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    finally:
        if temp.exists():
            temp.unlink()


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def install_agent_hooks(agent: str, path: Path, program: str | None = None) -> SettingsChange:
    """Add our entry to each event (`program`: the agentstate to run, default this one's
    absolute path); an entry of ours naming another program is moved to this one."""
    events = AGENT_EVENTS[agent]
    command = hook_command(agent, program)
    data = read_settings(path)
    hooks = data.setdefault("hooks", {})
    added = []
    for event, matcher in events.items():
        groups = hooks.setdefault(event, [])
        ours = _our_handlers(groups, agent)
        if ours:
            for handler in ours:
                if handler.get("command") != command:
                    handler["command"] = command
                    added.append(event)
            continue
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": command,
                           "timeout": hook_timeout(agent, event)}]
        groups.append(group)
        added.append(event)
    if added:
        write_atomic(path, _dump(data))
    return SettingsChange(str(path), bool(added), sorted(set(added), key=added.index))


def uninstall_agent_hooks(agent: str, path: Path) -> SettingsChange:
    if not path.exists():
        return SettingsChange(str(path), False, [])
    data = read_settings(path)
    hooks = data.get("hooks", {})
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not _our_handlers(groups, agent):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                kept = [h for h in group["hooks"]
                        if not (isinstance(h, dict) and is_our_command(agent, h.get("command")))]
                if not kept and group["hooks"]:
                    continue  # the group held only ours
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        removed.append(event)
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if removed and not hooks:
        del data["hooks"]
    if removed:
        write_atomic(path, _dump(data))
    return SettingsChange(str(path), bool(removed), removed)


def agent_hooks_status(agent: str, path: Path) -> dict[str, Any]:
    """Which of our events are installed, and whether each command's program resolves here
    (`unresolved`: the programs a shell with this PATH would not find)."""
    events = AGENT_EVENTS[agent]
    try:
        data = read_settings(path)
    except InvalidInput as exc:
        return {"path": str(path), "exists": path.exists(), "error": exc.message,
                "events": [], "missing": list(events), "commands": [], "unresolved": []}
    hooks = data.get("hooks", {})
    present = [e for e in events if _our_handlers(hooks.get(e, []), agent)]
    commands = sorted({str(h["command"]) for e in events
                       for h in _our_handlers(hooks.get(e, []), agent)})
    unresolved = sorted({command_program(c) for c in commands
                         if resolve_program(command_program(c)) is None})
    return {"path": str(path), "exists": path.exists(), "events": present,
            "missing": [e for e in events if e not in present], "commands": commands,
            "unresolved": unresolved}


# ---------------------------------------------------------------- AGENTS.md

AGENTS_FILE = "AGENTS.md"
BEGIN = "<!-- agentstate:begin (managed by `agentstate hooks install agents-md`) -->"
END = "<!-- agentstate:end -->"
BEGIN_PREFIX = "<!-- agentstate:begin"
BLOCK_BODY = """\
## Working state: agentstate

This repository keeps its agents' run log in `.agentstate/`. Before anything else:

1. Run `agentstate resume` and read it: the goal, constraints, open questions, pending
   verifications, failed checks and what changed in the work tree since the last session.
   No run yet? Start one: `agentstate run start "GOAL"`.
2. Run commands through `agentstate exec -- CMD ARGS` so each call and its output are logged.
3. Record what you learn as you go with `agentstate log KIND TEXT` (decision, observation,
   hypothesis, question, verify…; `agentstate log --help` lists them), and run
   `agentstate checkpoint --note "where things stand"` before you stop."""


def agents_block() -> str:
    return f"{BEGIN}\n{BLOCK_BODY}\n{END}\n"


def _block_span(text: str, path: Path) -> tuple[int, int] | None:
    """Start and end offsets of our block (end includes its newline); None when absent."""
    begins, ends = text.count(BEGIN_PREFIX), text.count(END)
    if begins == 0 and ends == 0:
        return None
    start, end = text.find(BEGIN_PREFIX), text.find(END)
    at_line_start = start == 0 or text[start - 1] == "\n"
    if begins != 1 or ends != 1 or end < start or not at_line_start:
        raise InvalidInput(f"{path} has a damaged agentstate block ({begins} begin and {ends} "
                           f"end marker(s), or out of order); fix the markers by hand, nothing "
                           f"was changed")
    stop = end + len(END)
    if text[stop:stop + 1] == "\n":
        stop += 1
    return start, stop


def install_agents_md(root: Path) -> SettingsChange:
    path = root / AGENTS_FILE
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    span = _block_span(text, path)
    block = agents_block()
    if span is not None:
        new = text[: span[0]] + block + text[span[1]:]
    elif not text:
        new = block
    else:
        new = text + ("\n" if text.endswith("\n") else "\n\n") + block
    if new == text:
        return SettingsChange(str(path), False, [])
    write_atomic(path, new)
    return SettingsChange(str(path), True, ["block"])


def uninstall_agents_md(root: Path) -> SettingsChange:
    path = root / AGENTS_FILE
    if not path.exists():
        return SettingsChange(str(path), False, [])
    text = path.read_text(encoding="utf-8")
    span = _block_span(text, path)
    if span is None:
        return SettingsChange(str(path), False, [])
    before, after = text[: span[0]], text[span[1]:]
    if before.endswith("\n\n") and (not after or after.startswith("\n")):
        before = before[:-1]  # the blank line install put before the block
    new = before + after
    if not new.strip():
        path.unlink()
    else:
        write_atomic(path, new)
    return SettingsChange(str(path), True, ["block"])


def agents_md_status(root: Path) -> dict[str, Any]:
    path = root / AGENTS_FILE
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        span = _block_span(text, path)
    except InvalidInput as exc:
        return {"path": str(path), "exists": path.exists(), "installed": False,
                "error": exc.message}
    current = span is not None and text[span[0]:span[1]] == agents_block()
    return {"path": str(path), "exists": path.exists(), "installed": span is not None,
            "current": current}
