"""`agentstate import jsonl`: a file in the generic format read line by line and imported
through the one import path (runs/importer.py, `import_events`).

The generic format is one JSON object per line:

    {"kind": "observation", "text": "tests fail on py3.12", "ts": "2026-01-15T09:00:00Z",
     "source": "tool:pytest", "meta": {"exit_code": 1}, "id": "msg-17"}

`kind` and `text` are required; `ts` (ISO 8601), `source` (user, model, tool:NAME,
file:PATH@COMMIT; default `tool:import`), `meta` (an object), `id` (a stable identifier of
the record in its source), `resolves` and `supersedes` (an `evt:` ref, or the `id` of an
earlier record of the same import) are optional. Blank lines are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from agentstate.errors import InvalidInput
from agentstate.runs.importer import ImportLine, ImportResult, import_events
from agentstate.runs.worktree import snapshot
from agentstate.store.db import Store
from agentstate.store.limits import parse_json
from agentstate.store.principals import Principal


def read_jsonl(path: Path, on_bytes: Callable[[int], None] | None = None) -> Iterator[ImportLine]:
    """Records of a JSONL file; a line that is not a JSON object within the limits
    (store/limits.py: UTF-8, depth, integer size, finite numbers, no lone surrogates) comes
    back with `error`, so one bad line is rejected and the rest still import."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if on_bytes:
                on_bytes(len(raw))
            if not raw.strip():
                continue
            try:
                data = parse_json(raw, "the line")
            except InvalidInput as exc:
                yield ImportLine(number, error=exc.message.removeprefix("the line is "))
                continue
            yield ImportLine(number, data)


def jsonl_file(file: Path) -> Path:
    """The file `import jsonl` reads (user-expanded): it must exist and be a regular file.
    Checked before the store is opened, so a typo creates nothing."""
    path = file.expanduser()
    if not path.exists():
        raise InvalidInput(f"no such file: {file}")
    if not path.is_file():
        raise InvalidInput(f"not a regular file: {file}")
    return path


def import_jsonl_file(store: Store, file: Path, *, run_ref: str | None = None,
                      goal: str | None = None, strict: bool = False,
                      claimed_by: Principal | None = None,
                      on_bytes: Callable[[int], None] | None = None) -> ImportResult:
    """`agentstate import jsonl`: the file's records through `import_events`, its absolute
    path as the origin (so importing it again adds nothing). A new run records the work
    tree's version. A file whose every record was rejected is an error (InvalidInput naming
    the first reasons), not an empty success."""
    path = jsonl_file(file)
    result = import_events(
        store, read_jsonl(path, on_bytes), run_ref=run_ref, goal=goal,
        origin=str(path.resolve()), strict=strict, label="line",
        worktree=snapshot(store.work_tree) if not run_ref else None, claimed_by=claimed_by,
    )
    if result.nothing_accepted:
        shown = "; ".join(f"line {r.position}: {r.reason}" for r in result.rejected[:3])
        raise InvalidInput(
            f"nothing imported from {file}: {result.malformed} malformed and "
            f"{result.refused} refused line(s) ({shown})",
            details={"malformed": result.malformed, "refused": result.refused,
                     "skipped": result.skipped},
        )
    return result
