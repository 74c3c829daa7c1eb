"""What a tool runs with: a cleaned environment, the `[tools] path`, and optionally bubblewrap.

The environment is the caller's, minus variables that make an allowed program load or run
other code (`LD_PRELOAD`, `GIT_CONFIG_*`, `GIT_SSH_COMMAND`, `MAKEFLAGS`, `BASH_ENV`,
`NODE_OPTIONS`, …) and with `PATH` replaced by the `[tools] path`, so what the command starts
in turn is found where the command itself was.

`[tools] sandbox = "bwrap"` runs the command under bubblewrap (Linux): the whole file system
read-only, the repository writable except `.agentstate/` (so a command cannot rewrite the
store or the skills registry), a private `/tmp`, its own process tree, and no network
(`--unshare-net`). This is a real boundary, unlike the rules, for everything the command and
its children do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

SANDBOXES = ("none", "bwrap")

# Exact names, and prefixes (ending in `_`) of families.
DROPPED_ENV = (
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_EXEC_PATH", "GIT_PAGER",
    "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_TEMPLATE_DIR",
    "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "BASH_ENV", "ENV", "PROMPT_COMMAND",
    "NODE_OPTIONS", "PYTHONSTARTUP", "PYTHONINSPECT", "PERL5OPT", "RUBYOPT", "JAVA_TOOL_OPTIONS",
)


def _dropped(name: str) -> bool:
    return any(name == d or (d.endswith("_") and name.startswith(d)) for d in DROPPED_ENV)


def tool_environment(base: Mapping[str, str], extra: Mapping[str, str] | None,
                     search_path: Iterable[str]) -> dict[str, str]:
    """The child's environment: `base` and `extra` without DROPPED_ENV, PATH = search_path."""
    env = {k: v for k, v in base.items() if not _dropped(k)}
    env.update({k: v for k, v in (extra or {}).items() if not _dropped(k)})
    env["PATH"] = os.pathsep.join(search_path)
    return env


def bwrap_command(bwrap: str, executable: str, argv: list[str], *, cwd: Path,
                  work_tree: Path, store_dir: Path,
                  writable: Iterable[Path] = ()) -> list[str]:
    """The bubblewrap command line that runs `argv` (via `executable`) in the sandbox."""
    work_tree, store_dir = work_tree.resolve(), store_dir.resolve()
    writable = [Path(p).resolve() for p in writable]
    command = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--tmpfs", "/tmp", "--bind", str(work_tree), str(work_tree)]
    if store_dir.is_dir():
        command += ["--ro-bind", str(store_dir), str(store_dir)]
    for path in writable:
        command += ["--bind", str(path), str(path)]
    if not cwd.is_relative_to(work_tree) and not any(cwd.is_relative_to(p) for p in writable):
        command += ["--ro-bind", str(cwd), str(cwd)]  # e.g. a cwd under the hidden /tmp
    command += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--die-with-parent", "--chdir", str(cwd), "--", executable, *argv[1:]]
    return command
