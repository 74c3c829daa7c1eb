"""`agentstate mcp`: serve the store to an MCP client over stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import cli_store, store_override


@app.command("mcp")
def mcp_cmd(
    principal: Annotated[
        str | None,
        typer.Option("--as", metavar="PRINCIPAL",
                     help="Act as this principal (declared in config.toml [principals]). "
                          "Default: agent, whatever AGENTSTATE_PRINCIPAL says."),
    ] = None,
) -> None:
    """Serve this store to any MCP client over stdio (stdin/stdout carry the protocol).

    Tools: resume, context, recall, remember, log_event, checkpoint, skill_list, skill_load,
    trace; resource: agentstate://resume. Each call opens the store afresh, so writes by
    other processes are seen. Writes go through the same gates as the CLI, as the `agent`
    principal by default: a model's claim without evidence becomes a candidate.
    """
    from agentstate.integrations.mcp_server import DEFAULT_PRINCIPAL
    from agentstate.store.principals import resolve_principal

    who = principal or DEFAULT_PRINCIPAL
    with cli_store() as store:  # no store, or an undeclared principal: fail before serving
        resolve_principal(store, who)
    from agentstate.integrations import mcp_server

    mcp_server.serve(store_override(), who)
