"""The secret detector behind agentstate.safety (what is caught is listed in docs/security.md).

Four layers, each a single left-to-right pass over the text (the first, its table of formats
and their anchors, in agentstate.secret_formats):

1. known formats: fixed prefixes (`ghp_`, `AKIA`, `xoxb-`, `sk_live_`, `-----BEGIN … PRIVATE
   KEY-----` …) and shapes (JWTs, webhooks, credentials in URLs, CLI password flags);
2. assignments: `NAME=value`, `NAME: value`, JSON `"name": "value"` whose NAME has a sensitive
   component (`SECRET_KEY`, `DB_PASS`, `dbPassword`, `AccountKey`), judged in Python;
3. prose: "the prod DB password is Tr0ub4dor&3";
4. generated-looking tokens: long runs mixing letters and digits that switch character class
   as often as random text does (no exemption for `/`), and any long token — hex included —
   right after a sensitive word ("api key 9f8e…").

Linear time on any input (issue: a 99,000-character token once took 75 s): every quantifier
is bounded or followed by a character its class excludes, and every pattern that could start
inside a long run has a look-behind that only lets it start at the run's first character, so
no position is scanned more than a bounded number of times. bench/bench_secrets.py measures
this on 1 MB adversarial inputs.

Hashes agentstate writes itself (40-hex commit ids, 64-hex sha256 digests, ULID-like refs) are
letters-or-digits-only or hex: they are flagged only after a sensitive word, never after a
hash word ("commit", "sha256", "digest", "tree"…).
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from bisect import bisect_right
from typing import Any

from agentstate.lazy_re import LazyPattern
from agentstate.secret_formats import (
    KNOWN_FORMATS,
    Finding,
    compiled_format,
    formats_to_run,
    private_key_blocks,
)


class Scanned(str):
    """A text the scanner has checked and found clean (what a redaction returns), so a meta
    holding it is scanned without it. Only code makes one: JSON read from a file, a payload or
    the store gives plain `str`, so no input can claim to have been scanned."""

    __slots__ = ()


# Format, zero-width and bidi characters: removed before matching, so `ghp_` + U+200B + the
# rest is still a GitHub token. Spans are mapped back to the original text.
_INVISIBLE = LazyPattern("[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                         "\u2066-\u2069\ufeff]")

# `NAME<sep>value`: the NAME's components decide (see _sensitive_name).
_ASSIGNMENT = LazyPattern(
    # The look-aheads reject, inside the regex engine, what is no name followed by its `:` or
    # `=` (the first, implied by the rest: it changes no match, but is a third cheaper than
    # the second at each word of a text) and names without a sensitive part.
    r"(?<![A-Za-z0-9_.\-])(?=[A-Za-z][A-Za-z0-9_.\-]{0,63}\\?[\"']?[ \t]{0,8}[:=])"
    r"(?=[A-Za-z0-9_.\-]{0,60}?(?i:pass|pwd|secret|token|key|cred|sas))"
    r"([A-Za-z][A-Za-z0-9_.\-]{0,63})(\\?[\"']?)[ \t]{0,8}(?::=|=>|[:=])"
    r"[ \t]{0,8}(?=(\\?[\"'`]?)([^\s\"'`,;]{1,512}))"
)
# Words one of which _ASSIGNMENT's look-ahead needs (lower case; the scan runs on text whose
# look-alike letters were folded to ASCII first, so a lower-cased substring test is enough).
_ASSIGNMENT_WORDS = ("pass", "pwd", "secret", "token", "key", "cred", "sas")
# The look-ahead holds the first letters of the words it starts with (implied: no match
# changes) and fails at once where none starts, before the look-behind and the alternatives.
_PROSE = LazyPattern(
    r"(?i)(?=[pstac])(?<![a-z0-9])(pass(?:word|phrase)s?|passwd|pwd|secret(?:\s+key)?|api\s+key|"
    r"access\s+key|private\s+key|token|credentials?)"
    r"(?:\s{1,4}(?:for|of|to)\s{1,4}[^\s]{1,40})?\s{1,4}(?:is|was|are|=|:|->|reads)\s{1,4}"
    r"[\"'`“]?([^\s\"'`”]{6,256})"
)
# Every word _PROSE starts with contains one of these (each also an _ASSIGNMENT_WORDS hit).
_PROSE_WORDS = ("pass", "pwd", "secret", "key", "token", "credential")
# `scheme://TOKEN@host` with no password: a DSN (Sentry) or a token used as the user name.
_URL_TOKEN = LazyPattern(r"(?i)(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]{0,31}://([A-Za-z0-9_\-]{20,256})@")
_JSON_ESCAPE = LazyPattern(r'\\[nrt"]')
# Candidate tokens for the entropy layer.
_CANDIDATE = LazyPattern(r"[A-Za-z0-9+/=_\-]{16,}")
_HEXISH = LazyPattern(r"[0-9a-fA-F\-]+")
_SENSITIVE_NEAR = LazyPattern(
    r"(?i)(?<![a-z0-9])(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[ _\-]?key|apikey|"
    r"(?:access|private|signing|encryption|master|account|deploy|session|license)[ _\-]?key|"
    r"credentials?|auth)(?![a-z])")
_HASH_NEAR = LazyPattern(
    r"(?i)(?<![a-z0-9])(?:sha\d{0,3}|md5|blake\w{0,3}|commit|digest|hash|checksum|tree|head|"
    r"rev|revision|blob|etag|uuid|ref|tag|id|object)(?![a-z])")
_NEAR = 40  # characters before a token looked at for a sensitive or a hash word

# Components of an assignment's name that make it sensitive. Pairs: "api"+"key" etc.
_SENSITIVE_WORDS = {"password", "passwords", "passwd", "pass", "passphrase", "pwd", "secret",
                    "secrets", "token", "tokens", "apikey", "credential", "credentials", "creds",
                    "accountkey", "privatekey", "secretkey", "accesskey", "clientsecret",
                    "authtoken", "sas"}
_KEY_QUALIFIERS = {"api", "access", "private", "secret", "account", "signing", "encryption",
                   "master", "client", "app", "auth", "shared", "consumer", "storage"}
# A name ending in one of these holds something about the secret, not the secret.
_NOT_THE_VALUE = {"file", "path", "dir", "env", "name", "names", "id", "len", "length", "min",
                  "max", "hint", "prompt", "field", "type", "policy", "reset", "url", "count",
                  "expiry", "expires", "ttl", "header", "param", "required", "regex", "hash",
                  "hashed", "digest", "format", "kind", "size", "limit", "budget", "label"}
_PLACEHOLDER = LazyPattern(
    r"(?i)(?:\$\{?[a-z_][a-z0-9_]*\}?|<[^>]*>?|\{\{?.*|%\(?[a-z_]*\)?s?|x{3,}|\*{3,}|\.{3,}|"
    r"\[redacted\]|redacted|null|none|nil|true|false|required|optional|string|str|int|"
    r"undefined|changeme_in_prod|example|your[_\-].*|env\(.*|os\.environ.*|process\.env.*|"
    r"getenv.*|settings\..*|config\..*|self\..*|input\(.*|\(|\)|\[\]|\{\})")


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


class _Shapes(dict[int, str]):
    """A character's class as one character, for str.translate (which runs in C): a-z → a,
    A-Z → A, 0-9 → 0, any other character (non-ASCII ones too) → _ (class 3)."""

    def __missing__(self, key: int) -> str:
        return "_"


_SHAPES = _Shapes({ord(c): ("a" if c.islower() else "A" if c.isupper() else "0")
                   for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"})
_SHAPE_CLASS = {"a": 0, "A": 1, "0": 2, "_": 3}


def _char_class(char: str) -> int:
    if "a" <= char <= "z":
        return 0
    if "A" <= char <= "Z":
        return 1
    if "0" <= char <= "9":
        return 2
    return 3


def _name_parts(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p for p in re.split(r"[\s_.\-]+", spaced.lower()) if p]


def _sensitive_name(name: str) -> str | None:
    """'token' for a bare token name, 'secret' for other sensitive names, else None."""
    parts = _name_parts(name)
    if not parts or parts[-1] in _NOT_THE_VALUE:
        return None
    joined = "".join(parts)
    if joined in ("token", "tokens", "accesstoken", "authtoken", "refreshtoken", "idtoken"):
        return "token"
    for index, part in enumerate(parts):
        if part in _SENSITIVE_WORDS:
            return "token" if part in ("token", "tokens") else "secret"
        if part == "key" and index and parts[index - 1] in _KEY_QUALIFIERS:
            return "secret"
    return None


def _clean_value(value: str) -> str:
    """The value as written: text inside JSON (event meta) keeps its escapes, so a value ends
    at an escaped newline or quote; an already masked value (`***`) is no value."""
    if value.startswith(("***", "[REDACTED]")):
        return ""
    return _JSON_ESCAPE.split(value, 1)[0].rstrip(".,;:!?)]}\\")


def _plausible_value(value: str, strict: bool) -> bool:
    value = _clean_value(value)
    if len(value) < 4 or _PLACEHOLDER.fullmatch(value):
        return False
    if len(set(value)) == 1:
        return False
    if strict:  # a bare `token: …` name needs a token-shaped value
        return len(value) >= 16 and re.fullmatch(r"[A-Za-z0-9_\-./+=]+", value) is not None
    return True


def _looks_generated(token: str) -> bool:
    """Letters and digits mixed the way generated keys mix them (not words, paths or ids)."""
    core = token.strip("=")
    if len(core) < 20:
        return False
    # The regex and translate checks run in C: most tokens (ids, hex digests, words) stop
    # here before any per-character Python.
    if _HEXISH.fullmatch(core):
        return False  # hex and UUIDs: only after a sensitive word (see _near_sensitive)
    shape = core.translate(_SHAPES)  # each character as its class: a, A, 0 or _
    classes = {_SHAPE_CLASS[c] for c in set(shape)}
    if len(classes - {3}) < 2:
        return False
    if 0 not in classes:
        return False  # capitals and digits only: ULIDs, order numbers (keys have a prefix)
    # Class switches between neighbouring letters/digits (pairs across `/`, `-`, `_` skipped;
    # a non-ASCII letter or digit is an alphanumeric of class 3, as _char_class has it).
    pairs = [(a, b) for a, b, x, y in zip(shape, shape[1:], core, core[1:], strict=False)
             if x.isalnum() and y.isalnum()]
    if len(pairs) < 16:
        return False
    rate = sum(a != b for a, b in pairs) / len(pairs)
    if len(classes - {3}) == 2 and 2 in classes and rate < 0.3:
        return False  # words with a few digits: test_upload_413_status, python311
    # Random base62/64 switches class on ~60% of characters; identifiers and paths far less.
    entropy = shannon_entropy(core)
    return rate >= 0.35 and entropy >= min(4.2, 0.8 * math.log2(len(core)) + 0.3)


def _near_sensitive(text: str, start: int, token: str) -> bool:
    """A long token right after a sensitive word (and not after a hash word)."""
    core = token.strip("=")
    if len(core) < 16:
        return False
    # The window's words first (one regex search in C): most tokens have no sensitive word
    # before them, and the per-character checks below are then never run.
    line_start = text.rfind("\n", max(0, start - _NEAR), start) + 1
    window = text[max(line_start, start - _NEAR):start]
    if not _SENSITIVE_NEAR.search(window) or _HASH_NEAR.search(window):
        return False
    if _HEXISH.fullmatch(core):
        return len(core) - core.count("-") >= 32  # hex digits, a UUID's dashes aside
    classes = {_SHAPE_CLASS[c] for c in set(core.translate(_SHAPES))} - {3}
    return len(classes) >= 2 and shannon_entropy(core) >= 3.3


def _scan(text: str, lower: str | None = None, known: list[int] | None = None
          ) -> list[Finding]:
    """One pass of every layer over `text`; `lower` and `known` (its lower-cased form and
    `formats_to_run`'s answer) when the caller has them already."""
    findings = private_key_blocks(text)
    if lower is None:
        lower = text.lower()
    for index in formats_to_run(text, lower) if known is None else known:
        kind, source, _ = KNOWN_FORMATS[index]
        findings.extend(Finding(kind, m.start(), m.end())
                        for m in compiled_format(source).finditer(text))
    if "://" in text:
        for m in _URL_TOKEN.finditer(text):
            userinfo = m.group(1)
            if (_HEXISH.fullmatch(userinfo) and len(userinfo) >= 32) \
                    or _looks_generated(userinfo):
                findings.append(Finding("credential in URL", m.start(1), m.end(1)))
    # The assignment and prose rules only match around one of their words: a text without
    # any skips them (and never compiles them).
    assigns = any(word in lower for word in _ASSIGNMENT_WORDS)
    for m in _assignments(text, lower) if assigns else ():
        verdict = _sensitive_name(m.group(1))
        if verdict and _plausible_value(m.group(4), strict=verdict == "token"):
            findings.append(Finding("password assignment", m.start(4), m.end(4)))
    prose = assigns and any(word in lower for word in _PROSE_WORDS)
    for m in _PROSE.finditer(text) if prose else ():
        value = _clean_value(m.group(2))
        kinds = {_char_class(c) if c.isascii() else 3 for c in value}
        if len(value) >= 6 and len(kinds) >= 2 and not _PLACEHOLDER.fullmatch(value) \
                and any(c.isdigit() or not c.isalnum() for c in value):
            findings.append(Finding("password in prose", m.start(2), m.start(2) + len(value)))
    covered = _merge(sorted((f.start, f.end) for f in findings))
    for m in _CANDIDATE.finditer(text):
        if _inside(covered, m.start()):
            continue
        token = m.group(0)
        if _looks_generated(token):
            findings.append(Finding("high-entropy string", m.start(), m.end()))
        elif _near_sensitive(text, m.start(), token):
            findings.append(Finding("token after a sensitive word", m.start(), m.end()))
    return sorted(findings, key=lambda f: (f.start, f.end))


_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_.-")  # _ASSIGNMENT's names
_NAME_REACH = 60  # how far into a name _ASSIGNMENT's look-ahead seeks its word


def _assignments(text: str, lower: str) -> list[re.Match[str]]:
    """`_ASSIGNMENT.finditer(text)`, tried only where it can match. The pattern can match
    only at the start of a run of name characters holding one of `_ASSIGNMENT_WORDS` at
    most `_NAME_REACH` characters in; tried at every position, its look-ahead was about a
    third of scanning a shared record's line, whose `"key":` field always holds a word
    (issue 24). Found by substring search on the lower-cased text, which lines up with the
    text only when it is ASCII; any other text takes the pattern everywhere, as before, and
    so does a text dense with the words (`keykeykey…`: a walk back per word would no
    longer be linear with a small constant; the pattern itself is, in C)."""
    if not text.isascii() or sum(map(lower.count, _ASSIGNMENT_WORDS)) > len(text) // 256 + 8:
        return list(_ASSIGNMENT.finditer(text))
    starts = set()
    for word in _ASSIGNMENT_WORDS:
        at = lower.find(word)
        while at >= 0:  # every occurrence, overlapping ones too
            start = at
            while start > 0 and at - start <= _NAME_REACH and text[start - 1] in _NAME_CHARS:
                start -= 1
            if at - start <= _NAME_REACH:
                starts.add(start)
            at = lower.find(word, at + 1)
    found: list[re.Match[str]] = []
    end = 0
    for start in sorted(starts):
        # finditer goes on from the end of each match: a start inside one is not tried.
        match = _ASSIGNMENT.match(text, start) if start >= end else None
        if match:
            found.append(match)
            end = match.end()
    return found


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _inside(spans: list[tuple[int, int]], pos: int) -> bool:
    """Is `pos` inside one of the merged, sorted `spans`?"""
    index = bisect_right(spans, (pos, math.inf)) - 1
    return index >= 0 and spans[index][0] <= pos < spans[index][1]


def remove_invisible(text: str) -> str:
    """`text` without zero-width, soft-hyphen and bidi-control characters."""
    # Every invisible character is outside ASCII: an ASCII text never compiles the pattern.
    return text if text.isascii() or not _INVISIBLE.search(text) else _INVISIBLE.sub("", text)


# Letters from other scripts drawn like Latin ones (Cyrillic, Greek): folded to Latin before
# matching, so `ghр_…` with a Cyrillic `р` is still a GitHub token. NFKC already folds
# full-width and other compatibility forms (`ｇｈｐ＿…`).
_CONFUSABLES = str.maketrans(
    "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧοντ",
    "ABESIJKMHOPCTXYaeijopcxysdqwABEZHIKMNOPTYXovt")
# A line break inside a value: `\` continuations and indentation around the break go too.
# Also the break as JSON writes it (`\n`, `\\\n`): event meta and shared records are scanned
# as JSON text. Only a break between two token characters can split a value. The leading
# look-ahead is implied by the rest (a match starts with a blank, a backslash or the break
# itself): it changes no match, but fails at once where the look-behind would first test
# up to eight characters — at nearly every position of a text (half the pass's time).
_LINE_JOIN = LazyPattern(r"(?=[ \t\\\r\n])(?<=[A-Za-z0-9_+/=\-]{8})[ \t]{0,64}\\{0,2}"
                        r"(?:\r?\n|(?:\\r)?\\n)[ \t]{0,64}(?=[A-Za-z0-9_+/=\-]{8})")
_JOIN_REACH = 600  # characters scanned on each side of a removed break (a value is ≤ 512)
# How far before the value's word the words that make it a secret can stand: a `mysql …
# -pVALUE` command (~210), an assignment's name (~90), a prose "password for X is" (~90).
_JOIN_CONTEXT = 240
# Every rule whose match may hold whitespace (assignments, prose, a token after a sensitive
# word, bearer, basic auth, Azure keys, mysql/sshpass/--password flags, .netrc) needs one of
# these (lower case) before its value; the rules without whitespace match inside the joined
# word and are found by their anchors there.
_JOIN_WORDS = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "sas", "bearer",
               "mysql", "mariadb", "sharedaccess")
# The characters _LINE_JOIN joins and _CANDIDATE takes into a token.
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=-"


def _folded(text: str) -> tuple[str, list[int]] | None:
    """`text` with invisible characters removed and look-alike letters folded, and for each
    character of the result the index of the character it came from; None if nothing changes."""
    if text.isascii():  # nothing to remove (every invisible character is non-ASCII) or fold
        return None
    # Only non-ASCII characters can change, and an output has few distinct ones: each is
    # folded once, and the ASCII runs between them are copied whole (a character-by-character
    # loop made a 2 KB excerpt with one `…` cost more than its scan).
    folds = {char: _fold_char(char) for char in set(text) if not char.isascii()}
    if all(folded == char for char, folded in folds.items()):
        return None
    out: list[str] = []
    origin: list[int] = []
    last = 0
    for match in _NON_ASCII.finditer(text):
        index = match.start()
        out.append(text[last:index])
        origin.extend(range(last, index))
        folded = folds[text[index]]
        out.append(folded)
        origin.extend([index] * len(folded))
        last = index + 1
    out.append(text[last:])
    origin.extend(range(last, len(text)))
    return "".join(out), origin


_NON_ASCII = LazyPattern(r"[^\x00-\x7f]")


def _fold_char(char: str) -> str:
    """One character as the scanner reads it: nothing if invisible, else its NFKC form with
    look-alike letters replaced by the ASCII ones they imitate."""
    if _INVISIBLE.match(char):
        return ""
    return unicodedata.normalize("NFKC", char).translate(_CONFUSABLES)


def _mapped(findings: list[Finding], origin: list[int], size: int) -> list[Finding]:
    origin = [*origin, size]
    return [Finding(f.kind, origin[f.start], origin[f.end - 1] + 1 if f.end else 0)
            for f in findings]


def _scan_joined(text: str, joins: list[re.Match[str]]) -> list[Finding]:
    """Secrets cut in two by a line break (`ghp_R8fK…` / `…aE2u` on the next line): the text
    around each of `joins` is scanned again with those breaks removed, and what crosses a
    removed break counts. Only windows around the breaks are scanned, so a long log with a
    few such breaks costs little more than one pass."""
    windows: list[list[Any]] = []  # [start, end, joins inside]
    for m in joins:
        start, end = max(0, m.start() - _JOIN_REACH), min(len(text), m.end() + _JOIN_REACH)
        if windows and start <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
            windows[-1][2].append(m)
        else:
            windows.append([start, end, [m]])
    found: list[Finding] = []
    for start, end, inside in windows:
        pieces: list[str] = []
        origin: list[int] = []
        breaks: list[int] = []  # positions in the joined window where a break was removed
        last = start
        for m in inside:
            pieces.append(text[last:m.start()])
            origin.extend(range(last, m.start()))
            breaks.append(len(origin))
            last = m.end()
        pieces.append(text[last:end])
        origin.extend(range(last, end))
        crossing = [f for f in _scan("".join(pieces))
                    if bisect_right(breaks, f.start) < bisect_right(breaks, f.end - 1)]
        found += [Finding(f.kind, origin[f.start], origin[f.end - 1] + 1) for f in crossing
                  if f.end > f.start]
    return found


def _could_cross(text: str, lower: str, join: re.Match[str], words: tuple[str, ...],
                 anchored: bool) -> bool:
    """Could a secret cross this line break once it is removed? Only then is the text around
    it scanned again: in test output and diffs most breaks join two words, and a re-scan of
    each cost about two scans of the whole text.

    What a finding across the break needs, layer by layer (every match holding the break
    holds the word made of the two pieces, `word`): a known format's anchor in `word` (the
    single-letter anchors of Discord tokens only with the dots those tokens have); a rule
    whose match may hold whitespace, one of _JOIN_WORDS in the left piece's word or the
    _JOIN_CONTEXT characters before it (a match crossing the break with its word after the
    break holds that word's anchor); a generated-looking token, the joined token itself.
    `words` are the _JOIN_WORDS in the whole text, `anchored` whether any format's anchor is:
    a text with none (most logs) pays for the last check only."""
    start, end = join.start(), join.end()
    left = text[max(0, start - _JOIN_REACH):start].rsplit(None, 1)[-1]
    right = text[end:end + _JOIN_REACH].split(None, 1)[0]
    if words:
        # `passed` (pytest's PASSED on every line of a -v run) is never a sensitive word.
        before = lower[max(0, start - len(left) - _JOIN_CONTEXT):start].replace("passed", "")
        if any(word in before for word in words):
            return True
    if anchored:
        word = left + right
        for index in formats_to_run(word, word.lower()):
            if index != _DISCORD or "." in word:
                return True
    tail = left[len(left.rstrip(_TOKEN_CHARS)):]
    head = right[:len(right) - len(right.lstrip(_TOKEN_CHARS))]
    return _looks_generated(tail + head)


_DISCORD = next(i for i, (kind, _, _) in enumerate(KNOWN_FORMATS) if kind == "Discord bot token")


def _scan_all(text: str) -> list[Finding]:
    # The text's lower-cased form and the formats whose anchors it holds, once: the scan
    # and the join pass both need them (each an anchor test per format over the whole text).
    lower = text.lower()
    known = formats_to_run(text, lower)
    found = _scan(text, lower, known)
    if "\n" in text or "\\n" in text:
        words = tuple(w for w in _JOIN_WORDS if w in lower)
        anchored = bool(known)
        joins = [m for m in _LINE_JOIN.finditer(text)
                 if _could_cross(text, lower, m, words, anchored)]
        if joins:
            # Every other break joined, then the others: a value in two pieces is whole in
            # one of the passes with its neighbours still apart (`AKIA…` glued to the next
            # line's first word would no longer end where a key ends). A value in three or
            # more pieces is only found piece by piece.
            for chosen in (joins[0::2], joins[1::2]):
                if chosen:
                    found += _scan_joined(text, chosen)
            found.sort(key=lambda f: (f.start, f.end))
    return found


def find_secrets(text: str) -> list[Finding]:
    """Every secret-looking span of `text` (offsets into `text` as given)."""
    if not text:
        return []
    folded = _folded(text)
    if folded is None:
        return _scan_all(text)
    # Match on the folded text; map spans back to the original.
    clean, origin = folded
    return _mapped(_scan_all(clean), origin, len(text))


def redact_secrets(text: str, mask: str = "[REDACTED]") -> str:
    """Replace every secret span (for tool output excerpts, which must be kept but not leak).

    Scanned again after each pass: a match can end inside the next secret (two tokens glued
    together), and what it leaves of that one is only found once the first is masked."""
    for _ in range(REDACT_PASSES):
        findings = find_secrets(text)
        if not findings:
            return text
        text = _masked(text, findings, mask)
    return text


REDACT_PASSES = 4  # each pass is linear; glued secrets need one pass per layer


def mask_key_blocks(text: str, mask: str = "[REDACTED]") -> str:
    """Replace each private key block whole: its body lines alone do not look secret, so an
    excerpt that keeps some of them must have the block masked before lines are chosen."""
    return _masked(text, sorted(private_key_blocks(text), key=lambda f: f.start), mask)


def _masked(text: str, findings: list[Finding], mask: str) -> str:
    out, last = [], 0
    for f in findings:
        if f.start < last:
            last = max(last, f.end)
            continue
        out.append(text[last:f.start])
        out.append(mask)
        last = f.end
    out.append(text[last:])
    return "".join(out)
