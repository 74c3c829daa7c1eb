"""Forgetting: tombstones, purges that leave no bytes behind, dry runs, bad input."""

from __future__ import annotations

import re
import sqlite3

from tests.memory.test_memory_gate import counts, log, rem, start_run


def raw_bytes(repo) -> bytes:
    root = repo / ".agentstate"
    return b"".join(p.read_bytes() for p in sorted(root.glob("state.db*")))


def test_tombstone_leaves_default_reads_but_keeps_history(cli, initialised):
    stored = rem(cli, "the cache lives in /var/cache/app", "--kind", "fact")
    done = cli.json("forget", stored["ref"], "--reason", "moved to redis")
    assert done["targets"] == [stored["ref"]] and not done["purge"]
    recalled = cli.json("recall", "cache lives")
    assert recalled["matched_nothing"] and recalled["withheld"] == {"forgotten": 1}
    assert cli.json("memory", "list") == []
    assert cli.json("recall", "cache lives", "--include", "forgotten")["hits"][0]["text"] \
        == "the cache lives in /var/cache/app"
    history = cli.json("memory", "history", stored["ref"])
    assert history[-1]["op"] == "forget" and history[-1]["reason"] == "moved to redis"


def test_forgetting_twice_is_an_error_and_changes_nothing(cli, initialised):
    stored = rem(cli, "temporary note", "--kind", "event")
    cli.ok("forget", stored["ref"])
    before = counts(initialised)
    again = cli("forget", stored["ref"], "--json")
    assert again.exit_code == 1
    assert "already forgotten" in again.json()["error"]["message"]
    assert counts(initialised) == before


def test_dry_run_lists_and_changes_nothing(cli, initialised):
    a = rem(cli, "node version is 18", "--kind", "fact", "--key", "node")
    b = rem(cli, "node version is 20", "--kind", "fact", "--key", "node")
    before = counts(initialised)
    plan = cli.json("forget", "--key", "node", "--dry-run")
    assert plan["dry_run"] and sorted(plan["targets"]) == sorted([a["ref"], b["ref"]])
    assert counts(initialised) == before
    assert "would forget 2 version(s)" in cli.ok("forget", "--key", "node", "--dry-run").stdout
    cli.ok("forget", "--key", "node")
    assert cli.json("memory", "list", "--status", "forgotten") != []


def test_forget_by_query_and_by_version(cli, initialised):
    a = rem(cli, "the flaky test is test_upload", "--kind", "fact")
    rem(cli, "the docs are in docs/", "--kind", "fact")
    done = cli.json("forget", "--query", "flaky upload test")
    assert done["targets"] == [a["ref"]]
    v1 = rem(cli, "port 80", "--kind", "fact", "--key", "port")
    rem(cli, "port 8080", "--kind", "fact", "--key", "port")
    assert cli.json("forget", v1["ref"])["targets"] == [v1["ref"]]


def test_bad_forget_requests(cli, initialised):
    assert cli("forget").exit_code == 2
    assert cli("forget", "mem:abcd1234", "--key", "k").exit_code == 2
    assert cli("forget", "mem:abcd1234").exit_code == 1
    assert cli("forget", "run:abcd1234").exit_code == 1
    assert cli("forget", "--key", "nothing-here").exit_code == 1
    assert cli("forget", "--query", "...").exit_code == 1


def test_purge_erases_text_from_file_wal_indexes_and_keeps_an_audit_hash(cli, initialised):
    secret_ish = "the vendor contract number is QX-77-ALPHA-ZULU"
    stored = rem(cli, secret_ish, "--kind", "fact", "--key", "contract")
    rem(cli, "the vendor contract number is QX-78-BRAVO-YANKEE", "--kind", "fact",
        "--key", "contract")
    rem(cli, "unrelated memory stays", "--kind", "fact")
    assert secret_ish.encode() in raw_bytes(initialised)
    done = cli.json("forget", stored["ref"].split("@")[0], "--purge", "--reason", "GDPR")
    assert done["purge"] and done["vacuumed"] and done["wal_truncated"]
    assert done["token_cache_cleared"]
    data = raw_bytes(initialised)
    # The FTS5 indexes hold lower-cased words (and trigrams), so their needles are lower case;
    # the table rows keep the text as typed.
    for needle in (secret_ish, "QX-77-ALPHA-ZULU", "BRAVO-YANKEE", "zulu", "yankee"):
        assert needle.encode() not in data, needle
    assert b"unrelated memory stays" in data
    shown = cli.json("memory", "show", stored["ref"])
    assert all(v["purged"] and v["text"] == "" for v in shown["versions"])
    history = cli.json("memory", "history", stored["ref"].split("@")[0])
    assert [h["op"] for h in history][-2:] == ["purge", "purge"]
    assert history[-1]["reason"] == "GDPR"
    assert re.fullmatch(r"hmac-sha256:[0-9a-f]{64}", history[-1]["text_hash"])
    assert cli.json("recall", "unrelated memory")["hits"]
    assert cli.json("recall", "vendor contract", "--include", "forgotten")["matched_nothing"]
    again = cli("forget", stored["ref"], "--purge")
    assert again.exit_code == 1 and "already purged" in again.stderr
    conn = sqlite3.connect(initialised / ".agentstate" / "state.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_purge_after_tombstone_and_scrubs_events_it_came_from(cli, initialised):
    run = start_run(cli)
    evt = log(cli, "diagnosis", "the outage came from the ZEBRA-GATEWAY certificate expiry",
              "--run", run)
    cli.ok("run", "end", run, "--status", "done")
    accepted = cli.json("run", "distill", run, "--accept")["accepted"]
    ref = accepted[0]["ref"]
    cli.ok("forget", ref)
    done = cli.json("forget", ref, "--purge")
    assert done["scrubbed"] == {"events.text": 1}
    assert b"ZEBRA-GATEWAY" not in raw_bytes(initialised)
    event = cli.json("events", "--run", run)[0]
    assert event["ref"] == evt and event["text"] == "[purged]"


def test_forgetting_a_contested_version_restores_the_current_confidence(cli, initialised):
    old = rem(cli, "the queue is rabbitmq", "--kind", "fact", "--key", "queue")
    new = rem(cli, "the queue is kafka", "--kind", "fact", "--key", "queue",
              "--source", "model", "-e", "user")
    assert new["action"] == "contested"
    lowered = cli.json("memory", "show", old["ref"])["current"]["confidence"]
    assert lowered < old["memory"]["confidence"]
    cli.ok("forget", new["ref"], "--reason", "kafka was a guess")
    restored = cli.json("memory", "show", old["ref"])["current"]["confidence"]
    assert restored == old["memory"]["confidence"]
    hits = cli.json("recall", "queue")["hits"]
    assert [h["ref"] for h in hits] == [old["ref"]] and hits[0]["contested_by"] == []
