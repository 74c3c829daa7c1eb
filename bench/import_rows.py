"""What an import stored, to compare two versions of the code on the same transcript.

    python bench/import_rows.py write DIR claude-code|codex MB   # a fresh store under DIR
    python bench/import_rows.py compare DIR_A DIR_B               # exit 1 when they differ

`write` imports a session of the transcript bench's shape (bench_transcripts.py) with the
agentstate that is importable (run it once with a base version on PYTHONPATH, once without).
`compare` reads both stores: every event (its id replaced by its import key, which is the same
in both: ids are new at each import), the search map's numbering, the word and trigram
indexes' vocabularies (term, documents, occurrences) and the events the word index finds for
a sample of terms, by key and in rank order.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

SAMPLE_TERMS = 60


def stored(conn: sqlite3.Connection) -> dict[str, Any]:
    """What the import stored, independent of the ids it drew."""
    key = dict(conn.execute("SELECT id, COALESCE(import_key, id) FROM events"))
    events = [(r[0], r[1], r[2], r[3], r[4], r[5], key.get(r[6]), key.get(r[7]), r[8])
              for r in conn.execute(
                  "SELECT seq, kind, text, source, ts, meta, resolves, supersedes, "
                  "import_key FROM events ORDER BY run, seq")]
    search_map = [(row, key[event]) for row, event in conn.execute(
        "SELECT row, id FROM events ORDER BY row")]
    words = conn.execute("SELECT term, doc, cnt FROM events_vocab ORDER BY term").fetchall()
    trigrams = conn.execute(
        "SELECT term, doc, cnt FROM events_tri_vocab ORDER BY term").fetchall()
    step = max(len(words) // SAMPLE_TERMS, 1)
    found = {term: [key[e] for (e,) in conn.execute(
        "SELECT e.id FROM events_fts f JOIN events e ON e.row = f.rowid "
        "WHERE events_fts MATCH ? ORDER BY bm25(events_fts), e.row", (f'"{term}"',))]
        for term, _, _ in words[::step]}
    return {"events": events, "search map": search_map, "word vocabulary": words,
            "trigram vocabulary": trigrams, "found": found}


def write(target: Path, agent: str, megabytes: float) -> None:
    from agentstate.integrations.claude_code import import_claude_code
    from agentstate.integrations.codex import import_codex
    from agentstate.maintenance.init import init_store
    from agentstate.store.db import open_store
    from bench.bench_transcripts import claude_lines, codex_lines, lines_of_size

    target.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    init_store(target=target)
    path = target / "session.jsonl"
    make = claude_lines if agent == "claude-code" else codex_lines
    path.write_text("\n".join(lines_of_size(make, megabytes)) + "\n")
    store = open_store(start=target)
    try:
        result = (import_claude_code if agent == "claude-code" else import_codex)(store, path)
    finally:
        store.close()
    import agentstate

    print(f"{target}: {result.result.imported} events imported by {agentstate.__file__}")


def compare(a: Path, b: Path) -> bool:
    first, second = (stored(sqlite3.connect(root / ".agentstate" / "state.db")) for root in (a, b))
    same = True
    for part in first:
        equal = first[part] == second[part]
        same &= equal
        print(f"{part:<20} {len(first[part]):>7} / {len(second[part]):>7} "
              f"{'same' if equal else 'DIFFERENT'}")
    return same


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(Path(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(0 if compare(Path(sys.argv[2]), Path(sys.argv[3])) else 1)
