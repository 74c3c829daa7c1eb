"""Where a tool runs: under bubblewrap when it is there, so a rule that misses still cannot
reach the network or write outside the repository.

`[tools] sandbox`: "auto" (the default) runs every command under bubblewrap when `bwrap` is on
the `[tools] path` and can start a sandbox here (user namespaces allowed), and otherwise runs
it unconfined and says so (`exec` on stderr or in `--json`, and `doctor`): the policy is then
the only line. "bwrap" refuses to run anything without it; "none" never uses it.

Inside: the whole file system read-only; the repository writable except `.agentstate/` (the
store and the skills registry), `.git/hooks` and `.git/config` (a command cannot leave a hook
or a config entry that runs later, outside the sandbox, when you use git yourself); a linked
work tree's git folders writable the same way; a private `/tmp` (with `XDG_CACHE_HOME` in it,
so tools that keep caches under the home folder still run; the policy path's folders stay
visible); its own process, IPC and host-name namespaces; no network unless
`[tools] network = true` (and, without it, an empty `/run`: no daemon's socket either).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agentstate.tools.environment import git_dirs

SANDBOXES = ("auto", "none", "bwrap")
# Where caches go inside the sandbox (on its private /tmp).
SANDBOX_CACHE = "/tmp/.cache"


@dataclass(frozen=True)
class SandboxChoice:
    """The sandbox a command runs in ("bwrap" or "none") and, when none, why."""

    kind: str
    bwrap: str | None = None
    note: str | None = None  # "no sandbox: …; the [tools] policy is the only line"


@functools.cache
def bwrap_works(bwrap: str) -> str | None:
    """None when `bwrap` can start a sandbox with its own network here, else why not (a
    container without user namespaces, a setuid-less install…). Tried once per process."""
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--unshare-pid",
             "--die-with-parent", "--", "/bin/sh", "-c", ":"],
            capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} cannot run ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return f"{bwrap} cannot start a sandbox here ({said[-1] if said else done.returncode})"
    return None


def choose_sandbox(setting: str, bwrap: str | None) -> SandboxChoice:
    """What `[tools] sandbox = setting` means with `bwrap` (None: not on the policy path)."""
    if setting == "none":
        return SandboxChoice("none", note='no sandbox ([tools] sandbox = "none"): the [tools] '
                                          "policy is the only line")
    if setting == "bwrap":
        return SandboxChoice("bwrap", bwrap)  # authorize refuses when bwrap is missing
    if bwrap is None:
        return SandboxChoice("none", note="no sandbox (bubblewrap is not installed, or not "
                                          "on the [tools] path): the [tools] policy is the "
                                          "only line")
    why = bwrap_works(bwrap)
    if why:
        return SandboxChoice("none", note=f"no sandbox ({why}): the [tools] policy is the "
                                          "only line")
    return SandboxChoice("bwrap", bwrap)


def bwrap_command(bwrap: str, executable: str, argv: list[str], *, cwd: Path,
                  work_tree: Path, store_dir: Path, writable: Iterable[Path] = (),
                  visible: Iterable[Path] = (), network: bool = False) -> list[str]:
    """The bubblewrap command line that runs `argv` (via `executable`) in the sandbox.
    `visible`: folders shown read-only even under the private /tmp (the policy path and the
    program's own folder, so what the policy found is what runs)."""
    work_tree, store_dir = work_tree.resolve(), store_dir.resolve()
    writable = [Path(p).resolve() for p in writable]
    command = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--tmpfs", "/tmp", "--dir", SANDBOX_CACHE]
    if not network:
        # Daemons' sockets (a container engine's, a session bus) are a way out that does not
        # need the network; /tmp's (tmux, X11, ssh-agent) are hidden with /tmp itself.
        command += ["--tmpfs", "/run"]
    for folder in dict.fromkeys(Path(p).resolve() for p in visible):
        if folder.is_relative_to("/tmp") and folder.is_dir():
            command += ["--ro-bind", str(folder), str(folder)]
    command += ["--bind", str(work_tree), str(work_tree)]
    git_dir, common = git_dirs(work_tree)
    for folder in dict.fromkeys(d for d in (git_dir, common) if d is not None):
        if not folder.is_relative_to(work_tree):  # a linked work tree's git folders
            command += ["--bind", str(folder), str(folder)]
    # Read-only inside the writable tree (later binds win): what would run outside the
    # sandbox the next time you use the store or git.
    guarded = [store_dir]
    if common is not None:
        guarded += [common / "hooks", common / "config"]
    for path in guarded:
        if path.exists():
            command += ["--ro-bind", str(path), str(path)]
    for path in writable:
        command += ["--bind", str(path), str(path)]
    if not cwd.is_relative_to(work_tree) and not any(cwd.is_relative_to(p) for p in writable):
        command += ["--ro-bind", str(cwd), str(cwd)]  # e.g. a cwd under the hidden /tmp
    if not network:
        command += ["--unshare-net"]
    command += ["--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--die-with-parent", "--chdir", str(cwd), "--", executable, *argv[1:]]
    return command
