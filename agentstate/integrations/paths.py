"""Where a session ran, relative to this repository. Kept apart from the transcript importers
because every hook asks it, and a hook must not pay for importing them."""

from __future__ import annotations

from pathlib import Path


def inside(cwd: str | None, root: Path) -> bool:
    """Is this session's cwd the repository at `root` or a folder inside it?"""
    if not cwd:
        return False
    try:
        Path(cwd).expanduser().resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True
