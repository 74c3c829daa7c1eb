"""Counting with a slice of the vocabulary gives exactly tiktoken's counts, and remembered
counts and windows let a later process count without building the full encoder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstate import tokens
from agentstate.tokens import memo
from agentstate.tokens.memo import CountMemo, windows
from tests.conftest import ROOT

# Characters chosen to stress the piece rules: ASCII letters, digits and punctuation, every
# kind of whitespace (Unicode White_Space and the U+001C..U+001F that Python alone calls
# space), non-ASCII letters and marks, non-ASCII numbers, CJK, emoji, lone surrogates.
SPECIAL = list("abcXYZ019 _-./:'\"\n\r\t!?()[]{}<>=+*&^%$#@~`|\\,;") + [
    "é", "ß", "中", "文", "😀", "\u3000", "\xa0", "\x1c", "\x1f", "\u2028", "\u0661", "²",
    "ǅ", "\u0301", "Ⅻ", "\x85", "\u200b", "\ud800", "'s", "'LL", "  ", "\r\n", "http://",
]
TEXTS = st.lists(st.sampled_from(SPECIAL) | st.text(max_size=4), max_size=40).map("".join)


def full_count(text: str) -> int:
    return len(tokens.load_encoding().encode(text, disallowed_special=()))


def fresh_memo(path: Path | None) -> CountMemo:
    return CountMemo(path, tokens._vocabulary, tokens._cl100k_encoder, tokens._bpe_index)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXTS, min_size=1, max_size=4))
def test_slice_counts_equal_full_encoder(tmp_path, texts):
    # One file for all examples: later examples find windows covered by earlier ones.
    counter = fresh_memo(tmp_path / "counts.sqlite")
    assert counter.count_many(texts) == [full_count(memo.well_formed(t)) for t in texts]
    assert counter._full is None  # the slice encoder did the work
    assert counter._vocab is None  # from the BPE index: the vocabulary was never decoded
    counter.flush()


WORDS = st.lists(st.sampled_from(SPECIAL) | st.text(max_size=12), min_size=1, max_size=12)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(WORDS.map(" ".join), min_size=1, max_size=5), min_size=1,
                        max_size=8),
       run=st.integers(0, 10**9))
def test_an_empty_cache_counts_exactly_from_the_bpe_index(tmp_path, batches, run):
    """The first process on a machine: no file, no vocabulary copy, batch after batch of new
    windows (as the budgeter counts), every count equal to tiktoken's own encoder."""
    counter = fresh_memo(tmp_path / f"cold-{run}.sqlite")
    for texts in batches:
        assert counter.count_many(texts) == [full_count(memo.well_formed(t)) for t in texts]
    assert counter._vocab is None and counter._full is None


@settings(max_examples=200, deadline=None)
@given(text=TEXTS)
def test_every_piece_lies_inside_a_window(text):
    """The lemma the slice rests on, checked against the pattern itself."""
    text = memo.well_formed(text)
    spans = windows(text)
    for piece in regex.findall(tokens._CL100K_PATTERN, text):
        assert any(piece in span for span in spans), (piece, spans)


def test_white_space_is_exactly_unicode_white_space():
    ours = regex.compile(f"[{memo.WHITE_SPACE}]")
    unicode_space = regex.compile(r"\s")
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        assert bool(ours.match(char)) == bool(unicode_space.match(char)), hex(code)


def corpus() -> list[str]:
    texts = []
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in [*docs, *sorted((ROOT / "agentstate").rglob("*.py"))[:25]]:
        text = path.read_text(encoding="utf-8")
        texts += [text[i:i + 3000] for i in range(0, len(text), 3000)]
    return texts


def test_real_text_counts_and_a_second_memo_reads_the_file(tmp_path):
    texts = corpus()
    expected = [full_count(t) for t in texts]
    first = fresh_memo(tmp_path / "counts.sqlite")
    assert first.count_many(texts) == expected
    first.flush()
    second = fresh_memo(tmp_path / "counts.sqlite")
    assert second.count_many(texts) == expected
    assert second._vocab is None and second._full is None  # remembered: nothing rebuilt
    # New text made of known windows is counted from the file's slice, without the vocabulary.
    shuffled = " ".join(reversed(texts[0].split(" ")))
    assert second.count_many([shuffled]) == [full_count(shuffled)]
    assert second._vocab is None


def test_a_later_process_counts_without_tiktoken(tmp_path):
    script = (
        "import json, sys\n"
        "from agentstate.tokens import TokenCounter\n"
        "texts = json.loads(sys.stdin.read())\n"
        "counts = TokenCounter().count_many(texts)\n"
        "print(json.dumps([counts, 'tiktoken' in sys.modules]))\n"
    )
    texts = corpus()[:20]
    env = {"AGENTSTATE_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def run() -> tuple[list[int], bool]:
        out = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts),
                             capture_output=True, text=True, env=env, check=True)
        counts, loaded = json.loads(out.stdout)
        return counts, loaded

    cold, loaded_cold = run()
    warm, loaded_warm = run()
    assert cold == warm == [full_count(t) for t in texts]
    assert loaded_cold and not loaded_warm


@pytest.mark.parametrize("damage", ["garbage", "directory"])
def test_unusable_cache_still_counts_exactly(tmp_path, damage):
    path = tmp_path / "counts.sqlite"
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    else:
        path.mkdir()
    counter = fresh_memo(path)
    texts = ["hello world", "tests/test_login_123.py::test_x failed", "你好，世界"]
    assert counter.count_many(texts) == [full_count(t) for t in texts]
    counter.flush()  # writing to an unusable cache is quietly skipped


def test_forget_erases_counts_and_windows(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path))
    tokens._memo_for.cache_clear()
    counter = tokens._memo_for(str(tmp_path), None, None)
    counter.count_many(["a secret-ish sentence about the login flow"])
    counter.flush()
    import sqlite3

    conn = sqlite3.connect(tokens.count_memo_path())
    assert conn.execute("SELECT count(*) FROM counts").fetchone()[0] == 1
    conn.close()
    tokens.forget_counts()
    conn = sqlite3.connect(tokens.count_memo_path())
    rows = [conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("counts", "windows", "slice")]
    conn.close()
    assert rows == [0, 0, 0]
    # Counting still works afterwards, and gives the same answer.
    assert tokens.TokenCounter().count("a secret-ish sentence about the login flow") == \
        full_count("a secret-ish sentence about the login flow")


def test_init_builds_the_vocabulary_copy_in_advance(cli, tmp_path, monkeypatch):
    import sqlite3

    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "fresh-cache"))
    cli.ok("init")
    conn = sqlite3.connect(tokens.count_memo_path())
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    copied = conn.execute("SELECT count(*) FROM vocabulary").fetchone()[0]
    conn.close()
    assert int(meta["vocabulary"]) == copied == len(tokens._vocabulary())
    # A new memo covers new windows from the copy: the whole vocabulary is never read.
    counter = fresh_memo(tokens.count_memo_path())
    text = "zqxw_unseen_identifier_42 failed in src/qq/zz.py"
    assert counter.count_many([text]) == [full_count(text)]
    assert counter._vocab is None


def test_concurrent_processes_share_the_cache_without_breaking_it(tmp_path):
    texts = corpus()
    chunks = [texts[i::4] for i in range(4)]
    script = (
        "import json, sys\n"
        "from agentstate.tokens import TokenCounter\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps(TokenCounter().count_many(texts)))\n"
    )
    env = {"AGENTSTATE_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env) for _ in chunks]
    for proc, chunk in zip(procs, chunks, strict=True):
        proc.stdin.write(json.dumps(chunk))
        proc.stdin.close()
    results = [json.loads(proc.stdout.read()) for proc in procs]
    assert all(proc.wait() == 0 for proc in procs)
    for chunk, counts in zip(chunks, results, strict=True):
        assert counts == [full_count(t) for t in chunk]
    path = tmp_path / tokens.count_memo_path().name
    assert memo.verify(path, tokens._vocabulary()) == []
    # Whatever each process managed to record, a later reader counts everything exactly.
    later = fresh_memo(path)
    assert later.count_many(texts) == [full_count(t) for t in texts]
