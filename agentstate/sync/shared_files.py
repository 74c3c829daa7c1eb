"""The shared folder's files on disk: read confined and bounded, checked, written whole.

A teammate writes these files, so each is read only when it is a regular file inside the
repository and within the limits below; `read_folder` checks every line (records.py's
`parse_line` and `check_id`) into a `Folder`, unless this store already checked that exact
text. A file is replaced atomically, its lines in id order, so that git's union merge of two
teammates' files is a file of both.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agentstate.errors import InvalidInput
from agentstate.lazy_re import LazyPattern
from agentstate.sync import records
from agentstate.sync.records import FILES, Record, bad_line, check_id, decode_line


@dataclass
class Folder:
    """Every record of the shared folder, validated, by id."""

    path: Path
    records: dict[str, Record] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)  # file name → raw lines
    # file name → sha256 of its text, for the files read whole and found valid (see
    # read_folder's `checked`)
    digests: dict[str, str] = field(default_factory=dict)

    def of_type(self, *types: str) -> list[Record]:
        return sorted((r for r in self.records.values() if r.type in types), key=lambda r: r.id)

    def targets(self, kind: str) -> set[str]:
        # A set: no sort of every record (an export and an import ask twice each).
        return {r.data["target"] for r in self.records.values() if r.type == kind}


# What one shared file may hold. A teammate writes these files: each is read only when it is
# a regular file inside the repository and within these limits (a `memories.jsonl ->
# /dev/zero` link was once read without bound on every pull).
MAX_SHARED_FILE_BYTES = 64 * 1024 * 1024


MAX_SHARED_LINES = 500_000


MAX_SHARED_LINE_CHARS = 1024 * 1024


def check_folder(path: Path) -> None:
    """The shared folder must be a real folder inside the store: a symlinked `shared/` would
    make export write wherever the link points."""
    for part in (path.parent, path):
        if part.is_symlink():
            raise InvalidInput(f"{_show(part)} is a symbolic link: the shared folder must be "
                               "a plain folder inside the repository (remove the link)")
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"{_show(path)} is not a folder")


def read_shared_file(file: Path) -> str | None:
    """The text of one shared file (None when absent), confined and bounded: a symlink, a
    device, a FIFO or a file over the limits is InvalidInput naming it, never read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(file, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if file.is_symlink():
            raise InvalidInput(f"{_show(file)} is a symbolic link: shared files must be "
                               "regular files inside the repository") from None
        raise InvalidInput(f"{_show(file)} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(f"{_show(file)} is not a regular file: shared files must be "
                               "regular files inside the repository")
        if info.st_size > MAX_SHARED_FILE_BYTES:
            raise InvalidInput(f"{_show(file)} is {info.st_size:,} bytes; the limit is "
                               f"{MAX_SHARED_FILE_BYTES:,}")
        data = handle.read(MAX_SHARED_FILE_BYTES + 1)  # it may grow while it is read
    if len(data) > MAX_SHARED_FILE_BYTES:
        raise InvalidInput(f"{_show(file)} is over {MAX_SHARED_FILE_BYTES:,} bytes")
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{_show(file)}: not UTF-8 text (byte {exc.start + 1})") from None
    count = raw.count("\n")
    if count > MAX_SHARED_LINES:
        raise InvalidInput(f"{_show(file)} has {count:,} lines; the limit is "
                           f"{MAX_SHARED_LINES:,}")
    return raw


def file_lines(raw: str) -> list[str]:
    """A shared file's lines, split at line ends only: `str.splitlines` also splits at
    U+2028, U+2029 and U+0085, which JSON leaves unescaped inside a string, so a memory
    text holding one made the whole folder unreadable. A file with no carriage return (as
    the export writes them) is split as it is: the two replacements copied it twice, 6 ms of
    a first import's 4.6 MB memories file."""
    if "\r" in raw:
        raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    return raw.split("\n")


def read_folder(path: Path, skip: set[str] | frozenset[str] = frozenset(),
                checked: dict[str, str] | None = None) -> Folder:
    """Parse every shared file; raise InvalidInput naming file and line on the first bad one.

    `skip`: record ids whose lines are not validated (this machine purged them: a purge may
    have scrubbed their text out of the line already). `checked`: file name → the sha256 of
    a text of that file this store has validated (or written) before; a file whose text is
    still that one is only parsed, not checked again line by line (issue 24: checking
    every line was half of a sync that found nothing new). `Folder.digests` holds the
    digests to keep for next time."""
    import hashlib

    folder = Folder(path)
    check_folder(path)
    for name in sorted(set(FILES.values())):
        file = path / name
        raw = read_shared_file(file)
        if raw is None:
            continue
        every = file_lines(raw)
        lines = [line for line in every if line.strip()]
        folder.lines[name] = lines
        digest = hashlib.sha256(raw.encode("utf-8")).hexdigest()
        folder.digests[name] = digest
        if checked is not None and checked.get(name) == digest:
            _parse_checked(folder, file, raw, skip)
            continue
        shown = _show(file)
        for number, text in enumerate(every, start=1):
            if not text.strip():
                continue
            where = f"{shown} line {number}"
            if len(text) > MAX_SHARED_LINE_CHARS:
                raise bad_line(where, f"the line is {len(text):,} characters; the limit is "
                                      f"{MAX_SHARED_LINE_CHARS:,}")
            if skip and _raw_id(text) in skip:
                continue
            # Looked up on records.py, the line check's one home, when it is called: what
            # replaces it there (a test counting the lines checked in full) applies here too.
            record = records.parse_line(text, where)
            if FILES[record.type] != name:
                raise bad_line(where, f"a {record.type} record belongs in {FILES[record.type]}")
            seen = folder.records.get(record.id)
            if seen is not None and seen.body != record.body:
                raise bad_line(where, f"id {record.id} also appears with different content at "
                                      f"{seen.where}")
            if seen is None:
                check_id(record)
                folder.records[record.id] = record
    return folder


def _parse_checked(folder: Folder, file: Path, raw: str, skip: set[str] | frozenset[str]
                   ) -> None:
    """The records of a file whose exact text passed `read_folder`'s checks before."""
    shown = _show(file)
    for number, text in enumerate(file_lines(raw), start=1):
        if not text.strip() or (skip and _raw_id(text) in skip):
            continue
        data = decode_line(text)
        folder.records.setdefault(data["id"], Record(data, text.strip(),
                                                     f"{shown} line {number}"))


def file_digest(file: Path) -> str | None:
    """The sha256 of a shared file's text as written (None when it is absent)."""
    import hashlib

    raw = read_shared_file(file)
    return None if raw is None else hashlib.sha256(raw.encode("utf-8")).hexdigest()


_RAW_ID = LazyPattern(r'"id":"([0-9a-f]{32})"')


def _raw_id(text: str) -> str | None:
    match = _RAW_ID.search(text)
    return match.group(1) if match else None


def _show(file: Path) -> str:
    """The file as a person finds it: relative to the repository root."""
    parts = file.parts
    if ".agentstate" in parts:
        return "/".join(parts[parts.index(".agentstate"):])
    return str(file)


def line_id(text: str) -> str:
    """The id of a stored line (for sorting): parsed when the quick match fails."""
    found = _raw_id(text)
    if found:
        return found
    try:
        return str(json.loads(text).get("id", ""))
    except (json.JSONDecodeError, AttributeError):
        return ""


def write_lines(file: Path, lines: list[str], ids: dict[str, str] | None = None) -> None:
    """Replace `file` atomically with `lines`, sorted by id (one record per line). `ids`:
    line → its id where the caller knows it (the records it made), so that only the other
    lines are searched for theirs."""
    known = ids or {}
    write_ordered(file, sorted(dict.fromkeys(lines),
                               key=lambda t: (known.get(t) or line_id(t), t)))


def write_ordered(file: Path, ordered: list[str]) -> str | None:
    """Replace `file` atomically with `ordered`, lines already in the files' order (the
    export sorts (id, line) pairs it mostly knows: issue 24). → the sha256 of the bytes
    written (what `file_digest` would read back), None where text mode translates line
    ends (there the text is written as before and the caller reads the file back)."""
    check_folder(file.parent)
    file.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(ordered) + "\n" if ordered else ""  # a line end after each line
    data = text.encode("utf-8") if os.linesep == "\n" else None
    temp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    temp.unlink(missing_ok=True)  # a link planted under this name is removed, not followed
    try:
        # O_EXCL | O_NOFOLLOW: the temporary file is a new regular file, never a link's target.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                     0o644)
        if data is None:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
        else:
            with os.fdopen(fd, "wb") as raw:
                raw.write(data)
        os.replace(temp, file)
    finally:
        temp.unlink(missing_ok=True)
    return None if data is None else hashlib.sha256(data).hexdigest()
