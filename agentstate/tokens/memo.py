"""Exact cl100k_base counts without building tiktoken's whole encoder in every process.

Building the encoder for the full 100k-token vocabulary costs ~70 ms and reading the
vocabulary ~35 ms more, in every command that counts: most of `agentstate context`'s time.
Counting does not need the whole vocabulary, only the part a text can touch:

* BPE works on each regex piece of the text separately and only ever looks up byte strings
  inside that piece. An encoder built from the *slice* of the vocabulary made of byte strings
  that occur inside the text's pieces (plus the 256 single bytes, with their real ranks)
  therefore produces exactly the full encoder's tokens for that text.
* cl100k's pieces never contain whitespace except one leading character and trailing
  newlines (or are whitespace only). So every piece lies inside a *window*: a run of
  non-whitespace with the character before it and the newlines after it, or a whitespace
  run. Windows depend only on the Unicode White_Space set, not on the pattern's letter and
  number classes, so the slice taken over windows is a superset of what BPE needs.
  Windows are cut further only where ASCII alone proves a piece boundary: after an ASCII
  letter followed by an ASCII non-letter (a letter piece always ends with its letter run),
  and between an ASCII digit and an ASCII non-digit (digits only ever form pieces of
  numbers). A path like `tests/test_login_12345.py` thus costs a few short windows instead
  of one whose substrings number in the thousands.
* The covered windows (as digests) and the slice are kept in a SQLite file in the cache
  directory, written in one transaction so a covered window always has its slice; a later
  command looks up only windows it has not seen. Counts are remembered by a digest of the
  text, never the text.
* The ranks of a window's substrings come from the file's copy of the vocabulary when it has
  one (`agentstate init` writes it: a handful of indexed look-ups), otherwise from the BPE
  file keyed by base64 text (tokens/bpe.py: ~20 ms, no decoding). So an empty cache — a new
  machine, a cleared cache — never decodes the 100k tokens nor writes the copy (~0.3 s).
* What a command learns is written once, when it exits, in one transaction.

Anything unusual (a window longer than LONG_WINDOW bytes, a cache that cannot be opened or
written) is counted with the full encoder instead: slower, never wrong.
"""

from __future__ import annotations

import atexit
import hashlib
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentstate.lazy_re import LazyPattern

# Unicode White_Space, which is what `\s` means in tiktoken's (Rust) regex. Python's own `\s`
# also matches U+001C..U+001F, which would split windows inside a piece.
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Compiled on first use: only a count this memo has not seen cuts windows.
_SPACE_RUN = LazyPattern(f"[{WHITE_SPACE}]+")
_WORD = LazyPattern(f"[^{WHITE_SPACE}]+[\r\n]*")
_ASCII_BOUNDARY = LazyPattern(
    r"(?<=[A-Za-z])(?=[\x00-\x40\x5b-\x60\x7b-\x7f])"  # letter | ASCII non-letter
    r"|(?<=[0-9])(?=[\x00-\x2f\x3a-\x7f])"             # digit | ASCII non-digit
    r"|(?<=[\x00-\x2f\x3a-\x7f])(?=[0-9])"             # ASCII non-digit | digit
)
LONG_WINDOW = 256  # bytes; enumerating a longer window's substrings costs more than it saves
BATCH = 900  # host parameters per IN (...) query, under SQLite's default limit
# Building an encoder costs in proportion to its ranks, so slice encoders are rebuilt until
# the ranks built in this process add up to about one full vocabulary; past that the full
# encoder would have been the cheaper choice.
REBUILD_ALLOWANCE = 100_000
# Substrings to look up one by one in the file's vocabulary copy; more, and the BPE index
# (~20 ms to build, well under a microsecond a look-up) is cheaper than ~3 µs each.
LOOKUP_LIMIT = 10_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (digest BLOB PRIMARY KEY, tokens INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS windows (digest BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS slice (token BLOB PRIMARY KEY, rank INTEGER NOT NULL,
    generation INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS slice_generation ON slice (generation);
CREATE TABLE IF NOT EXISTS vocabulary (token BLOB PRIMARY KEY, rank INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def well_formed(text: str) -> str:
    """The text tiktoken actually encodes: lone surrogates become U+FFFD, as tiktoken does."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def windows(*texts: str) -> set[str]:
    """Spans of `texts` that together contain every cl100k piece (see the module docstring)."""
    found: set[str] = set()
    words: set[str] = set()
    for text in texts:
        found.update(_SPACE_RUN.findall(text))
        words.update(text[start - 1 if start else 0: end]
                     for start, end in map(re.Match.span, _WORD.finditer(text)))
    # Texts repeat most of their words: cut each distinct one only once.
    split = _ASCII_BOUNDARY.split
    for word in words:
        found.update(split(word))
    found.discard("")
    return found


def substrings(window: bytes, longest: int) -> list[bytes]:
    n = len(window)
    return [window[i:j] for i in range(n) for j in range(i + 1, min(n, i + longest) + 1)]


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class CountMemo:
    """Counts for one encoding, remembered in `path` and built from slices of `ranks()`."""

    def __init__(self, path: Path | None, ranks: Callable[[], dict[bytes, int]],
                 make_encoder: Callable[[dict[bytes, int]], Any],
                 index: Callable[[], Any] | None = None) -> None:
        self._path = path
        self._ranks = ranks
        # The BPE file keyed by base64 text (tokens.bpe.BpeIndex): ranks of chosen strings
        # without decoding the whole vocabulary, for a cache that has no copy of it yet.
        self._index = index
        self._make_encoder = make_encoder
        self._conn: sqlite3.Connection | None = None
        self._usable = path is not None
        self._known: dict[str, int] = {}        # counts of this process
        self._covered: set[str] = set()         # windows whose slice is in self._slice
        self._slice: dict[bytes, int] = {}
        self._generation = -1                   # newest slice generation read from the file
        self._encoder: Any = None
        self._rebuilt = 0                       # ranks put into encoders so far
        self._full: Any = None
        self._longest = 0
        self._vocab: dict[bytes, int] | None = None  # the whole vocabulary, once read
        self._pending_counts: dict[bytes, int] = {}
        self._pending_windows: list[bytes] = []
        self._pending_slice: dict[bytes, int] = {}
        self._flush_registered = False

    # -- public ---------------------------------------------------------------------------
    def count_many(self, texts: Sequence[str]) -> list[int]:
        out = [0] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if not text:
                continue
            n = self._known.get(text)
            if n is None:
                todo.setdefault(text, []).append(i)
            else:
                out[i] = n
        if todo:
            fixed = {text: well_formed(text) for text in todo}
            wanted = set(fixed.values())
            stored = self._stored_counts(wanted)
            missing = sorted(wanted - stored.keys())
            if missing:
                fresh = self._encode(missing)
                self._pending_counts.update((digest(t), n) for t, n in fresh.items())
                self._flush_at_exit()
                stored.update(fresh)
            for text, places in todo.items():
                n = self._known[text] = stored[fixed[text]]
                for i in places:
                    out[i] = n
        return out

    # -- counting -------------------------------------------------------------------------
    def _encode(self, texts: list[str]) -> dict[str, int]:
        encoder = None
        if self._full is None and self._usable:
            spans = windows(*texts)
            if all(len(w.encode("utf-8")) <= LONG_WINDOW for w in spans):
                try:
                    encoder = self._slice_encoder(spans)
                except sqlite3.Error:
                    self._usable = False
        encoder = encoder or self._full_encoder()
        return {t: len(encoder.encode(t, disallowed_special=())) for t in texts}

    def _full_encoder(self) -> Any:
        if self._full is None:
            self._full = self._make_encoder(self._vocabulary())
        return self._full

    def _vocabulary(self) -> dict[bytes, int]:
        if self._vocab is None:
            self._vocab = self._ranks()
            self._flush_at_exit()  # the file's copy of the vocabulary is written if missing
        return self._vocab

    def _slice_encoder(self, spans: set[str]) -> Any | None:
        """An encoder whose slice covers `spans`, or None when the full one is the cheaper."""
        unknown = spans - self._covered
        if unknown:
            by_digest = {digest(w): w for w in unknown}
            seen = self._covered_in_file(list(by_digest))
            new = [w for d, w in by_digest.items() if d not in seen]
            if new:
                self._cover(new, [d for d, w in by_digest.items() if d not in seen])
            self._covered |= unknown
        if self._encoder is None:
            self._rebuilt += len(self._slice)
            if self._rebuilt > REBUILD_ALLOWANCE:
                return None
            ranks = dict(self._slice)
            ranks.update(self._single_bytes())
            self._encoder = self._make_encoder(ranks)
        return self._encoder

    def _single_bytes(self) -> dict[bytes, int]:
        have = {s: r for s, r in self._slice.items() if len(s) == 1}
        if len(have) < 256:
            have = self._lookup({bytes([b]) for b in range(256)})
        return have

    def _cover(self, new: list[str], new_digests: list[bytes]) -> None:
        """Add the vocabulary's substrings of `new` windows to the slice (and, at exit, the
        windows and their slice to the file)."""
        # The single bytes always go in: every encoder needs them, and reading them from the
        # file is far cheaper than reading the whole vocabulary for them.
        wanted = {bytes([b]) for b in range(256)}
        longest = self._longest_token()
        for window in new:
            wanted.update(substrings(window.encode("utf-8"), longest))
        found = self._lookup(wanted)
        if any(s not in self._slice for s in found):
            self._slice.update(found)
            self._encoder = None
        # All of `found`, not only what this process lacked: a window must never be recorded
        # without its whole slice.
        self._pending_slice.update(found)
        self._pending_windows += new_digests
        self._flush_at_exit()

    def _longest_token(self) -> int:
        if not self._longest:
            stored = self._meta("longest")
            if stored:
                self._longest = int(stored)
            elif self._vocab is None and self._index is not None:
                self._longest = self._index().longest()
            else:
                self._longest = max(map(len, self._vocabulary()))
        return self._longest

    def _lookup(self, wanted: set[bytes]) -> dict[bytes, int]:
        """Ranks of the `wanted` byte strings that are in the vocabulary."""
        if self._vocab is None and len(wanted) <= LOOKUP_LIMIT and self._meta("vocabulary"):
            rows = self._select_in("SELECT token, rank FROM vocabulary WHERE token IN ({})",
                                   list(wanted))
            if len(rows) >= 256:  # the single bytes are always there: the copy is readable
                return dict(rows)
        if self._vocab is None and self._index is not None:
            return self._index().ranks_of(wanted)
        vocab = self._vocabulary()
        return {w: vocab[w] for w in wanted if w in vocab}

    # -- the file -------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection | None:
        if not self._usable:
            return None
        if self._conn is None:
            try:
                assert self._path is not None
                self._path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self._path, timeout=0.5, isolation_level=None)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.executescript(SCHEMA)
                self._conn = conn
            except (OSError, sqlite3.Error):
                self._usable = False
                return None
        return self._conn

    def _select_in(self, sql: str, keys: list[Any]) -> list[tuple[Any, ...]]:
        conn = self._db()
        if conn is None:
            return []
        rows: list[tuple[Any, ...]] = []
        try:
            for i in range(0, len(keys), BATCH):
                chunk = keys[i:i + BATCH]
                rows += conn.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
        except sqlite3.Error:
            self._usable = False
            return []
        return rows

    def _stored_counts(self, texts: set[str]) -> dict[str, int]:
        by_digest = {digest(t): t for t in texts}
        rows = self._select_in("SELECT digest, tokens FROM counts WHERE digest IN ({})",
                               list(by_digest))
        return {by_digest[d]: n for d, n in rows}

    def _covered_in_file(self, digests: list[bytes]) -> set[bytes]:
        """Which windows the file covers, with their slice read into this process.

        One read transaction, so the windows and the slice come from the same snapshot: a
        purge emptying the file between the two reads cannot leave a window without its
        slice."""
        conn = self._db()
        if conn is None:
            return set()
        conn.execute("BEGIN")
        try:
            rows = self._select_in("SELECT digest FROM windows WHERE digest IN ({})", digests)
            if rows:
                self._read_slice(conn)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return {d for (d,) in rows}

    def _read_slice(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT token, rank, generation FROM slice WHERE generation > ?",
                            (self._generation,)).fetchall()
        for token, rank, generation in rows:
            if token not in self._slice:
                self._slice[token] = rank
                self._encoder = None
            self._generation = max(self._generation, generation)

    def _meta(self, key: str) -> str | None:
        rows = self._select_in("SELECT value FROM meta WHERE key IN ({})", [key])
        return rows[0][0] if rows else None

    def warm(self) -> None:
        """Write the file's copy of the vocabulary if it has none yet."""
        if self._db() is not None and not self._meta("vocabulary"):
            self._vocabulary()
            self.flush()

    def discard(self) -> None:
        """Forget this process's counts and unsaved windows (after a purge)."""
        self._known.clear()
        self._pending_counts, self._pending_windows, self._pending_slice = {}, [], {}

    def hold_full_encoder(self) -> None:
        """Load the whole vocabulary now: a process that forks workers (the hook helper)
        pays for it once instead of each worker building slices."""
        self._full_encoder()

    def close_file(self) -> None:
        """Write what was learned and close the file (it reopens on the next use): a process
        about to fork must hold no SQLite connection its children would share."""
        self.flush()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _flush_at_exit(self) -> None:
        if not self._flush_registered and self._usable:
            self._flush_registered = True
            atexit.register(self.flush)

    def flush(self) -> None:
        """Write what this process learned, in one transaction; a busy or read-only cache
        only means nothing is saved."""
        if not (self._pending_counts or self._pending_windows or self._pending_slice
                or self._vocab is not None):
            return  # nothing learned: no write lock taken, no file created
        conn = self._db()
        if conn is None:
            return
        counts, windows_, slice_ = (self._pending_counts, self._pending_windows,
                                    self._pending_slice)
        self._pending_counts, self._pending_windows, self._pending_slice = {}, [], {}
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._write_all(conn, counts, windows_, slice_)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            pass

    def _write_all(self, conn: sqlite3.Connection, counts: dict[bytes, int],
                   windows_: list[bytes], slice_: dict[bytes, int]) -> None:
        if slice_:
            generation = conn.execute(
                "SELECT coalesce(max(generation), 0) + 1 FROM slice").fetchone()[0]
            conn.executemany("INSERT OR IGNORE INTO slice (token, rank, generation) "
                             "VALUES (?, ?, ?)", ((t, r, generation) for t, r in slice_.items()))
        conn.executemany("INSERT OR IGNORE INTO windows (digest) VALUES (?)",
                         ((d,) for d in windows_))
        conn.executemany("INSERT OR IGNORE INTO counts (digest, tokens) VALUES (?, ?)",
                         counts.items())
        if self._vocab is not None and conn.execute(
                "SELECT 1 FROM meta WHERE key = 'vocabulary'").fetchone() is None:
            conn.execute("DELETE FROM vocabulary")
            conn.executemany("INSERT INTO vocabulary (token, rank) VALUES (?, ?)",
                             self._vocab.items())
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                             [("vocabulary", str(len(self._vocab))),
                              ("longest", str(max(map(len, self._vocab))))])


def verify(path: Path, vocab: dict[bytes, int]) -> list[str]:
    """What is wrong with the count cache at `path`, measured against the verified `vocab`
    (empty: nothing). Counts themselves cannot be re-checked without their texts."""
    if not path.exists():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            problems = []
            copy = dict(conn.execute("SELECT token, rank FROM vocabulary"))
            if copy and copy != vocab:
                problems.append("its vocabulary copy differs from the verified BPE file")
            wrong = sum(1 for token, rank in conn.execute("SELECT token, rank FROM slice")
                        if vocab.get(token) != rank)
            if wrong:
                problems.append(f"{wrong} slice entries disagree with the vocabulary")
            return problems
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return [f"it cannot be read ({exc})"]


def forget(path: Path) -> None:
    """Delete every remembered count and window digest (the slice holds vocabulary only)."""
    if not path.exists():
        return
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.executescript(SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM counts")
        conn.execute("DELETE FROM windows")
        conn.execute("DELETE FROM slice")
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
