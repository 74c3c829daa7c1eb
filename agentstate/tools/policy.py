"""The `[tools] policy`: which commands the one tool layer may run, and which file it runs.

Semantics (documented in docs/security.md, "The tool layer", and the config template):
- A command is an argv list; it is never run through a shell, so `;`, `|`, `&&` are plain
  arguments, not operators.
- The program is looked up in `[tools] path` (a list of directories fixed in config.toml),
  never in the caller's PATH: `PATH=evil:$PATH agentstate exec -- git` runs the git of the
  policy path. A program that is not there is "not found" (exit 1), whatever the rules say.
- Rules are command prefixes written like a command line (`"git"`, `"git push"`,
  `"rm -rf /"`), split into words with shell quoting rules.
- `deny` wins over `allow`. A deny rule matches the command and every command it starts
  through a known wrapper (`env`, `nice`, `timeout`, `sudo`, `busybox`, `xargs`, `uv run`,
  `sh -c` …; see tools/normalise.py), by program name or by being the same file; for `rm` the
  options are compared as a set (`rm -fr /`, `rm -r -f --no-preserve-root //` match
  `rm -rf /`) and the operands as paths.
- Built-in rules (tools/argrules.py) refuse arguments that make an allowed program run another
  one (`git -c alias.x=!…`, `make --eval`, `find -exec`, `sed …e`).
- An allow rule names a program on the policy path: `"git"` allows the `git` that
  `[tools] path` finds, not any file called git (`/tmp/x/git`, a skill's `scripts/git`).
  `"*"` allows every program not denied.
Options are read as each program reads them (tools/getopt.py: unique prefixes of long
options, bundled short ones; `env -S`/`-C`, a shell's `cd`, xargs' input: tools/normalise.py).
The rules alone are a guardrail: an allowed interpreter (`python -c ...`) or build tool
(`make`, reading a Makefile) can still do anything the user can. The allow-listed environment
(tools/environment.py) and the sandbox, on by default where bubblewrap works
(tools/sandbox.py), are what hold when a rule misses.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentstate.errors import InvalidInput
from agentstate.tools.argrules import RULED_PROGRAMS, exec_argument_rule
from agentstate.tools.normalise import (
    STARTERS,
    Layer,
    Unreadable,
    layers,
    normalise,
    program_name,
)

if TYPE_CHECKING:
    from agentstate.config import ToolSettings

__all__ = ["Authorization", "PolicyDecision", "authorize", "check_command", "program_name",
           "resolve_program", "search_path"]


@dataclass(frozen=True)
class PolicyDecision:
    allowed: bool
    reason: str
    rule: str | None = None  # the rule that decided (None when no allow rule matched)


@dataclass(frozen=True)
class Authorization:
    """What `authorize` decided, and the file to run when allowed."""

    decision: PolicyDecision
    executable: str | None = None
    not_found: bool = False


def _home() -> str:
    # The password database, not $HOME: the caller's environment must not move the path.
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.path.expanduser("~")


def search_path(tools: ToolSettings, base: Path) -> list[str]:
    """`[tools] path` as existing directories (`~` is the user's home, relative entries are
    relative to `base`, the repository), then the project's own virtualenv: the activated
    one (VIRTUAL_ENV) and `.venv/` at the repository root, where the project's pytest, ruff
    or mypy live. They come after the configured directories, so a virtualenv adds the
    project's tools but never replaces a system `git`; the allow and deny rules apply to
    what is found there as to anything else."""
    out: list[str] = []
    for entry in tools.path:
        if entry == "~" or entry.startswith("~/"):
            entry = _home() + entry[1:]
        where = Path(entry) if os.path.isabs(entry) else base / entry
        if where.is_dir() and str(where) not in out:
            out.append(str(where))
    for venv in _project_venvs(base):
        if str(venv) not in out:
            out.append(str(venv))
    return out


def _project_venvs(base: Path) -> list[Path]:
    """The bin directories of the project's virtualenvs: only real ones (pyvenv.cfg), so an
    arbitrary directory named in VIRTUAL_ENV is not taken for one."""
    found = []
    for root in (os.environ.get("VIRTUAL_ENV"), base / ".venv"):
        if not root:
            continue
        venv = Path(root)
        bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
        if (venv / "pyvenv.cfg").is_file() and bin_dir.is_dir():
            found.append(bin_dir)
    return found


def resolve_program(argv0: str, dirs: list[str], cwd: Path | str) -> str | None:
    """The file `argv0` names: a path (relative to `cwd`) as written, a bare name looked up in
    `dirs` only (and `agentstate` beside this interpreter). None when there is no such
    executable file."""
    if os.sep in argv0:
        where = os.path.join(cwd, argv0)
        return where if os.path.isfile(where) and os.access(where, os.X_OK) else None
    found = shutil.which(argv0, path=os.pathsep.join(dirs)) if dirs else None
    if found is None and argv0 == "agentstate":
        # agentstate itself (shipped skills run it): the one installed beside the running
        # interpreter, wherever that is (a virtualenv, pipx), when the path has none.
        own = Path(sys.executable).parent / "agentstate"
        if own.is_file() and os.access(own, os.X_OK):
            return str(own)
    return found


def _same_file(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and os.path.samefile(a, b)
    except OSError:
        return False


def _words(rule: str) -> list[str]:
    return shlex.split(rule)  # every rule was checked to split when the settings were loaded


def _subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(word in it for word in needle)


def _deny_matches(rule: str, layer: Layer, cwd: str | None, dirs: list[str] | None) -> bool:
    if rule.strip() == "*":
        return True
    words, argv = _words(rule), layer.argv
    if not words:
        return False
    if program_name(words[0]) != program_name(argv[0]):
        # Another name for the same file (a symlink or hard link to a denied program).
        if dirs is None or not _same_file(resolve_program(words[0], dirs, cwd or "."),
                                          resolve_program(argv[0], dirs, cwd or ".")):
            return False
    program = program_name(words[0])
    where = _effective_cwd(layer, cwd)
    rule_args, args = normalise(program, words[1:], cwd), normalise(program, argv[1:], where)
    if rule_args is None or args is None:
        rule_args, args = words[1:], argv[1:]
        if layer.open_ended:  # arguments still to come (xargs): a prefix either way
            shorter = min(len(rule_args), len(args))
            return rule_args[:shorter] == args[:shorter]
        return args[: len(rule_args)] == rule_args
    return layer.open_ended or _subsequence(rule_args, args)


def _effective_cwd(layer: Layer, cwd: str | None) -> str | None:
    """Where the layer's command runs: a wrapper's `-C DIR` or a shell's `cd` moved it from
    the caller's directory `cwd` (the rules compare paths from there)."""
    if layer.cwd is None:
        return cwd
    if os.path.isabs(layer.cwd) or cwd is None:
        return layer.cwd
    return os.path.normpath(os.path.join(cwd, layer.cwd))


def _first_refusal(tools: ToolSettings, found: list[Layer], cwd: str | None,
                   dirs: list[str] | None) -> PolicyDecision | None:
    for layer in found:
        via = f" (run through {layer.via})" if layer.via else ""
        for rule in tools.deny:
            if _deny_matches(rule, layer, cwd, dirs):
                return PolicyDecision(False, f"denied by [tools] deny rule {rule!r}{via}", rule)
        program = program_name(layer.argv[0])
        if layer.open_ended and (program in STARTERS or program in RULED_PROGRAMS):
            # xargs adds words it reads at run time: a starter's command or a ruled
            # program's options among them would never be checked.
            return PolicyDecision(
                False, f"denied by built-in rule xargs-input: {program!r} would get arguments "
                       f"that xargs reads from its input, which cannot be checked{via}",
                "xargs-input")
        broken = exec_argument_rule(layer.argv)
        if broken:
            return PolicyDecision(False, f"denied by built-in rule {broken}{via}",
                                  broken.split(":", 1)[0])
    return None


def _layers(argv: list[str]) -> list[Layer] | PolicyDecision:
    if not argv or not argv[0]:
        raise InvalidInput("no command given")
    try:
        return layers(argv)
    except Unreadable as exc:
        return PolicyDecision(False, f"denied by built-in rule wrapper-unreadable: {exc}",
                              "wrapper-unreadable")


def _allow(tools: ToolSettings, argv: list[str], executable: str | None,
           dirs: list[str] | None, cwd: str) -> PolicyDecision:
    """The allow rules for one command. With `executable`, a named rule also requires that
    file to be the one the rule's program resolves to on the policy path."""
    program = program_name(argv[0])
    elsewhere = None
    for rule in tools.allow:
        if rule.strip() == "*":
            return PolicyDecision(True, "allowed by [tools] allow rule '*'", rule)
        words = _words(rule)
        if (not words or len(words) > len(argv) or program_name(words[0]) != program
                or argv[1: len(words)] != words[1:]):
            continue
        if executable is not None and dirs is not None:
            expected = resolve_program(words[0], dirs, cwd)
            if not _same_file(expected, executable):
                elsewhere = (rule, expected)
                continue
        return PolicyDecision(True, f"allowed by [tools] allow rule {rule!r}", rule)
    if elsewhere:
        rule, expected = elsewhere
        means = (f"the one at {expected}" if expected
                 else "one on the [tools] path, and there is none")
        return PolicyDecision(False, f"refused by built-in rule unexpected-path: {argv[0]} is "
                              f"not the {program!r} that [tools] allow rule {rule!r} means "
                              f"({means})", "unexpected-path")
    return PolicyDecision(
        False, f"{program!r} is not in [tools] allow (add it to .agentstate/config.toml)"
    )


def check_command(tools: ToolSettings, argv: list[str]) -> PolicyDecision:
    """The rules alone, by program name (no file lookup): may the tool layer run `argv`?
    `authorize` adds the lookup in `[tools] path`; validators use this on skill commands."""
    found = _layers(argv)
    if isinstance(found, PolicyDecision):
        return found
    refused = _first_refusal(tools, found, None, None)
    if refused:
        return refused
    decision = PolicyDecision(False, "")
    for layer in found:
        if layer.shell:
            continue  # commands inside a shell string: deny rules only (best effort)
        decision = _allow(tools, layer.argv, None, None, ".")
        if not decision.allowed:
            return decision
    return decision


def authorize(tools: ToolSettings, argv: list[str], *, cwd: Path, base: Path) -> Authorization:
    """Decide whether the tool layer runs `argv` in `cwd` (`base`: the repository, for
    relative `[tools] path` entries), and which file. Deny and built-in rules first, then the
    lookup (a missing program is not found, not "not allowed"), then the allow rules."""
    dirs = search_path(tools, base)
    found = _layers(argv)
    if isinstance(found, PolicyDecision):
        return Authorization(found)
    refused = _first_refusal(tools, found, str(cwd), dirs)
    if refused:
        return Authorization(refused)
    executable = resolve_program(argv[0], dirs, cwd)
    if executable is None:
        return Authorization(PolicyDecision(True, _not_found(argv[0], dirs)), not_found=True)
    decision = PolicyDecision(False, "")
    for index, layer in enumerate(found):
        if layer.shell:
            continue
        if index == 0:
            decision = _allow(tools, layer.argv, executable, dirs, str(cwd))
        else:  # a wrapper finds its command on the child's PATH, which is the policy path
            inner = (resolve_program(layer.argv[0], dirs, cwd) if os.sep in layer.argv[0]
                     else None)
            decision = _allow(tools, layer.argv, inner, dirs, str(cwd))
        if not decision.allowed:
            return Authorization(decision)
    if tools.sandbox == "bwrap" and resolve_program("bwrap", dirs, cwd) is None:
        return Authorization(PolicyDecision(
            False, "refused by [tools] sandbox = 'bwrap': bwrap is not on the [tools] path "
                   "(install bubblewrap, or set sandbox = \"none\")", "sandbox"))
    return Authorization(decision, executable=executable)


def _not_found(argv0: str, dirs: list[str]) -> str:
    if os.sep in argv0:
        return f"command not found: {argv0} (no such executable file)"
    hint = ""
    elsewhere = shutil.which(argv0)  # the caller's PATH, only to explain the miss
    if elsewhere:
        hint = (f"; there is one at {elsewhere}: add {os.path.dirname(elsewhere)} to [tools] "
                "path in .agentstate/config.toml to use it")
    return f"command not found: {argv0} (not on the [tools] path{hint})"


def declared_tools(tools: ToolSettings) -> set[str]:
    """Names of non-command tools declared in [tools] definitions (MCP tools and the like)."""
    return {d.name for d in tools.definitions}
