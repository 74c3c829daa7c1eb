"""`agentstate gc --json` answered before the CLI is built.

A gc is measured against a copy of the database (issue 24: within 2×), and importing Typer,
building the command tree and the CLI's modules cost ~40 ms of CPU of a process whose work
is SQLite's. `agentstate.entry` hands this the command line `gc --json` (nothing else: the
human form prints through rich and the full command's console). When the store opens as it
is (fully migrated, no team to join) and the principal resolves, the gc runs here and its
envelope is printed; anything failing before the gc starts — no store, a pending migration,
a bad config — returns None with nothing printed or written, and the full command runs and
reports. An error raised by the gc itself is reported as the CLI's boundary reports it (the
same mapping, `error_boundary.classify`, and the same envelope), since running the gc a
second time would not be the command the user ran.

What the full command does besides, and why it is not needed here: it tells when the
current run changed (a gc never touches `runs` nor the current-run marker), and when it
joined a team's store or applied migrations (those fall through).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.maintenance.gc import GcResult
    from agentstate.store.db import Store

COMMAND = "gc"


def run_quick_gc(directory: str | None) -> int | None:
    """The exit code when the gc ran here (its envelope printed), else None (nothing printed,
    nothing written: the full command runs). The process runs one gc and ends
    (integrations/one_shot.py: without the collector, and `entry` leaves without the
    interpreter's teardown)."""
    from agentstate.store.collector import without_collector

    return without_collector(lambda: _quick(directory))


def _quick(directory: str | None) -> int | None:
    try:
        from agentstate.store.db import open_store

        store = open_store(directory, migrate=False)
    except Exception:  # noqa: BLE001 - the full command opens it again and reports
        return None
    try:
        return _run(store)
    finally:
        store.close()


def _run(store: Store) -> int | None:
    from agentstate.maintenance.gc import gc
    from agentstate.store.migrations import store_up_to_date
    from agentstate.store.principals import resolve_principal

    try:
        if not store_up_to_date(store):
            return None
        principal = resolve_principal(store)
    except Exception:  # noqa: BLE001 - nothing done yet: the full command decides and reports
        return None
    try:
        result = gc(store, principal=principal)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - as the CLI's boundary
        return _failed(exc)
    return _printed(result)


def _printed(result: GcResult) -> int:
    from agentstate.output import envelope_ok, print_json

    try:
        print_json(envelope_ok(COMMAND, result))
    except BrokenPipeError:
        from agentstate.error_boundary import stdout_gone

        return stdout_gone()
    return 0


def _failed(exc: BaseException) -> int:
    """What cli/boundary.py's `run` prints under --json: the envelope on stdout, and for a
    bug (an exception outside the mapping) the one line naming its crash log on stderr."""
    from agentstate.error_boundary import classify
    from agentstate.output import envelope_error, info, print_json

    failure = classify(exc, [COMMAND, "--json"])
    error = failure.error
    try:
        if failure.bug:
            info(f"error: {error.message}")
        print_json(envelope_error(COMMAND, error.code, error.message, error.details))
    except BrokenPipeError:
        from agentstate.error_boundary import stdout_gone

        return stdout_gone()
    return error.exit_code
