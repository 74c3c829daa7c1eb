"""Where each kind of text keeps its dense vectors (`EVENTS`, `MEMORIES`): the statements
that count, find, store and read them, written out whole per kind, so the tables each one
names are plain to read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _Vectors:
    """Where one kind of text keeps its vectors: the statements that count, find, store and
    read them (written out whole, so the tables each one names are plain to read)."""

    table: str       # the vector table (the matrix cache's key)
    key: str         # its key column (an integer: see m060)
    counts: str      # (vectors of the model, texts)
    missing: str     # (key, text) of texts without a vector of the model, newest first
    drop: str        # (key): the key's vector, whatever its model (see _store_vectors)
    insert: str      # (key, model's id, vec): the key is the rowid (m040, m062)
    newer: str       # (rowid, id, vec) of the model's vectors above a rowid, in order (the
                     # id a ranking names: an event's id, a memory version's row)
    text_top: str    # the largest rowid of the texts
    new_texts: str   # (key, text) of texts above a rowid without a vector of the model
    recent: str      # (key, text) among the newest N texts, without a vector of the model


# The model's row in `vector_models` (m060): each vector names its model by that integer.
_MODEL = "(SELECT id FROM vector_models WHERE name = ?)"

# Events by their row (`events.row`, m063; the map's row before it, which it kept), which
# VACUUM and gc's rewrite keep: an integer key, where the event's TEXT id cost ~75 bytes a
# vector with its index; since m062 it is the vector's rowid, with no index beside the table.
# A ranking is of the events' ids (`newer` reads them), as the word index's results are.
EVENTS = _Vectors(
    "event_vectors",
    "row",
    f"SELECT (SELECT count(*) FROM event_vectors WHERE model = {_MODEL}), "
    "(SELECT count(*) FROM events)",
    "SELECT e.row, e.text FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_vectors v "
    f"WHERE v.row = e.row AND v.model = {_MODEL}) ORDER BY e.row DESC LIMIT ?",
    # A vector is replaced by a delete and an insert: the delete moves the count of changes
    # (m052), which is how a process's cached matrix learns of it (its rowid is the event's
    # row since m062, not above every other), and clears the kept rankings (m050's trigger,
    # which REPLACE's own delete would not fire).
    "DELETE FROM event_vectors WHERE row = ?",
    "INSERT INTO event_vectors (row, model, vec) VALUES (?, ?, ?)",
    "SELECT v.rowid, e.id, v.vec FROM event_vectors v JOIN events e "
    f"ON e.row = v.row WHERE v.rowid > ? AND v.model = {_MODEL} ORDER BY v.rowid",
    "SELECT max(row) FROM events",
    "SELECT e.row, e.text FROM events e WHERE e.row > ? AND NOT EXISTS (SELECT 1 FROM "
    f"event_vectors v WHERE v.row = e.row AND v.model = {_MODEL}) ORDER BY e.row LIMIT ?",
    "SELECT e.row, e.text FROM events e WHERE e.row > (SELECT max(row) FROM events) - ? "
    f"AND NOT EXISTS (SELECT 1 FROM event_vectors v WHERE v.row = e.row AND v.model = "
    f"{_MODEL})",
)

# Memory versions, by their row (m040): recall reads the same fusion as the event search.
# Their rowid is the version's row, so a vector replaced in place keeps it: the delete that
# replaces it moves the count of changes (m052), which is how a process's matrix learns of
# it; a version's text never changes but by a purge, whose trigger deletes the vector.
MEMORIES = _Vectors(
    "memory_vectors",
    "row",
    f"SELECT (SELECT count(*) FROM memory_vectors WHERE model = {_MODEL}), "
    "(SELECT count(*) FROM memories)",
    "SELECT m.row, m.text FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v "
    f"WHERE v.row = m.row AND v.model = {_MODEL}) ORDER BY m.row DESC LIMIT ?",
    "DELETE FROM memory_vectors WHERE row = ?",
    "INSERT INTO memory_vectors (row, model, vec) VALUES (?, ?, ?)",
    f"SELECT rowid, row, vec FROM memory_vectors WHERE rowid > ? AND model = {_MODEL} "
    "ORDER BY rowid",
    "SELECT max(row) FROM memories",
    "SELECT m.row, m.text FROM memories m WHERE m.row > ? AND NOT EXISTS (SELECT 1 FROM "
    f"memory_vectors v WHERE v.row = m.row AND v.model = {_MODEL}) ORDER BY m.row LIMIT ?",
    "SELECT m.row, m.text FROM memories m WHERE m.row > (SELECT max(row) FROM memories) - ? "
    f"AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.row = m.row AND v.model = "
    f"{_MODEL})",
)
