"""`agentstate sync` with nothing new, answered before the CLI is built.

Git hooks and people run `agentstate sync` after every pull and commit; most of those runs
find nothing new, and building the Typer command tree and rich's console cost more than the
answer (issue 24: ≤ 0.2 s as a whole process). `agentstate.entry` calls this for a bare
`agentstate sync` (or `sync --json`): when the store is there, fully migrated, and the
stored digest says nothing changed, it prints what the command would print and the process
ends. Anything else — no store, a pending migration, a changed folder, any error — returns
False and the full command runs (and reports), so nothing is decided here that the command
would decide differently.
"""

from __future__ import annotations

import sys


def run_quick_sync(as_json: bool, directory: str | None) -> bool:
    """True when the sync had nothing to do and its output is printed."""
    try:
        from agentstate.store.db import open_store
        from agentstate.store.migrations import store_up_to_date
        from agentstate.store.principals import resolve_principal
        from agentstate.sync import nothing_new

        store = open_store(directory, migrate=False)
    except Exception:  # the full command opens it again and reports
        return False
    try:
        result = (nothing_new(store, principal=resolve_principal(store))
                  if store_up_to_date(store) else None)
    except Exception:  # likewise: never a traceback from the fast path
        result = None
    finally:
        store.close()
    if result is None:
        return False
    from agentstate.output import envelope_ok, print_json, visible

    if as_json:
        print_json(envelope_ok("sync", result))
    else:
        sys.stdout.write("".join(visible(line) + "\n" for line in result.summary_lines()))
        sys.stdout.flush()
    return True
