"""A small log of hook failures, so `doctor` can report what the hooks could not record.

Hooks never fail the agent or the git command they run under: a problem becomes one stderr
line and one JSON line here. The log lives in the store directory; when there is no usable
store (no store found, a read-only one) it goes to the cache directory instead. Both are
read by `doctor`. The file is trimmed to its newest lines so it never grows without bound.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HOOK_LOG_NAME = "hook-errors.log"
KEEP_LINES = 200
TRIM_BYTES = 64 * 1024  # trim only once the file passes this size


def cache_log_path() -> Path:
    """The fallback log: AGENTSTATE_CACHE_DIR, else XDG_CACHE_HOME, else ~/.cache/agentstate."""
    from agentstate.tokens import cache_dir

    return cache_dir() / HOOK_LOG_NAME


def record_hook_error(store_root: Path | None, agent: str, event: str, message: str) -> Path | None:
    """Append one failure; returns where it was written (None if nowhere was writable)."""
    line = json.dumps({"ts": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "agent": agent,
                       "event": event, "error": message}, ensure_ascii=False)
    candidates = ([store_root / HOOK_LOG_NAME] if store_root is not None else [])
    candidates.append(cache_log_path())
    for path in candidates:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
            _trim(path)
            return path
        except OSError:
            continue
    return None


def _trim(path: Path) -> None:
    if path.stat().st_size <= TRIM_BYTES:
        return
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-KEEP_LINES:]
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    temp.replace(path)


def last_hook_errors(store_root: Path | None, limit: int = 5) -> list[dict[str, Any]]:
    """The newest failures from the store's log and the cache log, newest last."""
    found: list[dict[str, Any]] = []
    paths = ([store_root / HOOK_LOG_NAME] if store_root is not None else [])
    paths.append(cache_log_path())
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for raw in text.splitlines()[-limit:]:
            try:
                entry = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                entry["log"] = str(path)
                found.append(entry)
    found.sort(key=lambda e: str(e.get("ts", "")))
    return found[-limit:]
