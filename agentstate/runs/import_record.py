"""One record of an import checked before the write: its fields (those of the generic
format, runs/jsonl_import.py), its kind, time, source and meta, and a secret scan of its
text and meta (`_check_record`); its links to earlier records resolved inside the write
(`_links`)."""

from __future__ import annotations

from typing import Any

from agentstate.errors import InvalidInput
from agentstate.runs.records import USER_KINDS
from agentstate.safety import refuse_secrets, refuse_secrets_in_meta
from agentstate.store.clock import format_ts, parse_ts
from agentstate.store.limits import MAX_NAME_CHARS, check_json, check_length, compact_meta
from agentstate.store.refs import parse_ref
from agentstate.store.sources import validate_source

# `tool` is importable: transcripts record tool calls. Checkpoints and skill loads are
# written by agentstate itself only.
IMPORTABLE_KINDS = set(USER_KINDS) | {"tool"}
DEFAULT_SOURCE = "tool:import"
KNOWN_FIELDS = {"kind", "text", "ts", "source", "meta", "id", "resolves", "supersedes"}


def _check_record(data: Any, *, kinds: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """Validate one record's shape and scan it for secrets; raises InvalidInput (or Refused)
    naming the problem. Links to earlier records are resolved later (`_links`), inside the
    write, where the ids of the records before it are known."""
    if not isinstance(data, dict):
        raise InvalidInput("not a JSON object")
    check_json(data, "the record")  # the record's one walk: its meta is not walked again
    unknown = sorted(set(data) - KNOWN_FIELDS)
    if unknown:
        raise InvalidInput(f"unknown field(s) {', '.join(unknown)}")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in IMPORTABLE_KINDS | kinds:
        raise InvalidInput(f"unknown or missing kind {kind!r}")
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("missing or empty text")
    ts = data.get("ts")
    if ts is not None:
        if not isinstance(ts, str):
            raise InvalidInput("ts must be an ISO 8601 string")
        ts = format_ts(parse_ts(check_length(ts, MAX_NAME_CHARS, "ts")))
    source = data.get("source", DEFAULT_SOURCE)
    if not isinstance(source, str):
        raise InvalidInput("source must be a string")
    source = validate_source(check_length(source, MAX_NAME_CHARS, "the source"))
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise InvalidInput("meta must be an object")
    meta_json = compact_meta(meta, walked=True)
    # The expensive part (the secret scanner) runs here, before the write transaction:
    # append_event is told the record was scanned.
    refuse_secrets(text, "the text")
    refuse_secrets_in_meta(meta, meta_json, "the meta")
    if "id" in data and not isinstance(data["id"], str | int):
        raise InvalidInput("id must be a string or number")
    for how in ("resolves", "supersedes"):
        target = data.get(how)
        if target is not None and not isinstance(target, str):
            raise InvalidInput(f"{how} {target!r} is neither an evt: ref nor an earlier id")
    return {"kind": kind, "text": text, "ts": ts, "source": source, "meta": meta,
            "meta_json": meta_json}


def _links(data: dict[str, Any], id_map: dict[str, str]) -> dict[str, str | None]:
    """The record's resolves/supersedes as event refs (an earlier record's id, or evt:…)."""
    links: dict[str, str | None] = {}
    for how in ("resolves", "supersedes"):
        target = data.get(how)
        if target is None:
            links[how] = None
        elif target in id_map:
            links[how] = id_map[target]
        elif target.startswith("evt:"):
            links[how] = str(parse_ref(target, expect="evt"))
        else:
            raise InvalidInput(f"{how} {target!r} is neither an evt: ref nor an earlier id")
    return links
