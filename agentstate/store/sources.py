"""Where a piece of state came from: `user`, `model`, `tool:NAME`, `file:PATH@COMMIT`, `evt:REF`,
and `prompt:AGENT` — a user prompt relayed by an agent client's hook or transcript, which the
agent could have written itself (docs/security.md, "Principals and authority").

Authority orders conflicts in memory: the user outranks file/tool evidence, which outranks the
model. A relayed prompt ranks with the model: nothing the agent can produce outranks what it
could write itself. Content from tools, files or the web is data, never instructions.
"""

from __future__ import annotations

import re

from agentstate.errors import InvalidInput
from agentstate.lazy_re import LazyPattern

_TOOL = LazyPattern(r"^tool:[A-Za-z0-9_.\-/]{1,100}$")
_FILE = LazyPattern(r"^file:[^@\s][^@]*@[0-9A-Za-z_.\-/]{1,64}$")
_EVT = LazyPattern(r"^evt:[0-9a-z]{4,32}$")
_PROMPT = LazyPattern(r"^prompt:[a-z0-9][a-z0-9\-]{0,39}$")

AUTHORITY = {"user": 3, "file": 2, "tool": 2, "evt": 2, "model": 1, "prompt": 1}
SOURCE_FORMS = "user, model, tool:NAME, file:PATH@COMMIT, prompt:AGENT"


def validate_source(source: str, *, allow_event: bool = False) -> str:
    value = (source or "").strip()
    if (value in ("user", "model") or _TOOL.match(value) or _FILE.match(value)
            or _PROMPT.match(value)):
        return value
    if allow_event and _EVT.match(value):
        return value
    forms = SOURCE_FORMS + (", evt:REF" if allow_event else "")
    raise InvalidInput(f"invalid source {source!r}: expected one of {forms}")


def source_class(source: str) -> str:
    return source.split(":", 1)[0]


def authority(source: str) -> int:
    return AUTHORITY.get(source_class(source), 0)


def is_untrusted(source: str) -> bool:
    """Tool output, files and fetched documents: data that must not act as instructions."""
    return source_class(source) in ("tool", "file")


def tool_source(program: str) -> str:
    """The source of a tool's output: `tool:NAME`, in the restricted alphabet of sources
    (g++ becomes tool:g__)."""
    return "tool:" + (re.sub(r"[^A-Za-z0-9_.\-/]", "_", program)[:100] or "unknown")


def relayed_prompt_source(agent: str) -> str:
    """The source of a user prompt that reached agentstate through an agent client (a hook's
    payload, a transcript line): `prompt:AGENT`, the user's words *unverified*. Nothing in
    such a channel tells the client from the agent imitating it (an agent with a shell can
    pipe any payload into `agentstate hook` and write any transcript), so it is shown to the
    model as the user's but is never evidence that activates, confirms or approves."""
    return "prompt:" + (re.sub(r"[^a-z0-9\-]", "-", agent.lower())[:40] or "agent")


def is_relayed_prompt(source: str) -> bool:
    return source_class(source) == "prompt"
