"""Start the ui: pick a free loopback port, print the URL, open the browser, serve.

Bound to 127.0.0.1 only; there is no option to bind elsewhere (the pages act as the owner).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from pathlib import Path

from agentstate.errors import InvalidInput
from agentstate.web.security import Guard

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PORTS_TRIED = 50


def bind_free_port(port: int, tries: int = PORTS_TRIED) -> tuple[socket.socket, bool]:
    """A listening socket on 127.0.0.1 at `port`, or the next free port above it (the bool
    says whether it moved). The socket is handed to uvicorn, so no other process can take
    the port between the check and the start."""
    if not 0 < port < 65536:
        raise InvalidInput(f"--port must be between 1 and 65535, got {port}")
    last = min(port + tries, 65536)
    for candidate in range(port, last):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((HOST, candidate))
        except OSError as exc:
            sock.close()
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                continue
            raise
        sock.listen(128)
        return sock, candidate != port
    raise InvalidInput(f"no free port on {HOST} from {port} to {last - 1}; pass --port")


def serve(store_dir: str | Path, *, port: int, open_browser: bool,
          say: Callable[[str], None] = print) -> None:
    import uvicorn

    from agentstate.web.app import create_app

    sock, moved = bind_free_port(port)
    actual = sock.getsockname()[1]
    guard = Guard(port=actual)
    if moved:
        say(f"port {port} is in use; serving on {actual} instead")
    say(f"agentstate ui for {store_dir}: {guard.url()}")
    say("(this address holds the page's key: do not share it; Ctrl-C stops the server)")
    if open_browser:
        import webbrowser

        webbrowser.open(guard.url())
    config = uvicorn.Config(create_app(store_dir, guard), log_level="warning",
                            access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    server.run(sockets=[sock])
