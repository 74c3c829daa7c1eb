"""What a process that answers one command before the CLI is built shares (`context` and
`gc --json`: integrations/context_runner.py, gc_runner.py): it runs its one job without the
cyclic collector and ends without the interpreter's teardown.

Why: such a process allocates what its imports and its one job need and then ends. The
collector's passes over those allocations free nothing it still needs (the job runs under
store/collector.py's `without_collector`), and the teardown frees every module and object
(~10 ms) only for the process to exit.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """End the process as `sys.exit(code)` would, without the interpreter's teardown: the
    exit functions run (the token counts learned are saved), the store was closed by the
    job, and what is buffered is written."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone: what `stdout_gone` leaves quietly
            pass
    os._exit(code)
