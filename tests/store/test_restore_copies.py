"""`restore --force` keeps a bounded number of replaced stores ([retention]
keep_restore_copies), says where they are and what they weigh; `doctor` reports their size
and `doctor --repair` trims them to the bound."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentstate.maintenance.restore import _aside_order


def _set_keep(repo: Path, n: int) -> None:
    config = repo / ".agentstate" / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "# keep_restore_copies = 2" in text
    config.write_text(text.replace("# keep_restore_copies = 2", f"keep_restore_copies = {n}"),
                      encoding="utf-8")


def _restore(cli, backup: Path, second: int, note: str) -> dict:
    cli.ok("log", "observation", note)  # each replaced store differs from the others
    return cli.json("restore", str(backup), "--force",
                    env={"AGENTSTATE_NOW": f"2026-03-01T10:00:{second:02d}Z"})


def _kept(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / ".agentstate").glob("before-restore-*"))


def _notes(aside: Path) -> list[str]:
    with sqlite3.connect(aside / "state.db") as conn:
        return [r[0] for r in conn.execute("SELECT text FROM events ORDER BY ts")]


def test_only_the_newest_replaced_stores_are_kept_and_reported(initialised, cli, tmp_path):
    cli.ok("run", "start", "copies")
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    first = _restore(cli, tmp_path / "b.tar.gz", 1, "before the first restore")
    assert [Path(c["path"]).name for c in first["aside_copies"]] == _kept(initialised)
    assert first["removed_aside"] == []
    _restore(cli, tmp_path / "b.tar.gz", 2, "before the second restore")
    third = _restore(cli, tmp_path / "b.tar.gz", 3, "before the third restore")
    # The default bound is two: the oldest replaced store is gone, the newest two remain.
    assert _kept(initialised) == ["before-restore-20260301T100002",
                                  "before-restore-20260301T100003"]
    assert [Path(p).name for p in third["removed_aside"]] == ["before-restore-20260301T100001"]
    assert third["kept_aside"] == str(initialised / ".agentstate" /
                                      "before-restore-20260301T100003")
    assert "before the third restore" in _notes(Path(third["kept_aside"]))
    copies = third["aside_copies"]
    assert [Path(c["path"]).name for c in copies] == _kept(initialised)
    db_bytes = (Path(copies[-1]["path"]) / "state.db").stat().st_size
    assert all(c["bytes"] > db_bytes > 0 for c in copies)  # the database and the rest

    out = cli.ok("restore", str(tmp_path / "b.tar.gz"), "--force",
                 env={"AGENTSTATE_NOW": "2026-03-01T10:00:04Z"}).stdout
    assert "removed an older replaced store: " in out and "T100002" in out
    assert "replaced stores kept: 2" in out and " MB in all" in out


def test_keep_zero_keeps_no_replaced_store(initialised, cli, tmp_path):
    cli.ok("run", "start", "copies")
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    _set_keep(initialised, 0)
    data = _restore(cli, tmp_path / "b.tar.gz", 1, "gone after the restore")
    assert data["kept_aside"] is None and data["aside_copies"] == []
    assert len(data["removed_aside"]) == 1 and _kept(initialised) == []


def test_doctor_reports_the_size_and_repair_trims_to_the_bound(initialised, cli, tmp_path):
    cli.ok("run", "start", "copies")
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))

    def check() -> dict:
        report = cli("doctor", "--json").json()
        [found] = [c for c in report["data"]["checks"] if c["name"] == "restore-copies"]
        return found

    assert check()["status"] == "ok" and check()["data"]["copies"] == []
    _restore(cli, tmp_path / "b.tar.gz", 1, "one")
    last = _restore(cli, tmp_path / "b.tar.gz", 2, "two")
    found = check()
    assert found["status"] == "ok" and found["data"]["keep"] == 2
    assert found["data"]["bytes"] == sum(c["bytes"] for c in last["aside_copies"]) > 0
    assert "2 replaced store(s)" in found["detail"] and "MB" in found["detail"]
    assert "before-restore-20260301T100001/" in found["detail"]
    _set_keep(initialised, 1)  # a tighter bound than the copies already kept
    assert check()["status"] == "warn" and "doctor --repair" in check()["detail"]
    cli.ok("doctor", "--repair")
    assert _kept(initialised) == ["before-restore-20260301T100002"]
    assert check()["status"] == "ok"


def test_copies_made_in_one_second_are_ordered_by_their_number():
    names = ["before-restore-20260301T100000-10", "before-restore-20260301T100000-9",
             "before-restore-20260301T100000", "before-restore-20260228T235959-3"]
    assert sorted(names, key=lambda n: _aside_order(Path(n))) == [
        "before-restore-20260228T235959-3", "before-restore-20260301T100000",
        "before-restore-20260301T100000-9", "before-restore-20260301T100000-10"]
