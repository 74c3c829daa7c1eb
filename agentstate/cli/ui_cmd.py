"""`agentstate ui`: a local web view of this store (agentstate.web)."""

from __future__ import annotations

from typing import Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import cli_store
from agentstate.distribution import install_hint

# Three requirements in one hint: quoted so that the printed command installs all three.
INSTALL_HINT = install_hint("ui", "starlette>=0.37' 'uvicorn>=0.29' 'jinja2>=3.1")


@app.command("ui")
def ui_cmd(
    port: Annotated[int, typer.Option("--port", metavar="N",
                                      help="Port on 127.0.0.1 (the next free one if taken).")
                    ] = 8765,
    no_browser: Annotated[bool, typer.Option("--no-browser",
                                             help="Print the URL; do not open a browser.")
                          ] = False,
) -> None:
    """Browse this store in a local web page: runs, what the model saw, memory review,
    skills.

    Serves on 127.0.0.1 only, as the owner principal, with a random key in the URL that
    changes at every launch (requests without it are refused). Memory review actions go
    through the same gates as `memory confirm` and `forget`. Needs the ui extra
    (pip install '.[ui]' from a clone).
    """
    from agentstate.store.principals import resolve_principal
    from agentstate.web.views import PRINCIPAL

    with cli_store() as store:  # migrated, and the owner declared, before the server starts
        resolve_principal(store, PRINCIPAL)
        root = store.root
    try:
        from agentstate.web import server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("starlette", "uvicorn", "jinja2",
                                                   "markupsafe"):
            raise
        from agentstate.output import info

        info(f"error: `agentstate ui` needs the ui extra, which is not installed: {INSTALL_HINT}")
        raise typer.Exit(1) from None
    from agentstate.output import info

    server.serve(root, port=port, open_browser=not no_browser, say=info)
