"""Any input, no traceback: hostile JSON lines are rejected one by one, stored fields have
caps, `-` reads text from stdin under the same UTF-8 rule, and imports hold the write lock
only for their inserts."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from agentstate.store import db as store_db
from agentstate.store.limits import (
    MAX_GOAL_CHARS,
    MAX_META_CHARS,
    MAX_NOTE_CHARS,
    MAX_REASON_CHARS,
)

HOSTILE = [
    ("depth", "[" * 2000 + "]" * 2000),
    ("deep meta", json.dumps({"kind": "note", "text": "deep",
                              "meta": {"a": json.loads("[" * 40 + "]" * 40)}})),
    ("big int", '{"kind": "note", "text": "n", "meta": {"n": ' + "9" * 4300 + "}}"),
    ("huge int", '{"kind": "note", "text": "n", "meta": {"n": ' + "9" * 5000 + "}}"),
    ("surrogate", '{"kind": "note", "text": "bad \\ud800 text"}'),
    ("surrogate key", '{"kind": "note", "text": "k", "meta": {"\\udc80": 1}}'),
    ("nan", '{"kind": "note", "text": "n", "meta": {"x": NaN}}'),
    ("infinity", '{"kind": "note", "text": "n", "meta": {"x": -Infinity}}'),
]


def test_import_rejects_hostile_lines_one_by_one(cli, initialised):
    path = initialised / "hostile.jsonl"
    good = json.dumps({"kind": "note", "text": "kept"})
    with path.open("wb") as handle:
        handle.write((good + "\n").encode())
        for _, line in HOSTILE:
            handle.write(line.encode("utf-8", "surrogatepass") + b"\n")
        handle.write(b'{"kind": "note", "text": "bad \xff byte"}\n')
        handle.write((good.replace("kept", "kept too") + "\n").encode())
    result = cli("import", "jsonl", str(path), "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    data = result.json()["data"]
    assert (data["imported"], data["malformed"]) == (2, len(HOSTILE) + 1), data
    reasons = {r["line"]: r["reason"] for r in data["rejected"]}
    assert "nested deeper" in reasons[2] and "nested deeper" in reasons[3]
    assert "integer beyond" in reasons[4] and "integer too long" in reasons[5]
    assert "surrogate" in reasons[6] and "surrogate" in reasons[7]
    assert "not a JSON number" in reasons[8] and "not a JSON number" in reasons[9]
    assert "UTF-8" in reasons[10]
    # Everything printed afterwards is strict JSON (no NaN).
    events = cli("events", "--json")
    json.loads(events.stdout, parse_constant=lambda name: pytest.fail(name))


def test_import_strict_names_the_hostile_line(cli, initialised):
    path = initialised / "nan.jsonl"
    path.write_text('{"kind": "note", "text": "ok"}\n' + HOSTILE[6][1] + "\n")
    result = cli("import", "jsonl", str(path), "--strict")
    assert result.exit_code == 1 and result.stderr.startswith("error: line 2:")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, needle", [
    (("run", "start", "g" * 130_000), f"the goal is 130,000 characters; the limit is "
                                      f"{MAX_GOAL_CHARS:,}"),
    (("run", "start", "goal", "-c", "c" * 5_000), "a constraint is 5,000"),
    (("log", "note", "x", "--meta", "k=" + "v" * MAX_META_CHARS), "the event meta is"),
    (("log", "constraint", "c" * 5_000), "the constraint text is 5,000"),
    (("checkpoint", "--note", "n" * (MAX_NOTE_CHARS + 1)), "the checkpoint note is"),
    (("remember", "x", "-k", "fact", "--key", "k" * 600), "the key is 600"),
    (("log", "note", "x", "--source", "tool:" + "t" * 600), "the source is"),
    (("context", "--query", "q " * 1_500), "--query is 3,000"),
])
def test_every_stored_field_has_a_cap(cli, initialised, args, needle):
    if args[0] != "run":
        cli.ok("run", "start", "goal")
    result = cli(*args)
    assert result.exit_code == 1, (args[:2], result.stderr[:300])
    assert result.stderr.startswith("error: ") and needle in result.stderr, result.stderr[:300]



def test_a_skill_description_over_the_cap_is_refused(cli, initialised):
    result = cli("skill", "new", "wordy", "--description", "d" * 1_500)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr == ("error: the description is 1,500 characters; the limit is 1,024 "
                             "(the Agent Skills rule for `description`)\n"), result.stderr
    assert not (initialised / ".agentstate" / "skills" / "wordy").exists()
    cli.ok("skill", "new", "wordy", "--description", "d" * 1_024)  # at the cap: fine


def test_a_reason_over_the_cap_is_refused_and_changes_nothing(cli, initialised):
    cli.ok("run", "start", "goal")
    ref = cli.json("remember", "CI uses make test", "-k", "fact", "--key", "ci")["ref"]
    long = "r" * (MAX_REASON_CHARS + 1)
    needle = f"the reason is {MAX_REASON_CHARS + 1:,} characters; the limit is {MAX_REASON_CHARS:,}"
    for args in (("forget", ref, "--reason", long),
                 ("forget", "--key", "ci", "--reason", long, "--purge"),
                 ("memory", "correct", ref, "CI uses tox", "--reason", long)):
        result = cli(*args)
        assert result.exit_code == 1 and result.stderr == f"error: {needle}\n", result.stderr
    shown = cli.json("memory", "show", ref)
    assert [v["status"] for v in shown["versions"]] == ["active"]
    assert cli.json("forget", ref, "--reason", "r" * MAX_REASON_CHARS)["targets"] == [ref]
    revoked = cli("skill", "revoke", "verify-tests", "--reason", long)
    assert revoked.exit_code == 1 and needle in revoked.stderr
    listed = {s["name"]: s["status"] for s in cli.json("skill", "list")}
    assert listed["verify-tests"] == "published"

def test_a_long_goal_cannot_wedge_resume(cli, initialised):
    assert cli("run", "start", "g" * 130_000).exit_code == 1
    cli.ok("run", "start", "word " * (MAX_GOAL_CHARS // 5))
    assert cli("resume", "--budget", "8000").exit_code == 0


def test_dash_reads_text_from_stdin(cli, initialised):
    cli.ok("run", "start", "goal")
    long_text = "line of output\n" * 6_000  # no shell quoting, no history, up to the cap
    event = cli.json("log", "note", "-", input=long_text)
    assert event["text"] == long_text.strip()
    memory = cli.json("remember", "-", "-k", "preference", input="tabs, not spaces\n")
    assert memory["memory"]["text"] == "tabs, not spaces"
    checkpoint = cli.json("checkpoint", "--note", "-", input="half way there")
    assert checkpoint["note"] == "half way there"


def test_undecodable_stdin_is_refused_like_an_argument(initialised):
    from tests.conftest import run_agentstate

    assert run_agentstate("run", "start", "goal", cwd=initialised).returncode == 0
    proc = subprocess.run([sys.executable, "-m", "agentstate", "log", "note", "-"],
                          cwd=initialised, input=b"ok \xff", capture_output=True)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.decode() == "error: TEXT from stdin is not valid UTF-8 (byte 4)\n"


def test_a_writer_is_not_blocked_while_an_import_scans(cli, initialised, monkeypatch):
    """The import's checks (the secret scanner above all) run outside its write
    transaction: pause the scanner mid-import and a concurrent `log note` still succeeds."""
    import agentstate.runs.import_record as import_record
    import agentstate.safety as safety
    from agentstate.runs.importer import import_events

    cli.ok("run", "start", "goal")
    scanning, released = threading.Event(), threading.Event()
    real = safety.refuse_secrets

    def slow_scan(text, what="text"):
        if text == "record 4":  # a record of the second batch of three
            scanning.set()
            released.wait(20)
        return real(text, what)

    monkeypatch.setattr(import_record, "refuse_secrets", slow_scan)
    monkeypatch.setattr(safety, "refuse_secrets", slow_scan)
    failures = []

    def run_import() -> None:
        try:
            store = store_db.open_store(initialised)
            try:
                import_events(store, [{"kind": "note", "text": f"record {i}"} for i in range(9)],
                              goal="imported", batch_size=3)
            finally:
                store.close()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    worker = threading.Thread(target=run_import)
    worker.start()
    try:
        assert scanning.wait(20)
        monkeypatch.setattr(store_db, "BUSY_TIMEOUT_MS", 300)  # fail fast if locked out
        result = cli("log", "note", "written during the import")
    finally:
        released.set()
        worker.join(30)
    assert result.exit_code == 0, result.stderr
    assert not failures


def test_a_non_finite_number_stored_earlier_still_prints_as_json(cli, initialised):
    import sqlite3

    cli.ok("run", "start", "goal")
    ref = cli.json("log", "note", "old")["ref"]
    db = sqlite3.connect(initialised / ".agentstate" / "state.db")
    with db:
        db.execute("UPDATE events SET meta = ? WHERE id = ?", ('{"x": NaN}', ref[4:]))
    db.close()
    out = cli.ok("events", "--json").stdout
    [event] = json.loads(out, parse_constant=lambda name: pytest.fail(name))["data"]
    assert event["meta"] == {"x": "nan"}
