"""The one tool layer: policy check → run (no shell) → log a `tool` event and a tool_calls row.

`agentstate exec`, `skill test` (acceptance commands) and skill scripts all go through
`run_tool`; there is no second channel around the `[tools]` policy.

What is logged: the command (secrets redacted), whether it was allowed and why, its exit code,
duration, whether it timed out, a sha256 digest of its full output and an excerpt (see
tools/excerpt.py: error lines and the last lines, secrets redacted). Without an active run
there is no run to append an event to, so only the tool_calls row is written (`event` NULL).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agentstate.config import ToolSettings
from agentstate.errors import InvalidInput
from agentstate.runs.log import append_event, current_run, resolve_run
from agentstate.runs.records import Run
from agentstate.runs.status import RunStatus
from agentstate.store.db import Store
from agentstate.store.refs import make_ref
from agentstate.store.sources import tool_source
from agentstate.tools.argrules import git_subcommand
from agentstate.tools.environment import git_environment, hooks_dir, tool_environment
from agentstate.tools.excerpt import is_error_line, output_excerpt, redact
from agentstate.tools.normalise import Unreadable, layers
from agentstate.tools.policy import (
    authorize,
    check_command,
    program_name,
    resolve_program,
    search_path,
)
from agentstate.tools.sandbox import SANDBOX_CACHE, bwrap_command, choose_sandbox

KEEP_BYTES = 64 * 1024  # per stream, head and tail each, kept in memory for the result
KEEP_ERROR_LINES = 100  # error-looking lines kept from the middle that head and tail drop
TIMEOUT_EXIT = 124  # what `timeout(1)` uses; documented for `agentstate exec`


@dataclass
class ToolResult:
    argv: list[str]
    program: str
    allowed: bool
    reason: str
    exit_code: int | None = None
    duration_ms: int = 0
    timed_out: bool = False
    not_found: bool = False
    interrupted: bool = False  # Ctrl-C while it ran: the process group was killed
    stdout: str = ""  # head and tail of the output (at most 2 x KEEP_BYTES each)
    stderr: str = ""
    excerpt: str = ""  # what was logged (redacted)
    output_digest: str | None = None
    call_id: str = ""
    event: str | None = None  # evt:… when a run was active
    run: str | None = None
    cwd: str = ""
    sandbox: str = "none"  # what it ran in: "bwrap" or "none"
    sandbox_note: str | None = None  # why there was no sandbox (the policy was the only line)

    @property
    def ok(self) -> bool:
        return self.allowed and not self.timed_out and not self.not_found and self.exit_code == 0

    @property
    def status(self) -> str:
        if not self.allowed:
            return "denied"
        if self.not_found:
            return "not found"
        if self.timed_out:
            return "timed out"
        if self.interrupted:
            return "interrupted"
        return f"exit {self.exit_code}"


def command_line(argv: list[str]) -> str:
    return shlex.join(argv)


class _Capture:
    """Reads one stream to the end: keeps head and tail, hashes everything, optionally echoes."""

    def __init__(self, stream: IO[bytes], echo: IO[bytes] | None) -> None:
        self.stream = stream
        self.echo = echo
        self.head = bytearray()
        self.tail = bytearray()
        self.middle: list[str] = []  # error lines of the dropped middle, newest last
        self.total = 0
        self.digest = hashlib.sha256()
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        # read1: whatever is there now (up to 64 KiB), so output is echoed as it comes.
        read = getattr(self.stream, "read1", self.stream.read)
        for data in iter(lambda: read(65536), b""):
            self.total += len(data)
            self.digest.update(data)
            chunk = data
            if len(self.head) < KEEP_BYTES:
                room = KEEP_BYTES - len(self.head)
                self.head.extend(chunk[:room])
                chunk = chunk[room:]
            if chunk:
                self.tail.extend(chunk)
                if len(self.tail) > KEEP_BYTES:
                    dropped = bytes(self.tail[: len(self.tail) - KEEP_BYTES])
                    del self.tail[: len(self.tail) - KEEP_BYTES]
                    self._keep_errors(dropped)
            if self.echo is not None:
                try:
                    self.echo.write(data)
                    self.echo.flush()
                except (OSError, ValueError):
                    self.echo = None
        self.stream.close()

    def _keep_errors(self, dropped: bytes) -> None:
        # A failure in the middle of a long output (pytest's `E   assert` lines between
        # pages of progress) must survive the cut: the excerpt is chosen from these too.
        lines = dropped.decode("utf-8", errors="replace").split("\n")
        self.middle.extend(line for line in lines if is_error_line(line))
        del self.middle[:-KEEP_ERROR_LINES]

    def text(self) -> str:
        data = bytes(self.head)
        if self.tail:
            if self.total > len(self.head) + len(self.tail):
                data += b"\n[... output cut ...]\n"
                if self.middle:
                    kept = "\n".join(self.middle)
                    data += kept.encode() + b"\n[... output cut ...]\n"
            data += bytes(self.tail)
        return data.decode("utf-8", errors="replace")


def _target_run(store: Store, run_ref: str | None) -> Run | None:
    if run_ref:
        run = resolve_run(store, run_ref)
        if run.status != RunStatus.ACTIVE:
            raise InvalidInput(f"{run.ref} has ended ({run.status}); name an active run")
        return run
    return current_run(store)


def _resolve_cwd(store: Store, cwd: str | Path | None) -> Path:
    where = Path(cwd) if cwd is not None else Path.cwd()
    if not where.is_dir():
        raise InvalidInput(f"working directory {where} does not exist")
    return where.resolve()


def run_tool(
    store: Store,
    argv: list[str],
    run_ref: str | None = None,
    timeout: float | None = None,
    cwd: str | Path | None = None,
    *,
    purpose: str | None = None,
    echo: bool = False,
    env: dict[str, str] | None = None,
    writable: Sequence[str | Path] = (),
) -> ToolResult:
    """Check the policy, run `argv` without a shell, log it, and return what happened.

    Never raises for the command's own failure (denied, missing, non-zero, timeout): the
    result says so and the call is logged. Raises InvalidInput for an empty command, a bad
    timeout, a missing working directory or an ended run (checked before anything runs).
    With `echo`, output streams to this process's stdout/stderr as it arrives. `env` adds
    variables (never one config.py refuses); `writable`: directories outside the
    repository that the command may write in the sandbox (a temp dir).
    """
    argv = [str(a) for a in argv]
    if not argv or not argv[0].strip():
        raise InvalidInput("no command given (usage: agentstate exec -- CMD [ARGS...])")
    if timeout is None:
        timeout = store.settings.tools.timeout or None  # 0 in the config: no limit
    elif not timeout > 0:  # also catches NaN
        raise InvalidInput(f"timeout must be a positive number of seconds, got {timeout}")
    run = _target_run(store, run_ref)
    where = _resolve_cwd(store, cwd)
    program = program_name(argv[0])
    tools = store.settings.tools
    verdict = authorize(tools, argv, cwd=where, base=store.work_tree)
    decision = verdict.decision
    result = ToolResult(argv=argv, program=program, allowed=decision.allowed,
                        reason=decision.reason, cwd=str(where), not_found=verdict.not_found)
    if decision.allowed and verdict.executable is not None:
        command, executable = argv, verdict.executable
        dirs = search_path(tools, store.work_tree)
        choice = choose_sandbox(tools.sandbox, resolve_program("bwrap", dirs, where))
        result.sandbox, result.sandbox_note = choice.kind, choice.note
        child_env = _environment(store, argv, dirs, env)
        if choice.kind == "bwrap":
            assert choice.bwrap is not None  # authorize refuses when it is missing
            allowed = [Path(p) for p in writable]
            command = bwrap_command(choice.bwrap, executable, argv, cwd=where,
                                    work_tree=store.work_tree, store_dir=store.root,
                                    writable=allowed, network=tools.network,
                                    visible=[*map(Path, dirs), *_program_folders(executable)])
            executable = choice.bwrap
            child_env["XDG_CACHE_HOME"] = SANDBOX_CACHE
            tmp = child_env.get("TMPDIR")
            inside = [store.work_tree.resolve(), *(p.resolve() for p in allowed)]
            if tmp and not any(Path(tmp).resolve().is_relative_to(p) for p in inside):
                del child_env["TMPDIR"]  # hidden by the private /tmp: use that one
        try:
            _execute(result, command, executable, where, timeout, echo, child_env)
        except KeyboardInterrupt:
            # The call was cut short, but it ran: log it before the interrupt goes on.
            _log(store, result, run, purpose)
            raise
    _log(store, result, run, purpose)
    return result


def _environment(store: Store, argv: list[str], dirs: list[str],
                 extra: dict[str, str] | None) -> dict[str, str]:
    """The allow-listed environment (tools/environment.py), with git's safe settings and an
    empty alias for every git subcommand the command line names."""
    tools = store.settings.tools
    try:
        found = layers(argv)
    except Unreadable:  # authorize refused such a command already; be safe regardless
        found = []
    subs = [sub for layer in found if program_name(layer.argv[0]) == "git"
            for sub in [git_subcommand(layer.argv[1:])] if sub]
    git = git_environment(subs, hooks_dir(store.work_tree),
                          ssh_allowed=check_command(tools, ["ssh"]).allowed)
    return tool_environment(os.environ, tools.env, extra, dirs, git)


def _execute(
    result: ToolResult,
    argv: list[str],
    executable: str,
    where: Path,
    timeout: float | None,
    echo: bool,
    env: dict[str, str],
) -> None:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            # `executable` is the file the policy resolved; argv[0] stays as written.
            argv, executable=executable, cwd=where, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=None if echo else subprocess.DEVNULL,
            # Own process group, so a timeout kills the command's children too.
            start_new_session=True,
        )
    except FileNotFoundError:
        result.not_found = True
        result.reason = f"command not found: {executable}"
        return
    except PermissionError:
        result.not_found = True
        result.reason = f"cannot execute {executable}: permission denied"
        return
    except OSError as exc:
        result.not_found = True
        result.reason = f"cannot execute {executable}: {exc.strerror or exc}"
        return
    out = _Capture(proc.stdout, sys.stdout.buffer if echo else None)  # type: ignore[arg-type]
    err = _Capture(proc.stderr, sys.stderr.buffer if echo else None)  # type: ignore[arg-type]
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        result.timed_out = True
        result.reason = f"timed out after {timeout:g}s (process group killed)"
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
    except KeyboardInterrupt:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()
        result.interrupted = True
        result.reason = "interrupted (process group killed)"
        result.duration_ms = int((time.monotonic() - started) * 1000)
        out.thread.join(timeout=5)
        err.thread.join(timeout=5)
        result.stdout, result.stderr = out.text(), err.text()
        result.excerpt = output_excerpt(result.stdout, result.stderr)
        raise
    out.thread.join(timeout=5)
    err.thread.join(timeout=5)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    result.exit_code = None if result.timed_out else proc.returncode
    result.stdout, result.stderr = out.text(), err.text()
    combined = hashlib.sha256(out.digest.digest() + err.digest.digest())
    result.output_digest = "sha256:" + combined.hexdigest()
    result.excerpt = output_excerpt(result.stdout, result.stderr)


def _log(store: Store, result: ToolResult, run: Run | None, purpose: str | None) -> None:
    cmd = [redact(a) for a in result.argv]
    line = redact(command_line(result.argv))
    if not result.allowed:
        text = f"denied: $ {line} ({result.reason})"
    elif result.not_found:
        text = f"not run: $ {line} ({result.reason})"
    elif result.timed_out:
        text = f"$ {line} → timed out after {result.duration_ms / 1000:.1f}s"
    elif result.interrupted:
        text = f"$ {line} → interrupted after {result.duration_ms / 1000:.1f}s"
    else:
        text = f"$ {line} → exit {result.exit_code} in {result.duration_ms / 1000:.2f}s"
    call_id = store.new_id()
    meta = {
        "command": cmd,
        "program": result.program,
        "allowed": result.allowed,
        "reason": redact(result.reason),
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        "timed_out": result.timed_out,
        "not_found": result.not_found,
        "output_digest": result.output_digest,
        "excerpt": result.excerpt,
        "tool_call": call_id,
    }
    if result.interrupted:
        meta["interrupted"] = True
    if purpose:
        meta["purpose"] = purpose
    with store.transaction():
        event = None
        if run is not None:
            event = append_event(
                store, run.ref, "tool", text, source=tool_source(result.program), meta=meta,
                allow_system_kinds=True,
            )
        row = {
            "id": call_id,
            "event": event.id if event else None,
            "run": run.id if run else None,
            "command": json.dumps(cmd, ensure_ascii=False),
            "program": result.program,
            "allowed": int(result.allowed),
            "reason": None if result.ok else redact(result.reason),
            "exit_code": result.exit_code,
            "duration_ms": result.duration_ms,
            "timed_out": int(result.timed_out),
            "output_digest": result.output_digest,
            "excerpt": result.excerpt,
            "cwd": result.cwd,
            "purpose": purpose,
            "ts": store.now(),
        }
        store.insert("tool_calls", row)
    result.call_id = call_id
    result.event = event.ref if event else None
    result.run = run.ref if run else None


@dataclass(frozen=True)
class ToolCall:
    """One logged command of the tool layer (a `tool_calls` row), refs spelled out."""

    id: str
    event: str | None  # evt:… (None when no run was active)
    run: str | None  # run:…
    command: list[str]
    program: str
    allowed: bool
    reason: str | None
    exit_code: int | None
    duration_ms: int | None
    timed_out: bool
    output_digest: str | None
    excerpt: str | None
    cwd: str | None
    purpose: str | None
    ts: str


def list_tool_calls(store: Store, run_ref: str | None = None,
                    limit: int = 50) -> list[ToolCall]:
    """Recent tool calls (newest first), optionally of one run."""
    sql = "SELECT * FROM tool_calls"
    params: list[Any] = []
    if run_ref:
        sql += " WHERE run = ?"
        params.append(resolve_run(store, run_ref).id)
    sql += " ORDER BY ts DESC, rowid DESC LIMIT ?"
    params.append(limit)
    return [
        ToolCall(
            id=row["id"], event=make_ref("evt", row["event"]) if row["event"] else None,
            run=make_ref("run", row["run"]) if row["run"] else None,
            command=json.loads(row["command"]), program=row["program"],
            allowed=bool(row["allowed"]), reason=row["reason"], exit_code=row["exit_code"],
            duration_ms=row["duration_ms"], timed_out=bool(row["timed_out"]),
            output_digest=row["output_digest"], excerpt=row["excerpt"], cwd=row["cwd"],
            purpose=row["purpose"], ts=row["ts"],
        )
        for row in store.rows(sql, params)
    ]


@dataclass
class Availability:
    tool: str
    on_path: bool
    allowed: bool
    declared: bool = False
    reason: str = ""
    problems: list[str] = field(default_factory=list)


def tool_availability(tools: ToolSettings, tool: str, base: Path | None = None) -> Availability:
    """Can the tool layer run this tool here: on the [tools] path (relative entries from
    `base`, default the current directory) and allowed, or declared in [tools]?"""
    from agentstate.tools.policy import declared_tools

    if tool in declared_tools(tools):
        return Availability(tool, on_path=False, allowed=True, declared=True,
                            reason="declared in [tools] definitions")
    where = base or Path.cwd()
    on_path = resolve_program(tool, search_path(tools, where), where) is not None
    decision = check_command(tools, [tool])
    problems = []
    if not on_path:
        problems.append(f"required tool {tool!r} is not on PATH")
    if not decision.allowed:
        problems.append(f"required tool {tool!r} is not allowed: {decision.reason}")
    return Availability(tool, on_path=on_path, allowed=decision.allowed,
                        reason=decision.reason, problems=problems)


def _program_folders(executable: str) -> list[Path]:
    """Folders the program needs to see even when they lie under the sandbox's private /tmp:
    its own folder; the whole virtualenv it belongs to (its site-packages); and the source
    folder of this agentstate (a nested `agentstate` in a development or CI checkout under
    /tmp imports it from there). Read-only."""
    folder = Path(executable).parent
    found = [folder]
    if (folder.parent / "pyvenv.cfg").is_file():
        found.append(folder.parent)
    found.append(Path(__file__).resolve().parents[2])  # agentstate/tools/runner.py
    return found

