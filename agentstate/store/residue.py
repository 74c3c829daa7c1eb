"""Where a purged text can still be: matching that ignores case and whitespace, the files
agentstate writes, and the objects of a git repository.

Used by `forget --purge` (agentstate.memory.forget). The store layer knows the layout of
`.agentstate/` but no domain: callers say which folders hold drafts, caches or exports.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

MARK = "[purged]"
MAX_FILE_BYTES = 20 * 1024 * 1024  # larger files are reported by name, not read
GIT_TIMEOUT = 120


_GAP = r"(?:\s|\\[nrt])+"  # between two words: whitespace, or JSON's escaped kinds of it


def text_pattern(texts: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any of `texts` whatever its case and however its words are
    spaced or broken across lines (the longest first, so a longer text wins). A line break
    also counts as written inside JSON (`\n`, `\r\n`, `\t` escapes): event meta is stored as
    JSON text, and a note split over two lines there once survived its purge."""
    parts = []
    for text in sorted({t for t in texts if t and t.strip()}, key=len, reverse=True):
        parts.append(_GAP.join(re.escape(word) for word in text.split()))
    if not parts:
        return None
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


@dataclass
class Matcher:
    """`substring` texts match anywhere in a value; `whole` texts only as the whole value
    (a short text such as "use uv" would otherwise erase every sentence that says it)."""

    substring: re.Pattern[str] | None
    whole: re.Pattern[str] | None
    anywhere: re.Pattern[str] | None  # every text, anywhere: for the places tied to it

    @classmethod
    def build(cls, texts: list[str], min_substring: int) -> Matcher:
        return cls(text_pattern(t for t in texts if len(t) >= min_substring),
                   text_pattern(t for t in texts if len(t) < min_substring),
                   text_pattern(texts))

    def hit(self, value: object) -> bool:
        if not isinstance(value, str) or not value:
            return False
        if self.substring is not None and self.substring.search(value):
            return True
        return self.whole is not None and self.whole.fullmatch(value.strip()) is not None

    def scrub(self, value: str) -> str:
        if self.whole is not None and self.whole.fullmatch(value.strip()):
            return MARK
        return self.substring.sub(MARK, value) if self.substring is not None else value

    def hit_anywhere(self, value: object) -> bool:
        return isinstance(value, str) and self.anywhere is not None \
            and self.anywhere.search(value) is not None

    def scrub_anywhere(self, value: str) -> str:
        return self.anywhere.sub(MARK, value) if self.anywhere is not None else value


# ---------------------------------------------------------------- files


def _read_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    for encoding in ("utf-8", "utf-16"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def files_under(folder: Path, skip: Iterable[str] = ()) -> list[Path]:
    """Regular files below `folder` (symlinks are not followed), minus the names in `skip`
    at any depth."""
    skipped = set(skip)
    found: list[Path] = []
    if not folder.is_dir():
        return found
    for path in sorted(folder.rglob("*")):
        if any(part in skipped for part in path.relative_to(folder).parts):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(path)
    return found


def files_holding(paths: Iterable[Path], pattern: re.Pattern[str]) -> list[Path]:
    return [p for p in paths if (text := _read_text(p)) is not None and pattern.search(text)]


def scrub_file(path: Path, pattern: re.Pattern[str]) -> bool:
    """Replace every match in a text file (kept in UTF-8); True when it changed."""
    text = _read_text(path)
    if text is None or not pattern.search(text):
        return False
    path.write_text(pattern.sub(MARK, text), encoding="utf-8")
    return True


# ---------------------------------------------------------------- git objects


@dataclass
class GitResidue:
    objects: list[str] = field(default_factory=list)  # object ids holding the text
    paths: list[str] = field(default_factory=list)    # their paths in reachable commits
    command: str | None = None                         # how to rewrite them


def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                          check=True, timeout=GIT_TIMEOUT).stdout


def git_objects_holding(repo: Path, pattern: re.Pattern[str]) -> GitResidue:
    """Every blob in the repository's object database (reachable or not, loose or packed)
    whose text matches, the paths it has in any commit, and the command that rewrites the
    history without those files and drops the old objects."""
    result = GitResidue()
    if not (repo / ".git").exists():
        return result
    try:
        listing = _git(repo, "cat-file", "--batch-all-objects", "--batch-check="
                       "%(objectname) %(objecttype) %(objectsize)").decode()
        blobs = [line.split()[0] for line in listing.splitlines()
                 if line.split()[1:2] == ["blob"] and int(line.split()[2]) <= MAX_FILE_BYTES]
        if not blobs:
            return result
        raw = _git(repo, "cat-file", "--batch", data="\n".join(blobs).encode() + b"\n")
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return result
    offset = 0
    for blob in blobs:
        header_end = raw.index(b"\n", offset)
        size = int(raw[offset:header_end].split()[2])
        body = raw[header_end + 1: header_end + 1 + size]
        offset = header_end + 1 + size + 1
        for encoding in ("utf-8", "utf-16", "latin-1"):
            try:
                text = body.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
        if pattern.search(text):
            result.objects.append(blob)
    if result.objects:
        result.paths = _paths_of(repo, set(result.objects))
        result.command = rewrite_command(repo, result.paths)
    return result


def _paths_of(repo: Path, blobs: set[str]) -> list[str]:
    paths: set[str] = set()
    try:
        commits = _git(repo, "rev-list", "--all").decode().split()
        for commit in commits:
            for line in _git(repo, "ls-tree", "-r", commit).decode().splitlines():
                meta, _, path = line.partition("\t")
                if meta.split()[2] in blobs:
                    paths.add(path)
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return sorted(paths)


def rewrite_command(repo: Path, paths: list[str]) -> str:
    """A shell command (plain git) that removes `paths` from every commit and tag of `repo`
    and prunes the objects that held them. It never contains the purged text. The rewrite
    runs with the repository marked bare, so the (already scrubbed) drafts in its work tree
    stay as they are; the index is then reset to the new HEAD."""
    where = shlex.quote(str(repo))
    steps = []
    if paths:
        removal = "git rm -q --cached --ignore-unmatch -- " + " ".join(
            shlex.quote(p) for p in paths)
        gitdir = shlex.quote(str(repo / ".git"))
        steps.append(f"git -C {where} config core.bare true")
        steps.append(f"{{ FILTER_BRANCH_SQUELCH_WARNING=1 git -C {gitdir} filter-branch -f "
                     f"--index-filter {shlex.quote(removal)} --tag-name-filter cat -- --all; "
                     f"rc=$?; git -C {where} config core.bare false; test $rc -eq 0; }}")
        steps.append(f"git -C {where} read-tree HEAD")
        steps.append(f"git -C {where} for-each-ref --format='%(refname)' refs/original/ | "
                     f"xargs -r -n1 git -C {where} update-ref -d")
    steps.append(f"git -C {where} reflog expire --expire=now --all")
    steps.append(f"git -C {where} gc -q --prune=now")
    return " && ".join(steps)
