"""Git set-up for the shared folder: the union merge line, and a check that git tracks it.

`.agentstate/.gitattributes` holds `shared/*.jsonl merge=union` — the same rule as the line
`.agentstate/shared/*.jsonl merge=union` in the repository's root `.gitattributes` (git reads
the attributes file of each directory, patterns relative to it), kept beside the store so
`init` and `sync` never edit a file of the team's. Union is safe for these files because
every line is one self-contained record with a content-derived id: keeping both sides of a
conflicting hunk can only add records, a duplicated line is the same record twice (read
once), and a line out of order is re-sorted by the next export. The import, not git, decides
what the records mean (tombstones win, rival values are contested).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ATTRIBUTES = ".gitattributes"
UNION_LINE = "shared/*.jsonl merge=union"


def ensure_gitattributes(root: Path) -> bool:
    """Add the union line to `root`/.gitattributes (root: the .agentstate folder). → changed."""
    path = root / ATTRIBUTES
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    if UNION_LINE in (line.strip() for line in lines):
        return False
    text = "".join(line + "\n" for line in lines)
    if not lines:
        text = "# agentstate: shared records merge by union (one record per line).\n"
    path.write_text(text + UNION_LINE + "\n", encoding="utf-8")
    return True


def ignore_warning(work_tree: Path, folder: Path) -> str | None:
    """A warning when git ignores the shared folder (e.g. `.agentstate/` in .gitignore)."""
    probe = folder / "memories.jsonl"
    try:
        out = subprocess.run(["git", "check-ignore", "-v", "--no-index", str(probe)],
                             cwd=work_tree, capture_output=True, text=True, check=False,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None  # not ignored, or not a git repository
    rule = out.stdout.split("\t", 1)[0]
    return (f"git ignores the shared folder ({rule}): teammates will not see it; ignore "
            "`.agentstate/*` instead of `.agentstate/` and add `!.agentstate/shared/`")
