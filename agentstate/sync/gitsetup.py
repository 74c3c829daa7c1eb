"""Git set-up for the shared folder: the union merge line, and a check that git tracks it.

The union rule for `.agentstate/shared/*.jsonl` lives in the clone's own attributes file,
`.git/info/attributes` (git reads it for every merge in that clone and never commits it).
A tracked `.agentstate/.gitattributes`, as earlier versions wrote at `init`, made a
teammate's pull abort: the file existed untracked in both clones ("untracked working tree
files would be overwritten by merge"). Per clone, every clone that runs agentstate (`init`,
`sync`, or a first command after a clone) writes the line for itself, and a merge of the
shared files only ever happens in a clone that exported to them, so it always has it.

Union is safe for these files because every line is one self-contained record with a
content-derived id: keeping both sides of a conflicting hunk can only add records, a
duplicated line is the same record twice (read once), and a line out of order is re-sorted
by the next export. The import, not git, decides what the records mean (tombstones win,
rival values are contested).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentstate.store.db import STORE_DIR

INFO_ATTRIBUTES = ".git/info/attributes"
MERGE_RULE = "merge=union"
# What earlier versions wrote beside the store; removed when untracked and unchanged.
_OLD_ATTRIBUTES = ("# agentstate: shared records merge by union (one record per line).\n"
                   "shared/*.jsonl merge=union\n")


def _git(cwd: Path, *args: str) -> str | None:
    """stdout of a git command, or None (not a repository, git missing, an error)."""
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                             check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def union_line(root: Path) -> tuple[Path, str] | None:
    """(the clone's info/attributes file, the line it needs) for the store at `root` (the
    .agentstate folder), or None outside a git work tree."""
    found = _git(root.parent, "rev-parse", "--show-prefix", "--git-path", "info/attributes")
    if found is None:
        return None
    lines = found.splitlines()
    if len(lines) == 1:  # the store is at the top of the work tree: the prefix is empty
        prefix, attributes = "", lines[0]
    else:
        prefix, attributes = lines[0], lines[1]
    path = Path(attributes)
    if not path.is_absolute():
        path = root.parent / path
    # Anchored at the top of the work tree, the way .git/info/attributes patterns are read;
    # the store's final name (init fills a staging folder before renaming it into place).
    return path, f"/{prefix}{STORE_DIR}/shared/*.jsonl {MERGE_RULE}"


def ensure_gitattributes(root: Path) -> bool:
    """Add the union line for `root`/shared to the clone's .git/info/attributes. → changed.
    Outside a git work tree there is nothing to merge, and nothing is written."""
    _drop_old_attributes(root)
    found = union_line(root)
    if found is None:
        return False
    path, line = found
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    if line in (existing.strip() for existing in lines):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(existing + "\n" for existing in lines)
    path.write_text(text + "# agentstate: shared records merge by union (one record per "
                    "line)\n" + line + "\n", encoding="utf-8")
    return True


def _drop_old_attributes(root: Path) -> None:
    """An earlier version's untracked `.agentstate/.gitattributes`, unchanged, goes: it
    would collide with a teammate's committed copy on pull, and the clone's own attributes
    file now holds the rule. A tracked or edited one is the team's and stays."""
    old = root / ".gitattributes"
    try:
        if old.read_text(encoding="utf-8") != _OLD_ATTRIBUTES:
            return
    except (OSError, UnicodeDecodeError):
        return
    if _git(root, "ls-files", "--error-unmatch", "--", old.name) is None and \
            _git(root, "rev-parse", "--is-inside-work-tree") == "true":
        old.unlink(missing_ok=True)


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
