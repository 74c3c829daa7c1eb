"""The hook handler's body, apart from the CLI: installed hooks call `agentstate hook AGENT`
on every prompt and tool call, so `agentstate.entry` runs this without building the Typer
command tree (it saves the CLI's start-up on the agent's hot path).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.store.db import Store


def run_hook(agent: str, args: list[str], stdin: IO[str] | IO[bytes], *,
             directory: str | None = None,
             after_answer: list[Callable[[], None]] | None = None) -> int:
    """Read, act, print; on any failure, report it and still return 0. `directory` is the
    store override (--dir / AGENTSTATE_DIR).

    With `after_answer`, closing the store is left there for the caller to run once the agent
    has its answer: the hook helper answers first. Everything is committed before this
    returns; what closing adds is SQLite's checkpoint of the write-ahead log into the
    database file (the last connection to close does it, with an fsync), 10-20 ms of every
    hook that the agent need not wait for."""
    store = None
    event = args[0] if agent == "git" and args else "?"
    try:
        if agent == "git":
            from agentstate.integrations.git_hooks import import_shared, record_git_hook
            from agentstate.store.db import open_store

            store = open_store(directory)
            record_git_hook(store, event, args[1:])
            import_shared(store, event, args[1:])
            return 0
        from agentstate.integrations.hook_payload import parse_payload
        from agentstate.integrations.hooks import handle, open_hook_store

        # Bytes: undecodable input is refused like any other (limits.parse_json).
        payload = parse_payload(agent, stdin.buffer.read() if hasattr(stdin, "buffer")
                                else stdin.read())
        event = payload.event
        store = open_hook_store(payload.cwd, directory)
        outcome = handle(store, payload)
        if outcome.problems:
            from agentstate.store.hooklog import record_hook_error

            # Recorded as far as understood; the log says what was not (doctor shows it).
            record_hook_error(store.root, agent, event,
                              "payload not as expected: " + "; ".join(outcome.problems))
        if outcome.stdout:
            sys.stdout.write(outcome.stdout + "\n")
            sys.stdout.flush()
        return 0
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - a hook never breaks the agent
        from agentstate.error_boundary import classify
        from agentstate.output import visible
        from agentstate.store.hooklog import record_hook_error

        # The one mapping every entry point uses; a bug also leaves its redacted traceback in
        # the shared crash log, which the message names. The exit stays 0 whatever happened.
        message = classify(exc, ["hook", agent, *args]).error.message
        # The agent name (argv), the event name and the message (both may come from the
        # payload) are written escaped: no raw escape sequence reaches the agent's terminal,
        # and undecodable bytes (a lone surrogate) can still be written to the log.
        agent, event, message = visible(agent), visible(event), visible(message)
        root = store.root if store is not None else _store_root_guess(directory)
        where = record_hook_error(root, agent, event, message)
        logged = f" (logged in {visible(str(where))})" if where else ""
        sys.stderr.write(f"agentstate hook {agent} {event}: {message}{logged}\n")
        return 0
    finally:
        if store is not None:
            if after_answer is None:
                store.close()
            else:
                after_answer.extend((_embedder_of(store), store.close))


def _embedder_of(store: Store) -> Callable[[], None]:
    """Embed the turn's new events for the dense signal once the agent has its answer (the
    numpy-free reader, a few ms an event), so that no command pays for it later; a failure
    only leaves them to the next search, which embeds what is missing."""
    def embed() -> None:
        try:
            from agentstate.memory.dense import embed_recent

            embed_recent(store)
        except Exception:  # noqa: BLE001 - after the answer: nobody to tell, nothing lost
            pass

    return embed


def _store_root_guess(directory: str | None) -> Path | None:
    """The store directory when one can be found, for the error log; None otherwise."""
    try:
        from agentstate.store.db import find_store

        return find_store(override=directory)
    except Exception:  # noqa: BLE001 - only a place to write the log
        return None
