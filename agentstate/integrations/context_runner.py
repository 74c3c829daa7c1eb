"""`agentstate context` printed, and answered before the CLI is built when it can be.

Agents and their hooks call `agentstate context --budget N` on every turn, and building the
Typer command tree costs ~20 ms of CPU per call, a tenth of the command's 0.2 s target
(issue 24). `agentstate.entry` hands this the command lines of the common forms —
`context`, with `--budget N` / `-b N` / `--budget=N`, `--query TEXT` / `-q TEXT` /
`--query=TEXT` and `--json`, each at most once — and
when the store opens as it is (fully migrated, no team to join) the pack is built, recorded
and printed here. Anything else — another option, no store, a pending migration, a budget
refused, any error before the pack is recorded — returns None with nothing printed and
nothing written, and the full command runs and reports, so nothing is decided here that
the command would decide differently. Both paths record and print a pack through the two
functions below. A process that answered here builds one pack and ends, so it runs without
the collector and ends without the interpreter's teardown (integrations/one_shot.py).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.context.assemble import ContextPack
    from agentstate.store.db import Store


# The options with a value, by every name the full command gives them.
_VALUED = {"--budget": "--budget", "-b": "--budget", "--query": "--query", "-q": "--query"}


def quick_form(args: list[str]) -> tuple[str | None, bool, str | None] | None:
    """(budget, --json, query) for a command line of the common forms (the words after
    `context`), else None."""
    values: dict[str, str] = {}
    as_json, seen = False, set()
    rest = iter(args)
    for arg in rest:
        joined = arg.startswith(("--budget=", "--query="))
        name, _, value = arg.partition("=") if joined else (arg, "", "")
        option = _VALUED.get(name, name)
        if option in seen:
            return None  # `-q a --query b`: the full command says which one counts
        seen.add(option)
        if name == "--json" and not value:
            as_json = True
        elif option in ("--budget", "--query"):
            given = value if joined else next(rest, None)
            if given is None or given.startswith("-"):
                return None  # the full command words the usage error
            values[option] = given
        else:
            return None
    return values.get("--budget"), as_json, values.get("--query")


def run_quick_context(args: list[str], directory: str | None) -> int | None:
    """The exit code when the pack was built and printed here, else None (nothing printed,
    nothing written: the full command runs)."""
    form = quick_form(args)
    if form is None:
        return None
    budget, as_json, query = form
    from agentstate.store.collector import without_collector

    return without_collector(lambda: _quick(budget, as_json, query, directory))


def _quick(budget: str | None, as_json: bool, query: str | None,
           directory: str | None) -> int | None:
    try:
        from agentstate.store.db import open_store

        store = open_store(directory, migrate=False)
    except Exception:  # noqa: BLE001 - the full command opens it again and reports
        return None
    pack = None
    try:
        pack = _recorded_pack(store, budget, query)
    except KeyboardInterrupt:  # as the CLI's boundary reports it: one line, exit 130
        from agentstate.errors import Interrupted
        from agentstate.output import envelope_error, info, print_json

        error = Interrupted()
        info(f"error: {error.message}")
        if as_json:
            print_json(envelope_error("context", error.code, error.message))
        return error.exit_code
    finally:
        if pack is None:
            store.close()
        else:  # this process ends once the pack is printed (integrations/one_shot.py)
            store.close_at_exit()
    if pack is None:
        return None
    try:
        show_pack(pack, as_json)
    except BrokenPipeError:
        from agentstate.error_boundary import stdout_gone

        return stdout_gone()
    return 0


def _recorded_pack(store: Store, budget: str | None, query: str | None) -> ContextPack | None:
    from agentstate.store.migrations import store_up_to_date

    try:
        if not store_up_to_date(store):
            return None
        from agentstate.context.assemble import build_context
        from agentstate.store.principals import resolve_principal

        pack = build_context(store, run=None, budget=budget, query=query, system_file=None,
                             principal=resolve_principal(store), no_run=False, save=False)
        record_pack(store, pack)  # one transaction: refused, it leaves nothing behind
    except Exception:  # noqa: BLE001 - the full command builds it again and reports
        return None
    return pack


def record_pack(store: Store, pack: ContextPack) -> None:
    """Record the pack (its ref is how `trace` finds it later). A read-only store (a CI
    checkout, a mounted volume) still gets its context: the record is skipped with a
    warning and the pack has no ref."""
    import sqlite3

    from agentstate.context.manifest import save_pack
    from agentstate.errors import AgentStateError
    from agentstate.output import warn

    try:
        pack.ref = save_pack(store, pack)
    except (sqlite3.Error, AgentStateError) as exc:
        if "readonly" not in str(exc) and "read-only" not in str(exc):
            raise
        warn("the store is read-only: the pack is printed but not recorded (no pack ref)")


def show_pack(pack: ContextPack, as_json: bool) -> None:
    """The pack's text on stdout byte for byte (pipe it to a model) and its ref on stderr,
    or the envelope."""
    from agentstate.output import envelope_ok, info, print_json

    if as_json:
        print_json(envelope_ok("context", pack.as_dict()))
        return
    sys.stdout.write(pack.text)
    if sys.stdout.isatty() and not pack.text.endswith("\n"):
        sys.stdout.write("\n")  # a terminal only: piped output stays byte-identical
    sys.stdout.flush()
    info(f"{pack.ref or 'pack (not recorded)'}: {pack.tokens}/{pack.budget} tokens "
         f"(sha256 {pack.text_hash[:12]})")
