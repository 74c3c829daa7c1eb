"""The `agentstate` console entry point.

`agentstate hook AGENT …` is what installed agent and git hooks run on every prompt and tool
call: it goes straight to the hook handler, without importing Typer or building the command
tree. A bare `agentstate sync` with nothing new is answered the same way
(integrations/sync_runner.py; anything else falls through). Everything else, `hook --help`
included, goes through the CLI (`agentstate.cli.main`).
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "hook" and not {"--help", "-h"} & set(argv[1:]):
        from agentstate.integrations.hook_runner import run_hook

        sys.exit(run_hook(argv[1], argv[2:], sys.stdin,
                          directory=os.environ.get("AGENTSTATE_DIR") or None))
    if argv in (["sync"], ["sync", "--json"]):
        from agentstate.integrations.sync_runner import run_quick_sync

        if run_quick_sync(argv[-1] == "--json", os.environ.get("AGENTSTATE_DIR") or None):
            sys.exit(0)
    from agentstate.cli import main as cli_main

    cli_main()
