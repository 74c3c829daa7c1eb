"""The shared folder's record format: one self-contained JSON object per line.

Three files under `.agentstate/shared/`, each sorted by record id:
  memories.jsonl    one memory *version*: its text, kind, key, scope, source, validity, and
                    `parent` (the record it replaced or contests, `rel`) — the version chain
  evidence.jsonl    one evidence ref of one memory record (`evt:…`, `file:P@C`, `user`): the
                    ref only, never the event's body
  tombstones.jsonl  `forget` or `purge` of one memory record (`target`), nothing else

Every record carries `"v"` (the format version) and `"id"`, the first 32 hex digits of the
sha256 of the record's canonical JSON without its id. Ids are derived from content, so the
same record written by two teammates is one record, a hand edit is detected (the id no
longer matches), and a line duplicated by a merge is harmless. A tombstone's id depends only
on its type and target: two teammates forgetting the same record write the same line.

A line is made, parsed and checked here; the files themselves (read confined and bounded,
checked into a `Folder`, written in id order) are shared_files.py's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.lazy_re import LazyPattern

# A memory and an evidence line are spelled below sync/: the write path keeps each version's
# line id with it (m066), and there is one spelling of a line.
from agentstate.memory.shared_line import (
    FORMAT,
    ID_LENGTH,
    evidence_rest,
    memory_parts,
)
from agentstate.store.limits import MAX_NAME_CHARS

SHARED_DIR = "shared"
FILES = {"memory": "memories.jsonl", "evidence": "evidence.jsonl",
         "forget": "tombstones.jsonl", "purge": "tombstones.jsonl"}
SHAREABLE_KINDS = ("repo", "branch", "path")  # scope kinds that may leave the machine
HELD = ("candidate", "quarantined")
RELS = ("supersedes", "contests")
_HELD_OR_NONE, _RELS_OR_NONE = (None, *HELD), (None, *RELS)  # built once, not per line
_ID = LazyPattern(r"^[0-9a-f]{32}$")
_EVIDENCE = LazyPattern(r"^(?:user|evt:[0-9a-z]{4,32}|file:[^@\s][^@]*@[0-9A-Za-z_.\-/]{1,64})$")

# Fields of each record type and the JSON types they may hold (None: null allowed).
_STR, _OPT = (str,), (str, type(None))
FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "memory": {"kind": _STR, "key": _OPT, "scope": _STR, "text": _STR, "source": _STR,
               "principal": _STR, "created": _STR, "valid_until": _OPT, "parent": _OPT,
               "rel": _OPT, "held": _OPT},
    "evidence": {"memory": _STR, "ref": _STR},
    "forget": {"target": _STR},
    "purge": {"target": _STR},
}


# Every key a valid line of each type holds.
_KEYS = {kind: frozenset((*fields, "v", "type", "id")) for kind, fields in FIELDS.items()}
_ABSENT = object()  # a missing field: an instance of none of the types a field may hold


@dataclass(slots=True)
class Record:
    """One parsed line: its fields, the canonical line, and where it was read."""

    data: dict[str, Any]
    line: str
    where: str = ""  # "memories.jsonl line 12", for messages
    body: str = ""  # canonical JSON without the id: what the id is the hash of
    # Read from `data` once: an export or import asks each record's id and type several
    # times, and a property per ask was a tenth of an export (issue 24). A record's data
    # is not changed after it is made.
    id: str = field(init=False, repr=False)
    type: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.id = str(self.data["id"])
        self.type = str(self.data["type"])


# One encoder for every record: `json.dumps` with options builds a new encoder per call, a
# fifth of the time of encoding a short record (issue 24: an export encodes every version).
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def canonical(data: dict[str, Any]) -> str:
    return _CANONICAL.encode(data)


def _body(data: dict[str, Any]) -> str:
    return canonical({k: v for k, v in data.items() if k != "id"})


def record_id(data: dict[str, Any], body: str | None = None) -> str:
    text = _body(data) if body is None else body
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


def make_record(record_type: str, /, **fields: Any) -> Record:
    """A new record of `record_type` with its content-derived id."""
    if record_type == "evidence" and fields.keys() == {"memory", "ref"}:
        return evidence_record(fields["memory"], fields["ref"])
    data: dict[str, Any] = {"v": FORMAT, "type": record_type, **fields}
    if record_type in ("forget", "purge"):
        # Only the type and target: the same tombstone from two teammates is one line.
        data = {"v": FORMAT, "type": record_type, "target": fields["target"]}
    body = canonical(data)
    data["id"] = record_id(data, body)
    return Record(data, with_id(body, data), "", body)


def with_id(body: str, data: dict[str, Any]) -> str:
    """`canonical(data)` from the body already encoded: the id's field spliced in where the
    sorted keys put it, instead of a second encoding. A quote inside a JSON string is
    escaped, so `,"name":` can only be the key `name` of this flat object."""
    after = _key_after_id(tuple(data))
    at = body.find(f',"{after}":') if after is not None else -1
    if at < 0:
        return canonical(data)  # not a record's shape (every record has keys on both sides)
    return f'{body[:at]},"id":{_CANONICAL.encode(data["id"])}{body[at:]}'


@cache
def _key_after_id(keys: tuple[str, ...]) -> str | None:
    """The key the id's field goes before (None when the id would come first or last)."""
    after = min((k for k in keys if k > "id"), default=None)
    return after if any(k < "id" for k in keys) else None


def evidence_record(memory: str, ref: str) -> Record:
    """`make_record("evidence", memory=…, ref=…)` with the canonical JSON spelled out: an
    export builds one per evidence ref of every shared version to learn whether its line is
    there already, and two `json.dumps` with sorted keys each were a third of that (issue 24).
    The text is the one `canonical` makes (keys in order, no spaces, non-ASCII kept; a test
    compares them)."""
    rest = evidence_rest(memory, ref)
    body = "{" + rest
    rid = hashlib.sha256(body.encode("utf-8")).hexdigest()[:ID_LENGTH]
    data = {"v": FORMAT, "type": "evidence", "memory": memory, "ref": ref, "id": rid}
    return Record(data, f'{{"id":"{rid}",' + rest, "", body)


def memory_record(*, kind: str, key: str | None, scope: str, text: str, source: str,
                  principal: str, created: str, valid_until: str | None, parent: str | None,
                  rel: str | None, held: str | None) -> Record:
    """`make_record("memory", …)` with the canonical JSON spelled out: a first export builds
    one per shared version, and the sorted-key encoder was most of that (issue 24). A field
    that is neither a string nor None takes the encoder (a test compares the two on awkward
    texts)."""
    data = {"v": FORMAT, "type": "memory", "kind": kind, "key": key, "scope": scope,
            "text": text, "source": source, "principal": principal, "created": created,
            "valid_until": valid_until, "parent": parent, "rel": rel, "held": held}
    parts = memory_parts(data)
    if parts is None:
        del data["v"], data["type"]
        return make_record("memory", **data)
    head, tail = parts
    body = head + tail
    rid = hashlib.sha256(body.encode("utf-8")).hexdigest()[:ID_LENGTH]
    data["id"] = rid
    return Record(data, f'{head}"id":"{rid}",{tail}', "", body)


def shareable_scope(scope: str) -> bool:
    return scope == "repo" or scope.split(":", 1)[0] in SHAREABLE_KINDS and ":" in scope


def bad_line(where: str, what: str) -> InvalidInput:
    return InvalidInput(f"{where}: {what}; fix or remove the line (nothing was imported)",
                        details={"line": where})


# The decoder `json.loads` uses, called without its two whitespace matches and three calls:
# an exported line is one object from its first character to its last (issue 24: decoding
# was over a quarter of checking a folder). Anything else goes through `json.loads`, which
# returns or raises what it always did.
_SCAN: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]  # not in the stubs


def decode_line(text: str) -> Any:
    try:
        data, end = _SCAN(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return data if end == len(text) else json.loads(text)


def parse_line(text: str, where: str) -> Record:
    """Validate one line: JSON, known format version and type, fields (the id is checked
    against the content by `check_id`, after the duplicate check that names both lines)."""
    record = _canonical_record(text, where)
    if record is not None:
        _check_fields(record.type, record.data, where)
        return record
    return _decoded_record(text, where)


# A string as the canonical encoder spells it when it needs no escape: no quote, no
# backslash, no control character (ensure_ascii=False leaves everything else as it is).
_PLAIN = r'[^"\\\x00-\x1f]*'
_OR_NULL = f'(?:null|"({_PLAIN})")'
# The whole line of a memory or evidence record as an export writes it, every string plain:
# the keys in canonical order, no space, `"v":1`. Such a line is its record's canonical
# JSON, so its fields are the groups as they stand and its body is the line without the id
# (issue 24: decoding, the type checks and spelling the body again were most of a line's
# check). Any other line, valid or not, is decoded and checked field by field.
_MEMORY_LINE = LazyPattern(
    f'\\{{"created":"({_PLAIN})","held":{_OR_NULL},"id":"([0-9a-f]{{32}})","key":{_OR_NULL},'
    f'"kind":"({_PLAIN})","parent":{_OR_NULL},"principal":"({_PLAIN})","rel":{_OR_NULL},'
    f'"scope":"({_PLAIN})","source":"({_PLAIN})","text":"({_PLAIN})","type":"memory",'
    f'"v":{FORMAT},"valid_until":{_OR_NULL}\\}}')
_EVIDENCE_LINE = LazyPattern(
    f'\\{{"id":"([0-9a-f]{{32}})","memory":"({_PLAIN})","ref":"({_PLAIN})",'
    f'"type":"evidence","v":{FORMAT}\\}}')
_ID_FIELD = len('"id":"",') + ID_LENGTH  # `"id":"…",` in a line


def _canonical_record(text: str, where: str) -> Record | None:
    """The record of a line in one of the two shapes above (None: any other line). The data
    is what decoding the line gives, in the same key order."""
    if text.startswith('{"created":'):
        m = _MEMORY_LINE.fullmatch(text)
        if m is None:
            return None
        (created, held, rid, key, kind, parent, principal, rel, scope, source, text_,
         valid_until) = m.groups()
        data = {"created": created, "held": held, "id": rid, "key": key, "kind": kind,
                "parent": parent, "principal": principal, "rel": rel, "scope": scope,
                "source": source, "text": text_, "type": "memory", "v": FORMAT,
                "valid_until": valid_until}
        at = m.start(3) - 6  # where `"id":"` starts
        return Record(data, text, where, text[:at] + text[at + _ID_FIELD:])
    if text.startswith('{"id":'):
        m = _EVIDENCE_LINE.fullmatch(text)
        if m is None:
            return None
        rid, memory, ref = m.groups()
        data = {"id": rid, "memory": memory, "ref": ref, "type": "evidence", "v": FORMAT}
        return Record(data, text, where, "{" + text[1 + _ID_FIELD:])
    return None


def _decoded_record(text: str, where: str) -> Record:
    """parse_line for any line: decoded, then checked field by field."""
    try:
        data = decode_line(text)
    except json.JSONDecodeError as exc:
        hint = (" (a git conflict marker: add the merge=union line, see `agentstate sync "
                "--help`)") if text[:7] in ("<<<<<<<", "=======", ">>>>>>>") else ""
        raise bad_line(where, f"not valid JSON ({exc.msg}, column {exc.colno}){hint}") from None
    if not isinstance(data, dict):
        raise bad_line(where, "not a JSON object")
    version = data.get("v")
    if version != FORMAT:
        raise bad_line(where, f"record format version {version!r} is not one this agentstate "
                              f"reads (it reads {FORMAT}); upgrade agentstate")
    kind = data.get("type")
    if kind not in FIELDS:
        raise bad_line(where, f"unknown record type {kind!r}")
    wanted = FIELDS[kind]
    if data.keys() != _KEYS[kind]:  # the usual line has exactly its keys: no set built
        extra = sorted(set(data) - set(wanted) - {"v", "type", "id"})
        if extra:
            raise bad_line(where, f"unknown field(s) {', '.join(extra)} in a {kind} record")
    for name, types in wanted.items():
        if not isinstance(data.get(name, _ABSENT), types):
            raise bad_line(where, f"field {name!r} of a {kind} record is missing or has the "
                                  "wrong type")
    if not isinstance(data.get("id"), str) or not _ID.match(data["id"]):
        raise bad_line(where, "missing or malformed id (32 lower-case hex digits)")
    _check_fields(kind, data, where)
    return Record(data, text.strip(), where, _parsed_body(kind, data))


def _parsed_body(kind: str, data: dict[str, Any]) -> str:
    """`_body(data)` of a validated record: memory and evidence bodies spelled out (an import
    checks the id of every line of the folder: issue 24). A `"v"` that equals the format
    without being the integer (`true`, `1.0`) is spelled by the encoder, as it was."""
    if type(data["v"]) is int:
        if kind == "memory":
            parts = memory_parts(data)
            if parts is not None:
                return parts[0] + parts[1]
        elif kind == "evidence":
            return "{" + evidence_rest(data["memory"], data["ref"])
    return _body(data)


def check_id(record: Record) -> None:
    if record_id(record.data, record.body) != record.id:
        raise bad_line(record.where, "the id does not match the record's content (edited by "
                                     "hand?)")


def _check_fields(kind: str, data: dict[str, Any], where: str) -> None:
    if kind == "memory":
        if not shareable_scope(data["scope"]):
            raise bad_line(where, f"scope {data['scope']!r} is not shareable (repo, branch:, "
                                  "path:)")
        if data["held"] not in _HELD_OR_NONE:
            raise bad_line(where, f"unknown held status {data['held']!r}")
        if (data["parent"] is None) != (data["rel"] is None) or data["rel"] not in _RELS_OR_NONE:
            raise bad_line(where, "parent and rel must be given together (rel: supersedes or "
                                  "contests)")
        if data["parent"] is not None and not _ID.match(data["parent"]):
            raise bad_line(where, "malformed parent id")
        if not data["text"].strip():
            raise bad_line(where, "empty memory text")
    elif kind == "evidence":
        if not _ID.match(data["memory"]) or not _EVIDENCE.match(data["ref"]):
            raise bad_line(where, "evidence needs a memory id and a ref (evt:…, file:P@C or "
                                  "user)")
    elif not _ID.match(data["target"]):
        raise bad_line(where, "malformed tombstone target")


def record_over_limits(data: dict[str, Any], max_chars: int) -> str | None:
    """Why a memory record cannot be stored as a local write could not: its text over
    `[memory] max_chars`, a key, scope or source over the name limit. None if it fits.
    Asked of every record an import stores: the text is stripped only when it is longer
    than the limit (shorter, it is within it stripped too)."""
    text = data.get("text")
    if isinstance(text, str) and len(text) > max_chars and len(text.strip()) > max_chars:
        return (f"its text is {len(text.strip()):,} characters; the limit is {max_chars:,} "
                "([memory] max_chars, as for `remember`); not imported")
    for name in _NAMED:
        value = data.get(name)
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            return (f"its {name} is {len(value):,} characters; the limit is "
                    f"{MAX_NAME_CHARS:,}; not imported")
    return None


_NAMED = ("key", "scope", "source")


def evidence_kind(ref: str) -> str:
    return "user" if ref == "user" else ref.split(":", 1)[0]
