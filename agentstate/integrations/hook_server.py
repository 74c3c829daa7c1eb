"""The hook helper: a warm process that runs agent hooks for hook processes that ask it.

Started in the background by the first hook that finds none (integrations/hook_client.py),
one per user and installation. It imports what hooks use once, then forks a child per hook:
the child takes on the hook process's environment, working directory and umask, runs the
same handler the hook would have run in process (`run_hook`), and sends back its exit code
and output. Forking keeps hooks apart (nothing one hook sets is seen by the next; two hooks
run side by side) while each child starts with every module already imported.

It never runs older code than the installed one: every request first compares the package's
files (names, sizes, modification times) with what it imported, and on any change answers
"stale" and exits, so the hook runs in process and starts a fresh helper. It exits after
`AGENTSTATE_HOOK_HELPER_IDLE` seconds without a hook (default 600), and only this user can
reach it: the socket sits in a directory only the user can enter, and each connection's peer
must be the same user.
"""

from __future__ import annotations

import atexit
import fcntl
import io
import json
import marshal
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from agentstate.integrations.hook_client import (
    GO,
    OTHER,
    PROTOCOL,
    READY,
    STALE,
    package_dir,
    private_dir,
    read_frame,
    send_frame,
    socket_path,
)

DEFAULT_IDLE_S = 600.0
LOCK_ATTEMPTS, LOCK_RETRY_S = 20, 0.05
STOP_WAIT_S = 5.0
# How long a connected hook process may take to send its request (the helper waits for it
# before forking: hook processes send at once, so this only bounds a stalled one).
REQUEST_TIMEOUT_S = 5.0
MAX_HEADER_BYTES = 64 << 20



def idle_seconds() -> float:
    try:
        value = float(os.environ.get("AGENTSTATE_HOOK_HELPER_IDLE", DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S
    return value if value > 0 else DEFAULT_IDLE_S


def code_stamp(root: str) -> tuple[tuple[str, int, int], ...]:
    """The package's Python files as (path, size, mtime): what an upgrade or an edit
    changes."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                found.append((path, info.st_size, info.st_mtime_ns))
    return tuple(sorted(found))


# One of each kind of hook, rehearsed on a scratch store before the first fork: what a hook
# builds on first use (compiled patterns, parsed rules, the tokenizer, SQLite's first-open
# work) is then built once in the helper and shared by every child, instead of in each.
REHEARSAL: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("claude-code", "SessionStart", {"source": "startup"}),
    ("claude-code", "UserPromptSubmit", {"prompt": "rehearse: fix the parser test"}),
    ("claude-code", "PostToolUse", {
        "tool_name": "Bash", "tool_use_id": "rehearsal-1",
        "tool_input": {"command": "python -m pytest -q"},
        "tool_response": {"stdout": "F\nFAILED test_parse.py::test_parse - AssertionError: "
                                    "expected 3 got 4\n1 failed in 0.01s", "stderr": "",
                          "interrupted": False}}),
    ("codex", "PostToolUse", {
        "tool_name": "shell", "tool_use_id": "rehearsal-2",
        "tool_input": {"command": ["git", "status"]},
        "tool_response": "Process exited with code 0\nOutput:\nnothing to commit"}),
    ("claude-code", "Stop", {"stop_hook_active": False}),
    ("claude-code", "SessionStart", {"source": "resume"}),
)


def warm() -> None:
    import gc

    _import_what_hooks_use()
    rehearse()
    from agentstate.tokens import prepare_to_fork

    prepare_to_fork()
    # What the helper holds now is never collected, so a child's collections do not touch
    # (and copy) the pages it shares with the helper.
    gc.freeze()


def _import_what_hooks_use() -> tuple[object, ...]:
    """What hooks import, loaded once before the first fork (tests/integrations/
    test_hook_helper.py checks that a hook run in a child after warm() imports no further
    agentstate module): the handler, the store and its migrations check, the run log,
    transcripts for the catch-up, and the resume pack SessionStart builds."""
    import subprocess

    from agentstate import config, error_boundary, output
    from agentstate.context import resume
    from agentstate.integrations import (
        hook_keys,
        hook_payload,
        hook_runner,
        hook_tool,
        hooks,
        paths,
        tool_outcome,
        transcripts,
    )
    from agentstate.maintenance import join
    from agentstate.memory import review
    from agentstate.runs import checkpoint, log, sessions, worktree
    from agentstate.store import db, hooklog, limits, migrations, principals, sources
    from agentstate.tokens import memo
    from agentstate.tools import excerpt

    return (subprocess, config, error_boundary, output, resume, hook_keys, hook_payload,
            hook_runner, hook_tool, hooks, paths, tool_outcome, transcripts, join, review,
            checkpoint, log, sessions, worktree, db, hooklog, limits, migrations, principals,
            sources, memo, excerpt)


def rehearse() -> list[str]:
    """Run REHEARSAL on a scratch repository's store, then remove it; what went wrong, if
    anything. A warm-up only: a failure just leaves the children to build what it would
    have."""
    import shutil
    import tempfile
    from pathlib import Path

    from agentstate.maintenance.init import init_store

    here, saved = os.getcwd(), dict(os.environ)
    folder = tempfile.mkdtemp(prefix="agentstate-rehearsal-")
    problems = []
    try:
        os.chdir(folder)
        os.environ["AGENTSTATE_DIR"] = os.path.join(folder, ".agentstate")
        init_store(target=Path(folder))
        for agent, event, extra in REHEARSAL:
            payload = {"session_id": "rehearsal", "hook_event_name": event, "cwd": folder,
                       **extra}
            code, _, err = run_captured(["hook", agent, event], json.dumps(payload).encode())
            if code or err:
                problems.append(f"{agent} {event}: exit {code}: {err.strip()}")
    except Exception as exc:  # noqa: BLE001 - a warm-up; the hooks themselves report failures
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(folder, ignore_errors=True)
    return problems


def serve(path: str | None = None) -> int:
    """Run the helper until it is idle or its code changes; 0 when another helper already
    holds the socket."""
    path = path or socket_path()
    if not private_dir(os.path.dirname(path), create=True):
        return 1
    lock = _take_lock(path)
    if lock is None:
        return 0  # another helper is running
    signal.signal(signal.SIGTERM, _leave)
    warm()
    stamp = code_stamp(package_dir())
    listener = _listen(path)
    mine = os.stat(path).st_ino
    # Children are reaped by the kernel; each child sets this back before running a hook
    # (git and the tool layer wait for their own subprocesses).
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    stale = None
    try:
        stale = _accept_until_idle(listener, stamp, lock)
    finally:
        # Socket and lock go before "stale" is answered: the hook that hears it starts the
        # next helper at once, which must find the place free.
        _remove_if_mine(path, mine)
        listener.close()
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    if stale is not None:
        with stale:
            _answer_stale(stale)
    return 0


def _answer_stale(conn: socket.socket) -> None:
    # The request is read first: a socket closed on unread data may reset the connection
    # before the hook process reads the answer, and then it would not start a new helper.
    try:
        conn.settimeout(REQUEST_TIMEOUT_S)
        read_frame(conn, MAX_HEADER_BYTES)
        read_frame(conn)
    except (OSError, ConnectionError):
        return
    _send_quietly(conn, STALE)


def _take_lock(path: str) -> int | None:
    """The helper's lock, held for its life; a helper leaving for new code may still hold
    it for a moment, so a new one tries for up to a second."""
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    for attempt in range(LOCK_ATTEMPTS):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if attempt + 1 < LOCK_ATTEMPTS:
                time.sleep(LOCK_RETRY_S)
            continue
        # The lock file names the holder, for `hooks helper` (status, --stop).
        os.ftruncate(lock, 0)
        os.write(lock, str(os.getpid()).encode())
        return lock
    os.close(lock)
    return None


def _leave(signum: int, frame: object) -> None:
    raise SystemExit(0)  # through serve's `finally`: the socket file goes too


def helper_pid(path: str | None = None) -> int | None:
    """The running helper's process id, or None when none holds the lock."""
    lock_path = (path or socket_path()) + ".lock"
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode(errors="replace").strip()
            return int(text) if text.isdigit() else None
        return None  # nobody holds it
    finally:
        os.close(fd)


def stop_helper(path: str | None = None, wait_s: float = STOP_WAIT_S) -> int | None:
    """Ask the running helper to leave (hooks then run in process until the next one
    starts) and wait up to `wait_s` for it to be gone; its process id, or None when none was
    running."""
    pid = helper_pid(path)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break  # gone, its last writes (the count cache) done
        time.sleep(0.02)
    return pid


def stop_helpers_in(folder: str) -> list[int]:
    """Stop every helper whose socket is in `folder` (a runtime directory of a test or a
    benchmark's own); their process ids."""
    stopped = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.endswith(".sock.lock"):
            pid = stop_helper(os.path.join(folder, name[: -len(".lock")]))
            if pid is not None:
                stopped.append(pid)
    return stopped


def _listen(path: str) -> socket.socket:
    # Holding the lock means no live helper owns a socket file left at `path`.
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(64)
    return listener


def _remove_if_mine(path: str, inode: int) -> None:
    try:
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    except OSError:
        pass


def _accept_until_idle(listener: socket.socket, stamp: tuple[tuple[str, int, int], ...],
                       lock: int) -> socket.socket | None:
    """Serve until idle (None) or until a hook finds the code changed (its connection)."""
    listener.settimeout(idle_seconds())
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            return None
        if code_stamp(package_dir()) != stamp:
            return conn
        with conn:
            request = _read_request(conn) if _same_user(conn) else None
            if request is None:
                continue  # the hook process sees no answer and runs the hook itself
            _parse_config_ahead(request[0])
            try:
                pid = os.fork()
            except OSError:
                continue
            if pid == 0:
                _child(listener, conn, lock, request)


def _same_user(conn: socket.socket) -> bool:
    peer = getattr(socket, "SO_PEERCRED", None)
    if peer is None:
        return True  # the socket's directory is the only gate on systems without it
    import struct

    creds = conn.getsockopt(socket.SOL_SOCKET, peer, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1] == os.getuid()


def _send_quietly(conn: socket.socket, data: bytes) -> None:
    try:
        conn.sendall(data)
    except OSError:
        pass


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], bytes] | None:
    """The hook's header and stdin, read here (before the fork) so that the store's config
    can be parsed ahead; None when the hook process sent nothing usable in time."""
    try:
        conn.settimeout(REQUEST_TIMEOUT_S)
        header = marshal.loads(read_frame(conn, MAX_HEADER_BYTES))
        stdin = read_frame(conn)
    except (OSError, ConnectionError, ValueError, EOFError, TypeError):
        return None
    return (header, stdin) if isinstance(header, dict) else None


def _parse_config_ahead(header: dict[str, Any]) -> None:
    """Parse the config of the store this hook will open, in the helper, where the result
    (cached by its text) outlives the child: each later hook of that repository then skips
    TOML parsing, most of opening a store. A guess only: the child opens the store itself."""
    from pathlib import Path

    from agentstate.config import CONFIG_NAME, load_settings
    from agentstate.store.db import find_store

    try:
        env = header.get("env") or {}
        # "" rather than None: the hook's own AGENTSTATE_DIR, never the helper's.
        root = find_store(Path(str(header["cwd"])), override=env.get("AGENTSTATE_DIR") or "")
        load_settings(root / CONFIG_NAME)
    except Exception:  # noqa: BLE001, S110 - the child meets and reports any problem
        pass


def _child(listener: socket.socket, conn: socket.socket, lock: int,
           request: tuple[dict[str, Any], bytes]) -> None:
    """Run one hook and leave: never returns into the helper's loop."""
    code = 1
    try:
        listener.close()
        os.close(lock)  # the lock stays the helper's: a child running on does not hold it
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        serve_one(conn, *request)
        code = 0
    finally:
        # What a hook process does at exit (the token counts it learned are saved), without
        # unwinding into the helper's own `finally` (which would remove its socket).
        atexit._run_exitfuncs()
        os._exit(code)


def serve_one(conn: socket.socket, header: dict[str, Any], stdin: bytes) -> None:
    conn.settimeout(REQUEST_TIMEOUT_S)
    if (header.get("protocol") != PROTOCOL or header.get("package") != package_dir()
            or header.get("executable") != sys.executable):
        conn.sendall(OTHER)
        return
    conn.sendall(READY)
    if conn.recv(1) != GO:
        return  # the hook process gave up before confirming and runs the hook itself
    conn.settimeout(None)
    _adopt(header)
    later: list[Callable[[], None]] = []
    code, stdout, stderr = run_captured(header["argv"], stdin, later)
    send_frame(conn, marshal.dumps({"code": code, "stdout": stdout, "stderr": stderr}))
    conn.close()  # the hook process exits on the answer; the agent goes on from here
    for finish in later:
        finish()


def _adopt(header: dict[str, Any]) -> None:
    """Become the hook process: its environment, working directory, umask and argv."""
    os.environ.clear()
    os.environ.update(header["env"])
    os.chdir(header["cwd"])
    os.umask(int(header["umask"]))
    sys.argv = ["agentstate", *header["argv"]]


def run_captured(argv: list[str], stdin: bytes,
                 after_answer: list[Callable[[], None]] | None = None) -> tuple[int, str, str]:
    """`agentstate hook AGENT …` exactly as entry.main runs it, output captured; what may
    wait until the answer is sent goes to `after_answer` (see `run_hook`)."""
    from agentstate.integrations.hook_runner import run_hook

    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    try:
        code = run_hook(argv[1], argv[2:], io.BytesIO(stdin),
                        directory=os.environ.get("AGENTSTATE_DIR") or None,
                        after_answer=after_answer)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return code, out.getvalue(), err.getvalue()


if __name__ == "__main__":
    sys.exit(serve())
