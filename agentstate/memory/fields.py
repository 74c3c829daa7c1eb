"""A memory's fields as the write gate takes them: kind, key, scope, validity and evidence,
each checked (evidence must exist: an event, a file at a commit, or the user's word) and
turned into what is stored."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from typing import TYPE_CHECKING

from agentstate.errors import InvalidInput
from agentstate.lazy_re import LazyPattern
from agentstate.store.clock import format_ts, parse_ts
from agentstate.store.refs import parse_ref

if TYPE_CHECKING:
    from agentstate.store.db import Store

KINDS = ("fact", "preference", "event", "procedure")
# Letters and digits of any script (测试命令 is as good a key as test-command).
_KEY = LazyPattern(r"[^\W_][\w.:/-]{0,79}")
_TTL = LazyPattern(r"^([1-9][0-9]{0,6})([smhdw])$")
_TTL_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_BRANCH = LazyPattern(r"^[A-Za-z0-9._/\-]{1,200}$")


def validate_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInput(f"unknown memory kind {kind!r}: expected one of {', '.join(KINDS)}")
    return kind


def validate_key(key: str | None) -> str | None:
    if key is None:
        return None
    key = key.strip()
    if not _KEY.fullmatch(key):
        raise InvalidInput(
            f"invalid key {key!r}: 1-80 letters, digits, '.', '_', ':', '/' or '-'"
        )
    return key


def validate_scope(store: Store, scope: str | None) -> str:
    """repo (default), user, run:REF (an existing run), branch:NAME, path:GLOB."""
    value = (scope or "repo").strip()
    if value in ("repo", "user"):
        return value
    kind, sep, rest = value.partition(":")
    if sep and kind == "run":
        from agentstate.runs.lookups import run_exists

        ref = parse_ref(value, expect="run")
        if not run_exists(store, ref.id):
            raise InvalidInput(f"scope {value!r} names a run that does not exist")
        return value
    if sep and kind == "branch" and _BRANCH.match(rest) and ".." not in rest:
        return value
    if sep and kind == "path" and rest.strip() and "\n" not in rest and not rest.startswith("/") \
            and ".." not in rest.split("/"):  # relative to the root, never above it
        return value
    raise InvalidInput(
        f"unknown scope {value!r}: expected repo, user, run:REF, branch:NAME or path:GLOB "
        "(a path relative to the repository root)"
    )


def validate_scope_filter(store: Store, pattern: str) -> str:
    """A scope to filter by: a scope or a pattern such as `branch:*`. An unknown plain scope
    is an error, not a filter that silently matches nothing."""
    value = pattern.strip()
    if "*" in value or "?" in value or "[" in value:
        return value  # a pattern (fnmatch); only plain scopes can be checked
    return validate_scope(store, value)


def parse_validity(store: Store, ttl: str | None, until: str | None) -> str | None:
    """`--ttl 30d` (units s, m, h, d, w) or `--until DATE` → the stored valid_until."""
    if ttl and until:
        raise InvalidInput("give --ttl or --until, not both")
    now = store.clock.now()
    if ttl:
        match = _TTL.match(ttl.strip())
        if not match:
            raise InvalidInput(
                f"invalid ttl {ttl!r}: a positive number with a unit s, m, h, d or w (e.g. 30d)"
            )
        try:
            return format_ts(
                now + timedelta(**{_TTL_UNITS[match.group(2)]: int(match.group(1))}))
        except OverflowError as exc:
            raise InvalidInput(f"ttl {ttl!r} reaches past the year 9999; give a shorter ttl, "
                               "or none for a memory that does not expire") from exc
    if until:
        moment = parse_ts(until)
        if moment <= now:
            raise InvalidInput(f"--until {until!r} is not in the future")
        return format_ts(moment)
    return None


def validate_evidence(store: Store, ref: str) -> tuple[str, str]:
    """An evidence ref must exist: an event, a file at a commit, or `user`. → (ref, kind)."""
    value = (ref or "").strip()
    if value == "user":
        return value, "user"
    if value.startswith("evt:"):
        from agentstate.runs.log import event_exists

        if not event_exists(store, value):
            raise InvalidInput(f"evidence {value} does not exist")
        return value, "evt"
    if value.startswith("file:"):
        return check_file_at_commit(store, value), "file"
    raise InvalidInput(
        f"invalid evidence {ref!r}: expected evt:REF, file:PATH@COMMIT or user"
    )


def check_file_at_commit(store: Store, ref: str) -> str:
    """`file:PATH@COMMIT` must name a file that exists in that commit of the work tree.

    Returns the ref to store: a symbolic COMMIT (HEAD, a branch, a tag, HEAD~2) is pinned to
    the commit id it names now, so the evidence keeps pointing at what was read."""
    body = ref.removeprefix("file:")
    path, sep, commit = body.rpartition("@")
    if not sep or not path or not commit or not re.fullmatch(r"[0-9A-Za-z_.\-/~^]{1,64}", commit):
        raise InvalidInput(f"invalid file evidence {ref!r}: expected file:PATH@COMMIT")
    try:
        out = subprocess.run(
            ["git", "cat-file", "-e", f"{commit}^{{commit}}:{path}"],
            cwd=store.work_tree, capture_output=True, text=True, check=False, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidInput(f"cannot check {ref}: git is not available ({exc})") from exc
    if out.returncode != 0:
        raise InvalidInput(f"evidence {ref} does not exist: no file {path!r} at commit {commit!r}")
    if re.fullmatch(r"[0-9a-fA-F]{7,64}", commit):
        return ref
    pinned = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
        cwd=store.work_tree, capture_output=True, text=True, check=False, timeout=30,
    ).stdout.strip()
    return f"file:{path}@{pinned}" if pinned else ref
