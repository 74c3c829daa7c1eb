"""The environment a tool starts with: built from an allow-list, never the caller's as a whole.

A deny-list of variables is passed by the next variable nobody listed (`EDITOR` for
`git commit`, `SSH_ASKPASS` for a credential prompt, `BASH_FUNC_git%%` for bash,
`RUSTC_WRAPPER` for cargo, `GIT_CONFIG_SYSTEM` for every git command). So a command gets only
what it needs to run:

- `PATH` = the `[tools] path` (what the command starts is found where it was);
- `HOME`, `USER`, `LOGNAME`, `TERM`, `TMPDIR`, `TZ`, `LANG`, `LANGUAGE`, `LC_*`, `NO_COLOR`,
  `COLUMNS`, `LINES` from the caller;
- git's identity (`GIT_AUTHOR_*`, `GIT_COMMITTER_*` names, e-mails and dates), which only
  label commits;
- the variables that tell agentstate it runs under a coding agent (`CLAUDECODE`, … see
  store/principals.py) and `AGENTSTATE_*`: a nested `agentstate` must act as the same
  principal on the same store, never as the owner at a terminal;
- `[tools] env` entries from config.toml (`NAME` or `NAME=value`; config.py refuses names
  that run code).

On top, git gets settings that turn off what runs a program from its configuration or its
environment, since an agent can write `.git/config` (and, outside the sandbox, `~/.gitconfig`)
with its own file tools: see GIT_SETTINGS and `git_environment`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from agentstate.config import tool_env_refused
from agentstate.store.principals import AGENT_ENV_VARS

PASSED = frozenset({
    "HOME", "USER", "LOGNAME", "TERM", "TMPDIR", "TZ", "LANG", "LANGUAGE", "NO_COLOR",
    "COLUMNS", "LINES", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    *(name for name, _ in AGENT_ENV_VARS),
})
PASSED_PREFIXES = ("LC_", "AGENTSTATE_")

# Git configuration given on git's command line (through GIT_CONFIG_COUNT), which wins over
# every configuration file: what a file could set to run a program is set back here.
GIT_SETTINGS: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),          # a hook program run by `git status`
    ("core.sshCommand", "ssh"),           # the policy path's ssh, when ssh is allowed
    ("core.askPass", ""),                 # no password prompt program
    ("credential.helper", ""),            # an empty value clears the list of helpers
    ("help.autocorrect", "0"),            # a typo never runs an alias it resembles
    ("gpg.program", "gpg"),               # signing runs gpg, not a configured program
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
)
# Variables git reads before its configuration.
GIT_VARIABLES: dict[str, str] = {
    "GIT_EDITOR": ":",  # git's "no editor": the prepared message is used as it is
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_ASKPASS": "",  # set but empty: neither core.askPass nor SSH_ASKPASS is tried
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_SSH_COMMAND": "ssh",
}


def hooks_dir(work_tree: Path) -> str:
    """The repository's own hooks folder (`core.hooksPath` is set back to it, so a config
    file cannot point git at hooks somewhere else); "" (no hooks) when there is no `.git`."""
    dot_git = work_tree / ".git"
    if dot_git.is_dir():
        return str(dot_git / "hooks")
    common = git_common_dir(work_tree)
    return str(common / "hooks") if common else ""


def git_dirs(work_tree: Path) -> tuple[Path | None, Path | None]:
    """(git dir, common dir) of the work tree: `.git` itself, or for a linked work tree the
    folders its `.git` file names. (None, None) when there is no repository."""
    dot_git = work_tree / ".git"
    if dot_git.is_dir():
        return dot_git, dot_git
    try:
        line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None, None
    if not line.startswith("gitdir:"):
        return None, None
    git_dir = Path(line.split(":", 1)[1].strip())
    if not git_dir.is_absolute():
        git_dir = work_tree / git_dir
    common = git_dir
    try:
        relative = (git_dir / "commondir").read_text(encoding="utf-8").strip()
        common = Path(relative) if Path(relative).is_absolute() else git_dir / relative
    except OSError:
        pass
    return git_dir.resolve(), common.resolve()


def git_common_dir(work_tree: Path) -> Path | None:
    return git_dirs(work_tree)[1]


def git_environment(subcommands: Iterable[str], hooks: str, ssh_allowed: bool) -> dict[str, str]:
    """What exec's git runs with: GIT_VARIABLES, the transports it may use (ssh only when the
    policy allows `ssh`; never `ext::`, `fd::` or git's own unauthenticated protocol, whose
    proxy is a program), GIT_SETTINGS, the hooks folder, and an empty alias for each
    subcommand the command line names (an alias in a config file cannot stand in for it)."""
    env = dict(GIT_VARIABLES)
    env["GIT_ALLOW_PROTOCOL"] = "file:http:https" + (":ssh" if ssh_allowed else "")
    settings = [*GIT_SETTINGS, ("core.hooksPath", hooks)]
    settings += [(f"alias.{sub}", "") for sub in sorted(set(subcommands))]
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for index, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def passed(name: str) -> bool:
    """Does a command get the caller's variable `name` without being asked?"""
    return name in PASSED or name.startswith(PASSED_PREFIXES)


def tool_environment(base: Mapping[str, str], entries: Iterable[str],
                     extra: Mapping[str, str] | None, search_path: Iterable[str],
                     git: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the allow-listed part of `base`, then `entries` (`[tools]
    env`), then `extra` (set by agentstate itself, never a refused name), then `git`, and
    PATH = `search_path`."""
    env = {name: value for name, value in base.items() if passed(name)}
    for entry in entries:
        name, eq, value = entry.partition("=")
        if eq:
            env[name] = value
        elif name in base:
            env[name] = base[name]
    env.update({k: v for k, v in (extra or {}).items() if not tool_env_refused(k)})
    env.update(git)
    env["PATH"] = os.pathsep.join(search_path)
    return env
