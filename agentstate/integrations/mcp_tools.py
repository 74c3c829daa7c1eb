"""The MCP server's tools, declared as data (`Tool`, `Param`): their JSON Schemas for
`tools/list` and the checks of a call's arguments come from the same declaration, and each
tool calls the same domain function as the CLI command it mirrors."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput
from agentstate.memory.status import MemoryStatus

if TYPE_CHECKING:
    from agentstate.store.db import Store


@dataclass
class Done:
    """What a tool's work produced: the envelope's data, and optionally the text a model
    should read instead of the JSON (a pack) and a note on what is missing or withheld."""

    data: Any
    text: str | None = None
    note: str | None = None
    ref: str | None = None  # the ref of what `text` is, when it has one (pack:…)

    @property
    def trailer(self) -> str:
        parts = [p for p in (self.ref, self.note) if p]
        return f"[agentstate: {'; '.join(parts)}]" if parts else ""


# Hints for clients deciding what to run without asking: every tool stays inside the store
# (no open world); the writing ones only append (a new event, version, pack or load row).
READS = {"readOnlyHint": True, "openWorldHint": False}
APPENDS = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False}

# A parameter's type → its JSON Schema.
SCHEMAS: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "strings": {"type": "array", "items": {"type": "string"}},
    "pairs": {"type": "object", "additionalProperties": {"type": "string"}},
}
# Strings a model may send for a boolean, read as the SDK's pydantic models read them.
BOOLEAN_WORDS = {"true": True, "1": True, "yes": True, "on": True,
                 "false": False, "0": False, "no": False, "off": False}


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # a key of SCHEMAS
    description: str
    required: bool = False
    default: Any = None

    def schema(self) -> dict[str, Any]:
        if self.required:
            return {**SCHEMAS[self.type], "description": self.description}
        # Optional: null is accepted too (the model may send it for "not given").
        return {"anyOf": [SCHEMAS[self.type], {"type": "null"}], "default": self.default,
                "description": self.description}

    def value(self, given: Any) -> Any:
        """The argument checked (and, like the SDK's models did, a numeric string taken as
        an integer); InvalidInput names the parameter and what it needs."""
        if given is None:
            if self.required:
                raise InvalidInput(f"argument {self.name!r} is required")
            return self.default
        checked = _checked(self.type, given)
        if checked is None:
            need = {"string": "a string", "integer": "an integer", "boolean": "true or false",
                    "strings": "a list of strings",
                    "pairs": "an object of string values"}[self.type]
            raise InvalidInput(f"argument {self.name!r} must be {need} "
                               f"(got {json.dumps(given)[:80]})")
        return checked


def _checked(kind: str, given: Any) -> Any:
    """`given` as `kind`, or None when it is not one."""
    if kind == "string":
        return given if isinstance(given, str) else None
    if kind == "integer":
        if isinstance(given, int) and not isinstance(given, bool):
            return given
        if isinstance(given, float) and given.is_integer():
            return int(given)
        text = given.strip() if isinstance(given, str) else ""
        return int(text) if text.lstrip("+-").isdigit() and text.isascii() else None
    if kind == "boolean":
        if isinstance(given, bool):
            return given
        return BOOLEAN_WORDS.get(given.strip().lower()) if isinstance(given, str) else None
    if kind == "strings":
        ok = isinstance(given, list) and all(isinstance(v, str) for v in given)
        return given if ok else None
    ok = isinstance(given, dict) and all(isinstance(v, str) for v in given.values())
    return given if ok else None


# work(store, arguments, principal) → what the call produced
Work = Callable[["Store", dict[str, Any], str], Done]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    annotations: dict[str, bool]
    work: Work
    params: tuple[Param, ...] = field(default=())

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "inputSchema": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in self.params},
                    "required": [p.name for p in self.params if p.required],
                    "additionalProperties": False},
                "annotations": self.annotations}

    def arguments(self, given: Any) -> dict[str, Any]:
        """The call's arguments, checked against the parameters (InvalidInput names the
        first that is wrong, or an argument the tool does not take)."""
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise InvalidInput("arguments must be an object")
        names = {p.name for p in self.params}
        unknown = sorted(set(given) - names)
        if unknown:
            raise InvalidInput(f"{self.name} takes no argument {unknown[0]!r} (it takes: "
                               f"{', '.join(p.name for p in self.params) or 'none'})")
        return {p.name: p.value(given.get(p.name)) for p in self.params}


RUN = Param("run", "string", "run:… (default: the current run)")
BUDGET = Param("budget", "integer", "Token budget; the text never exceeds it")


def _withheld_text(withheld: dict[str, int]) -> str:
    return ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(withheld.items()))


def _resume(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate.context.resume import build_pack

    pack = build_pack(store, args["run"], budget=args["budget"], principal=who)
    return Done(None, text=pack.text)  # the text is the whole result (see tool_result)


def _context(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate.context.assemble import build_context

    pack = build_context(store, run=args["run"], budget=args["budget"], query=args["query"],
                         principal=who)
    note = None
    if pack.withheld:
        note = f"the memory read gate withheld {_withheld_text(pack.withheld)}"
    # No data: the result is the text (see tool_result), and turning the manifest of
    # thousands of rows into JSON only to drop it cost several ms of each call.
    return Done(None, text=pack.text, note=note,
                ref=f"{pack.ref}, {pack.tokens}/{pack.budget} tokens")


def _recall(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate.memory.recall import recall as recall_memory

    query = args["query"]
    result = recall_memory(store, query, limit=args["limit"], kinds=args["kind"] or None,
                           scopes=args["scope"] or None, principal=who)
    note = None
    if not result.hits:
        note = f"no memory matched {query!r}"
        if result.withheld:
            note += f"; withheld by the read gate: {_withheld_text(result.withheld)}"
    elif result.withheld:
        note = f"withheld by the read gate: {_withheld_text(result.withheld)}"
    return Done(result, note=note)


def _remember(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate import api

    # Without a source, the write gate records the principal's own (model for agent).
    result = api.remember(store, args["text"], principal=who, kind=args["kind"],
                          key=args["key"], scope=args["scope"], source=args["source"],
                          evidence=args["evidence"] or [], ttl=args["ttl"])
    note = None
    if result.status in (MemoryStatus.CANDIDATE, MemoryStatus.QUARANTINED):
        note = (f"{result.ref} was stored as {result.status}, outside the default read "
                f"set: {result.reason}")
    elif result.status == MemoryStatus.CONTESTED:
        note = f"{result.ref} is contested: recall flags it beside {result.contests}"
    return Done(result, note=note)


def _log_event(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate import api

    return Done(api.log_event(store, args["kind"], args["text"], principal=who,
                              run=args["run"], source=args["source"], meta=args["meta"],
                              resolves=args["resolves"], supersedes=args["supersedes"]))


def _checkpoint(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate.runs.checkpoint import create_checkpoint
    from agentstate.runs.worktree import snapshot
    from agentstate.store.principals import default_source, resolve_principal

    principal = resolve_principal(store, who)
    return Done(create_checkpoint(store, args["run"], args["note"],
                                  worktree=snapshot(store.work_tree),
                                  source=default_source(principal), claimed_by=principal))


def _skill_list(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate.skills.catalog import list_catalog

    entries = list_catalog(store, include_all=args["all"])
    return Done(entries, note=None if entries else "no published skills")


def _skill_load(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate import api

    return Done(api.load_skill(store, args["target"], principal=who, run=args["run"]))


def _trace(store: Store, args: dict[str, Any], who: str) -> Done:
    from agentstate.context.trace import trace as trace_ref

    return Done(trace_ref(store, args["ref"], principal=who))


# In the order clients list them.
TOOLS = (
    Tool("resume", "The resume pack for a run (goal, constraints, diagnoses, open questions, "
         "pending verifications, last checkpoint, work-tree drift, recent event refs, "
         "matching skills) as Markdown. Fails with not_found when there is no unfinished "
         "run.", READS, _resume, (RUN, BUDGET)),
    Tool("context", "A budgeted context pack: pinned instructions and constraints, the task "
         "state, evidence (gated memories, past events), skills and the trajectory, within "
         "`budget` tokens. The text is the pack; a second block gives its pack:… ref (its "
         "manifest: `trace pack:…`) and tokens used. A budget below the pinned minimum is "
         "refused (budget_too_small).",
         APPENDS, _context,
         (BUDGET, Param("query", "string", "What to retrieve evidence for (default: goal + "
                                           "open questions)"), RUN)),
    Tool("recall", "Search memory through the read gate (BM25 with recency, confidence and "
         "scope). Each hit has its mem:…@vN ref, source and confidence. No hits is said "
         "explicitly (matched_nothing) with counts of what the gate withheld (candidates, "
         "expired, …).", READS, _recall,
         (Param("query", "string", "What to look for", required=True),
          Param("limit", "integer", "Most hits (at least 1)", default=10),
          Param("kind", "strings", "Only these kinds: fact, preference, event, procedure"),
          Param("scope", "strings", "Only these scopes, e.g. repo, branch:main"))),
    Tool("remember", "Store a memory through the write gate and say what it decided. Written "
         "as the server's principal (a model's claim): a fact or procedure without evidence "
         "(evt:… or file:PATH@COMMIT) becomes a candidate, instruction-like text is "
         "quarantined, secrets are refused and nothing is stored.", APPENDS, _remember,
         (Param("text", "string", "One fact, preference, event or procedure", required=True),
          Param("kind", "string", "fact, preference, event or procedure", required=True),
          Param("key", "string", "A slot such as test-command: a new value makes a new "
                                 "version"),
          Param("scope", "string", "repo (default), run:REF, branch:NAME or path:GLOB"),
          Param("evidence", "strings", "evt:REF or file:PATH@COMMIT refs that support it"),
          Param("source", "string", "model (default), tool:NAME, file:PATH@COMMIT or "
                                    "evt:REF"),
          Param("ttl", "string", "Valid for this long, e.g. 30d"))),
    Tool("log_event", "Append one typed event to a run (the current run by default): "
         "observation, decision, diagnosis, hypothesis, question, answer, verify, verified, "
         "failed, constraint or note. Returns its evt:… ref (usable as memory evidence).",
         APPENDS, _log_event,
         (Param("kind", "string", "The event kind", required=True),
          Param("text", "string", "What happened", required=True), RUN,
          Param("source", "string", "model (default), tool:NAME or file:PATH@COMMIT"),
          Param("meta", "pairs", "KEY: VALUE pairs kept with the event"),
          Param("resolves", "string", "evt:… this answers (question) or settles (verify)"),
          Param("supersedes", "string", "evt:… this replaces"))),
    Tool("checkpoint", "Store the run's derived working state and the work-tree snapshot as "
         "a checkpoint (its ref is returned); resume reports drift since it.", APPENDS,
         _checkpoint,
         (Param("note", "string", "Where things stand, in a sentence, for whoever resumes"),
          RUN)),
    Tool("skill_list", "The skill catalog: name, current version ref, status and a one-line "
         "description of each published skill.", READS, _skill_list,
         (Param("all", "boolean", "Also skills with no published version (candidates, "
                                  "revoked)", default=False),)),
    Tool("skill_load", "Load a published skill (NAME or NAME@vN): its body, resources and "
         "trust (approver, tree hash); the load is recorded against the run. Revoked "
         "versions are refused.", APPENDS, _skill_load,
         (Param("target", "string", "NAME (current version) or NAME@vN", required=True),
          RUN)),
    Tool("trace", "Follow a ref both ways: pack:…, mem:…[@vN], evt:…, skill:NAME[@vN], "
         "run:… or run:…#N (a pack's `#N` evidence label) → what it was built from and "
         "what used it. Unknown refs fail with not_found.", READS, _trace,
         (Param("ref", "string", "The ref to follow", required=True),)),
)
