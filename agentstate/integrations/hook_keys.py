"""How a hook's record of a prompt or tool call is recognised later, when the session's
transcript is imported or caught up: the prompt key the hooks store, and the check that
skips what they already logged.

Apart from hooks.py so that transcripts.py, which the hooks' catch-up calls, can use the check
without importing hooks.py back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentstate.store.db import Store


def prompt_key(text: str) -> str:
    """A prompt's key for "did a hook record it": a digest of its folded start. Hooks cut
    long prompts and imports bound them, so only the start is compared; a digest, so the
    key holds no text (the prompt itself may have held a secret that was redacted)."""
    import hashlib

    folded = " ".join(text[: 4 * PROMPT_KEY_CHARS].split())[:PROMPT_KEY_CHARS]
    return hashlib.sha256(folded.encode("utf-8", "surrogatepass")).hexdigest()[:24]


PROMPT_KEY_CHARS = 500


def logged_by_hooks(store: Store, session_id: str | None) -> Callable[[dict[str, Any]], bool]:
    """Which transcript records of this session a hook already logged as they happened:
    the user's prompts (by prompt key) and tool calls (by the agent's call id). Imports and
    the hooks' catch-up skip those, so a session is not recorded twice. Each check is one
    indexed look-up (runs/lookups.py), never a read of the run."""
    from agentstate.runs.lookups import hook_logged_call, hook_logged_prompt

    def already(record: dict[str, Any]) -> bool:
        if not session_id:
            return False
        identity = str(record.get("id", ""))
        if record.get("kind") == "tool":
            call = identity.split(":", 1)[-1]
            return bool(call) and hook_logged_call(store, session_id, call) is not None
        if record.get("kind") == "observation" and record.get("source") == "user":
            text = str(record.get("text", ""))
            return hook_logged_prompt(store, session_id, prompt_key(text)) is not None
        return False

    return already
