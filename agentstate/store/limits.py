"""Size limits on what is stored, and the checks every write path shares.

Every stored text field has a cap, so that no single value can wedge a later command (a
130,000-character goal is pinned into every resume pack and made `resume --budget 8000`
fail forever). The caps are constants here, not settings: they protect the store's own
invariants rather than express a preference. Memory text has its own setting,
`[memory] max_chars`. docs/concepts.md lists them all ("Limits").

JSON values (event and checkpoint meta, imported records) are checked by `check_json`:
bounded nesting and integers, finite numbers only (NaN and Infinity are not JSON and would
make `--json` output unparseable), and text that is valid Unicode (a lone surrogate such as
`"\\ud800"` can be written in JSON but cannot be stored as UTF-8).
"""

from __future__ import annotations

import json
import math
from typing import Any, overload

from agentstate.errors import InvalidInput

MAX_GOAL_CHARS = 2_000  # pinned into every resume and context pack, with the constraints
MAX_CONSTRAINT_CHARS = 2_000  # likewise pinned: must fit a small budget beside the goal
MAX_NOTE_CHARS = 20_000  # a checkpoint note
MAX_META_CHARS = 20_000  # an event's or checkpoint's meta, as compact JSON
MAX_QUERY_CHARS = 2_000  # a context query, stored with the pack's manifest
MAX_NAME_CHARS = 500  # a source, memory key or scope, a kind or ref given as text
MAX_REASON_CHARS = 2_000  # why a memory was forgotten or corrected, or a skill revoked
MAX_JSON_DEPTH = 32  # nesting of objects and arrays in meta or an imported record
MAX_JSON_INT = 2**63 - 1  # larger integers lose precision in most JSON readers and SQLite


@overload
def check_length(text: str, cap: int, what: str) -> str: ...
@overload
def check_length(text: None, cap: int, what: str) -> None: ...
def check_length(text: str | None, cap: int, what: str) -> str | None:
    """`text` unchanged, or InvalidInput naming the field and its cap."""
    if text is not None and len(text) > cap:
        raise InvalidInput(f"{what} is {len(text):,} characters; the limit is {cap:,}")
    return text


def check_text(text: str, what: str) -> None:
    """Text must be encodable as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode (a lone surrogate at character "
                           f"{exc.start})") from None


def check_json(value: Any, what: str, depth: int = 0) -> None:
    """A parsed JSON value within the limits above; InvalidInput naming the problem.

    Every transcript line and imported record is walked (issue 24: a 2 MB import walks
    ~60,000 values), so the usual members of a container take the short way: an ASCII
    string cannot hold a lone surrogate (`isascii` reads a flag the string already has) and
    a plain int is compared in place; containers, floats and anything else take the general
    rule (`_check_value`). The checks run in the order of a plain recursive walk, so the
    first problem named is the same."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if not (type(key) is str and key.isascii()):
                check_text(str(key), what)
            _check_member(item, what, depth + 1)
    elif kind is list:
        for item in value:
            _check_member(item, what, depth + 1)
    else:
        _check_value(value, what, depth)


def _check_member(item: Any, what: str, depth: int) -> None:
    """One member of a container, at `depth`."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    kind = type(item)
    if kind is str:
        if not item.isascii():
            check_text(item, what)
    elif kind is int:
        if abs(item) > MAX_JSON_INT:
            raise InvalidInput(f"{what} holds an integer beyond ±{MAX_JSON_INT}")
    elif kind is dict or kind is list:
        check_json(item, what, depth)
    elif item is not None and kind is not bool:
        _check_value(item, what, depth)


def _check_value(value: Any, what: str, depth: int) -> None:
    """check_json for any value (subclasses, floats, tuples): the general rule."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > MAX_JSON_INT:
            raise InvalidInput(f"{what} holds an integer beyond ±{MAX_JSON_INT}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{what} holds a non-finite number ({value}); JSON has none")
    elif isinstance(value, str):
        check_text(value, what)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key), what)
            check_json(item, what, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            check_json(item, what, depth + 1)
    else:
        raise InvalidInput(f"{what} holds a {type(value).__name__}, which is not JSON")


def _refuse_constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not a JSON number")


def parse_json(text: str | bytes, what: str) -> Any:
    """Parse one JSON document under the limits: undecodable bytes, NaN/Infinity, nesting
    too deep for the parser, integers too long to convert and lone surrogates are all
    InvalidInput (one bad record, not a crash)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{what} is not valid UTF-8 (byte {exc.start + 1})") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{what} is not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InvalidInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError:  # an integer past Python's digit limit for conversion
        raise InvalidInput(f"{what} holds an integer too long to read") from None
    check_json(value, what)
    return value


def compact_meta(meta: dict[str, Any], what: str = "the meta", *, walked: bool = False) -> str:
    """Meta as stored: key-sorted JSON, checked and within MAX_META_CHARS. `walked`: the
    caller has just run check_json over a value holding this meta (an imported record), so
    it is not walked again."""
    if not walked:
        check_json(meta, what)
    text = json.dumps(meta, ensure_ascii=False, sort_keys=True, allow_nan=False)
    check_length(text, MAX_META_CHARS, what)
    return text
