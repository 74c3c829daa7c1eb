"""The `agentstate` console entry point.

`agentstate hook AGENT …` is what installed agent and git hooks run on every prompt and tool
call: it goes straight to the hook handler, without importing Typer or building the command
tree, and for agents' hooks through the warm helper process (integrations/hook_client.py). A
bare `agentstate sync` with nothing new is answered the same way (integrations/sync_runner.py;
anything else falls through), and a bare `agentstate mcp` on a ready store is served without
the CLI (`serve_if_ready`), and so is `agentstate context` in its common forms
(integrations/context_runner.py), and `agentstate gc --json` (integrations/gc_runner.py).
Everything else, `hook --help` included, goes through the CLI (`agentstate.cli.main`).
"""

from __future__ import annotations

import io
import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "hook" and not {"--help", "-h"} & set(argv[1:]):
        sys.exit(_hook(argv))
    if argv in (["sync"], ["sync", "--json"]):
        from agentstate.integrations.sync_runner import run_quick_sync

        if run_quick_sync(argv[-1] == "--json", os.environ.get("AGENTSTATE_DIR") or None):
            sys.exit(0)
    if argv[:1] == ["context"]:
        from agentstate.integrations.context_runner import run_quick_context
        from agentstate.integrations.one_shot import leave

        code = run_quick_context(argv[1:], os.environ.get("AGENTSTATE_DIR") or None)
        if code is not None:
            leave(code)
    if argv == ["gc", "--json"]:
        from agentstate.integrations.gc_runner import run_quick_gc
        from agentstate.integrations.one_shot import leave

        code = run_quick_gc(os.environ.get("AGENTSTATE_DIR") or None)
        if code is not None:
            leave(code)
    if argv == ["mcp"]:
        from agentstate.integrations.mcp_server import serve_if_ready

        if serve_if_ready(os.environ.get("AGENTSTATE_DIR") or None):
            sys.exit(0)
    from agentstate.cli import main as cli_main

    cli_main()


def _hook(argv: list[str]) -> int:
    """An agent's hook goes to the warm helper process when there is one (most of a hook's
    cost is a cold start), else runs here and starts a helper for the next one. Git hooks
    always run here: they are rare, and git may hand them a terminal, not a payload."""
    stdin, start = None, False
    if argv[1] != "git":
        from agentstate.integrations.hook_client import ask_helper, start_helper

        stdin = sys.stdin.buffer.read()
        reply = ask_helper(argv, stdin)
        if reply.ran:
            sys.stdout.write(reply.stdout)
            sys.stdout.flush()
            sys.stderr.write(reply.stderr)
            return reply.code
        start = reply.start
    from agentstate.integrations.hook_runner import run_hook

    code = run_hook(argv[1], argv[2:], sys.stdin if stdin is None else io.BytesIO(stdin),
                    directory=os.environ.get("AGENTSTATE_DIR") or None)
    if start:
        start_helper()
    return code
