"""bench/sync_import_parts.py, which docs/development.md cites for where a first import's
CPU goes, still runs and accounts for the import: a small folder, real stores."""

from __future__ import annotations

from bench.sync_import_parts import measure


def test_the_import_parts_cover_the_import_and_put_the_statements_and_scans_in_their_place():
    parts, took, floor, per_row = measure(40)
    assert set(parts) == {"sql", "secret scan", "injection check", "folder read and checked",
                          "per-record Python (the rest)"}
    assert took > 0 and floor > 0 and per_row > 0
    # Each counted where it happens: 53 versions were inserted (their statements), each
    # record was scanned, the folder was read; the rest is what is left of the whole.
    for label in ("sql", "secret scan", "injection check", "folder read and checked"):
        assert parts[label] > 0, label
    assert abs(sum(parts.values()) - took) < 1e-9
    import agentstate.sync.fields_scan as fields_scan

    assert fields_scan.find_secrets.__name__ == "find_secrets"  # put back afterwards
