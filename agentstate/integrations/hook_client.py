"""The client side of the hook helper: hand an agent hook to a warm helper process.

An installed hook starts a whole Python process on every prompt and tool call. Most of its
cost is start-up: the standard library the store needs and agentstate's own modules, before
any work. A helper process per user and installation (integrations/hook_server.py) keeps them
imported and forks a child per hook, so the hook process itself only has to connect to a
socket, pass its arguments, environment, working directory and stdin, and print the answer.

This module is what the hook process imports, so it imports nothing beyond the interpreter's
own cheap modules (no dataclasses, no agentstate module): `_socket` rather than `socket`
(whose enums cost a hook more than the whole exchange) and `marshal` rather than `json` (both
ends are the same interpreter — the socket's name says which — and the peer is the same user).
When the helper cannot be reached the hook runs in process as before (`Reply.ran` is False)
and, if the helper simply is not running, the caller starts one for the next hook. Exactly
once: the helper's child runs the hook only after this side has confirmed it (`go`), and this
side falls back only while nothing has been confirmed; once confirmed, a lost answer is an
error, never a second run.

`AGENTSTATE_HOOK_HELPER=0` turns the helper off (every hook in process);
`AGENTSTATE_RUNTIME_DIR` moves its socket (tests; default `$XDG_RUNTIME_DIR/agentstate` or
`/tmp/agentstate-UID`).
"""

from __future__ import annotations

import _socket
import marshal
import os
import stat
import sys
import zlib

PROTOCOL = 1
# Unix socket paths are limited to 108 bytes on Linux (104 on macOS); longer runtime
# directories simply mean no helper.
MAX_SOCKET_PATH = 100
READY, GO, STALE, OTHER = b"R", b"G", b"S", b"O"
CONNECT_TIMEOUT_S = 2.0
# Claude Code and Codex kill a hook after their own timeout (60 s / 600 s by default); the
# client waits as long as the longest of them would.
ANSWER_TIMEOUT_S = 900.0


def enabled(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    return environ.get("AGENTSTATE_HOOK_HELPER", "1").strip().lower() not in {
        "0", "off", "no", "false"}


def package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def runtime_dir(environ: os._Environ[str] | dict[str, str] = os.environ) -> str:
    """Where the helper's socket lives: a directory only this user can enter."""
    chosen = environ.get("AGENTSTATE_RUNTIME_DIR")
    if chosen:
        return chosen
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "agentstate")
    return os.path.join(environ.get("TMPDIR") or "/tmp", f"agentstate-{os.getuid()}")


def socket_path(environ: os._Environ[str] | dict[str, str] = os.environ) -> str:
    """One helper per user and installation: the interpreter and the package's directory
    name it, so a second virtualenv never talks to the first one's helper."""
    install = f"{sys.executable}\0{package_dir()}".encode("utf-8", "surrogateescape")
    return os.path.join(runtime_dir(environ), f"hooks-{zlib.crc32(install):08x}.sock")


def private_dir(path: str, *, create: bool) -> bool:
    """True when `path` is a real directory owned by this user that nobody else can enter
    (created so when asked). Anything else — a symlink, another owner, a group-readable
    directory — means no helper: a socket there could be someone else's."""
    try:
        if create:
            os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and stat.S_IMODE(info.st_mode) & 0o077 == 0)


class Reply:
    """What came of asking the helper: `ran` False means run the hook here; `start` says
    whether to start a helper afterwards (none was running, or it ran older code)."""

    def __init__(self, ran: bool, *, start: bool = False, code: int = 0, stdout: str = "",
                 stderr: str = "") -> None:
        self.ran, self.start, self.code = ran, start, code
        self.stdout, self.stderr = stdout, stderr


def send_frame(conn: _socket.socket, data: bytes) -> None:
    conn.sendall(len(data).to_bytes(8, "big") + data)


def read_exact(conn: _socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("the helper closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(conn: _socket.socket, limit: int = 1 << 31) -> bytes:
    size = int.from_bytes(read_exact(conn, 8), "big")
    if size > limit:
        raise ConnectionError("frame too large")
    return read_exact(conn, size)


def request_header(argv: list[str]) -> bytes:
    umask = os.umask(0o077)
    os.umask(umask)
    return marshal.dumps({
        "protocol": PROTOCOL, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
        "umask": umask, "package": package_dir(), "executable": sys.executable,
    })


def ask_helper(argv: list[str], stdin: bytes) -> Reply:
    """Hand the hook `argv` (after `agentstate`) with its `stdin` to the helper."""
    if not enabled():
        return Reply(False)
    path = socket_path()
    folder = os.path.dirname(path)
    if len(path) > MAX_SOCKET_PATH:
        return Reply(False)
    if not private_dir(folder, create=False):
        # Not there yet: the helper makes it. There but not private: never a helper.
        return Reply(False, start=not os.path.lexists(folder))
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        try:
            conn.connect(path)
            send_frame(conn, request_header(argv))
            send_frame(conn, stdin)
            answer = read_exact(conn, 1)
        except (FileNotFoundError, ConnectionRefusedError):
            return Reply(False, start=True)
        except OSError:  # busy, timed out or gone before confirming: nothing ran there
            return Reply(False)
        if answer != READY:
            return Reply(False, start=answer == STALE)
        conn.sendall(GO)
        conn.settimeout(ANSWER_TIMEOUT_S)
        return _answer(conn)
    finally:
        conn.close()


def _answer(conn: _socket.socket) -> Reply:
    try:
        result = marshal.loads(read_frame(conn))
        return Reply(True, code=int(result["code"]), stdout=str(result["stdout"]),
                     stderr=str(result["stderr"]))
    except (OSError, ValueError, EOFError, KeyError, TypeError) as exc:
        # Confirmed, so the hook may have run: reporting beats running it twice. A hook never
        # breaks the agent, so the exit stays 0.
        return Reply(True, stderr=f"agentstate hook: the hook helper gave no answer ({exc}); "
                                  "set AGENTSTATE_HOOK_HELPER=0 to run hooks in process\n")


def start_helper() -> None:
    """Start the helper in the background for the next hook; never waits for it. The
    child keeps none of the hook's pipes (a client waits for those to close)."""
    import subprocess

    # -P: nothing from the working directory on sys.path (a repository's own `agentstate/`
    # folder must never be imported by the helper). cwd "/": it holds no directory open.
    try:
        subprocess.Popen(
            [sys.executable, "-P", "-m", "agentstate.integrations.hook_server"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd="/", start_new_session=True, close_fds=True)
    except OSError:
        pass  # no helper: the next hook runs in process again
