"""Bad shared files: one clear line, the convention's exit code, nothing applied."""

from __future__ import annotations

import json

from agentstate.sync.records import canonical, make_record, record_id


def _shared(repo):
    folder = repo / ".agentstate" / "shared"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _fact(text, **over):
    fields = dict(kind="fact", key=None, scope="repo", text=text, source="user",
                  principal="owner", created="2026-01-01T00:00:00.000000Z", valid_until=None,
                  parent=None, rel=None, held=None)
    fields.update(over)
    return make_record("memory", **fields)


def _write(folder, name, lines):
    (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _memories(cli):
    return [m["text"] for m in cli.json("memory", "list", "--status", "all")]


def test_invalid_json_names_file_and_line_and_applies_nothing(cli, initialised):
    folder = _shared(initialised)
    good = _fact("the api gateway runs on port 8080")
    _write(folder, "memories.jsonl", [good.line, '{"v": 1, "type": "memory", "id": '])
    result = cli("sync", "--import-only")
    assert result.exit_code == 1
    assert ".agentstate/shared/memories.jsonl line 2: not valid JSON" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert _memories(cli) == []  # the good line 1 was not applied either


def test_a_conflict_marker_says_how_to_avoid_it(cli, initialised):
    folder = _shared(initialised)
    _write(folder, "memories.jsonl", ["<<<<<<< HEAD", _fact("x is y").line])
    result = cli("sync", "--json")
    assert result.exit_code == 1
    assert "merge=union" in result.json()["error"]["message"]


def test_unknown_format_version(cli, initialised):
    folder = _shared(initialised)
    data = dict(_fact("the cache lives in redis").data, v=7)
    data["id"] = record_id(data)
    _write(folder, "memories.jsonl", [canonical(data)])
    result = cli("sync", "--json")
    assert result.exit_code == 1
    error = result.json()["error"]
    assert error["code"] == "invalid_input"
    assert "format version 7" in error["message"] and "line 1" in error["message"]


def test_duplicate_ids_with_different_content_name_both_lines(cli, initialised):
    folder = _shared(initialised)
    good = _fact("deploys go through the release branch")
    edited = dict(good.data, text="deploys go straight to main")
    _write(folder, "memories.jsonl", [good.line, canonical(edited)])
    result = cli("sync")
    assert result.exit_code == 1
    assert "line 2" in result.stderr and "different content" in result.stderr
    assert "line 1" in result.stderr
    assert _memories(cli) == []


def test_a_field_this_agentstate_does_not_know_is_refused_by_name(cli, initialised):
    """A line with an extra field (its id computed over it, so only the field is wrong) is
    refused naming the field, for a memory and an evidence record alike."""
    folder = _shared(initialised)
    fact = _fact("the build cache lives on the second disk")
    for name, data in (("memories.jsonl", dict(fact.data, note="added by hand")),
                       ("evidence.jsonl", dict(make_record("evidence", memory=fact.id,
                                                           ref="user").data, weight=2))):
        del data["id"]
        data["id"] = record_id(data)
        _write(folder, "memories.jsonl", [fact.line] if name == "evidence.jsonl" else [])
        _write(folder, name, [canonical(data)])
        result = cli("sync", "--json")
        assert result.exit_code == 1
        message = result.json()["error"]["message"]
        extra = "note" if name == "memories.jsonl" else "weight"
        assert f"unknown field(s) {extra}" in message and f"{name} line 1" in message
        (folder / name).unlink()
    assert _memories(cli) == []


def test_a_hand_edited_record_no_longer_matches_its_id(cli, initialised):
    folder = _shared(initialised)
    edited = dict(_fact("logs rotate daily").data, text="logs rotate weekly")
    _write(folder, "memories.jsonl", [canonical(edited)])
    result = cli("sync")
    assert result.exit_code == 1 and "does not match the record's content" in result.stderr


def test_a_user_scope_record_is_refused(cli, initialised):
    folder = _shared(initialised)
    _write(folder, "memories.jsonl", [_fact("my own note", scope="user").line])
    result = cli("sync")
    assert result.exit_code == 1 and "not shareable" in result.stderr


def test_a_tombstone_for_an_unknown_memory_waits_and_wins_later(cli, initialised):
    folder = _shared(initialised)
    record = _fact("the nightly job starts at 02:00")
    _write(folder, "tombstones.jsonl", [make_record("forget", target=record.id).line])
    first = cli.json("sync", "--import-only")
    assert first["pending_tombstones"] == 1 and first["imported"] == 0
    # The record arrives later (another teammate's older export): it stays gone.
    _write(folder, "memories.jsonl", [record.line])
    second = cli.json("sync", "--import-only")
    assert second["imported"] == 0
    assert "the nightly job starts at 02:00" not in _memories(cli)


def test_a_tombstoned_record_forgets_the_same_fact_written_here(cli, initialised):
    cli.ok("remember", "the nightly job starts at 02:00", "--kind", "fact", "--source", "tool:cron")
    folder = _shared(initialised)
    record = _fact("The nightly job starts at 02:00.")  # same fact, other teammate
    _write(folder, "memories.jsonl", [record.line])
    _write(folder, "tombstones.jsonl", [make_record("forget", target=record.id).line])
    assert cli.json("sync", "--import-only")["tombstoned"] == 1
    assert cli.json("recall", "nightly job")["hits"] == []


def test_a_tombstone_leaves_what_the_user_stated_here(cli, initialised):
    """The same tombstone does not forget the fact when the user stated it here: a line in
    the shared folder is anyone's word (docs/security.md, "Principals and authority")."""
    cli.ok("remember", "the nightly job starts at 02:00", "--kind", "fact", "--source", "user")
    folder = _shared(initialised)
    record = _fact("The nightly job starts at 02:00.")
    _write(folder, "memories.jsonl", [record.line])
    _write(folder, "tombstones.jsonl", [make_record("forget", target=record.id).line])
    assert cli.json("sync", "--import-only")["tombstoned"] == 0
    assert len(cli.json("recall", "nightly job")["hits"]) == 1


def test_secrets_are_never_written_to_or_read_from_the_shared_folder(cli, initialised, store):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    # A memory that got past an older scanner: inserted directly, as an old store holds it.
    store.conn.execute(
        "INSERT INTO memories (id, version, kind, scope, text, norm_hash, source, status, "
        "confidence, created, last_confirmed, principal) VALUES ('oldsecret1', 1, 'fact', "
        "'repo', ?, 'h', 'user', 'active', 0.9, '2026-01-01', '2026-01-01', 'owner')",
        (f"the ci token is {token}",))
    folder = _shared(initialised)
    _write(folder, "memories.jsonl", [_fact(f"deploy token {token}").line])
    result = cli.json("sync")
    assert result["skipped"] == 2 and result["exported"] == 0 and result["imported"] == 0
    reasons = " ".join(item["reason"] for item in result["skipped_items"])
    assert "secret" in reasons and token not in json.dumps(result)
    assert token not in (folder / "memories.jsonl").read_text().replace(
        _fact(f"deploy token {token}").line, "")


def test_export_only_and_import_only_together_is_a_usage_error(cli, initialised):
    assert cli("sync", "--export-only", "--import-only").exit_code == 2


def test_dry_run_changes_nothing(cli, initialised):
    cli.ok("remember", "the queue is rabbitmq", "--kind", "fact", "--source", "user")
    folder = _shared(initialised)
    _write(folder, "memories.jsonl", [_fact("the cache is redis").line])
    before = (folder / "memories.jsonl").read_text()
    data = cli.json("sync", "--dry-run")
    assert data["exported"] == 1 and data["imported"] == 1
    assert (folder / "memories.jsonl").read_text() == before
    assert "the cache is redis" not in _memories(cli)


def test_a_teammates_replacement_leaves_what_the_user_stated_here(cli, initialised):
    """A teammate's record that says it supersedes a value the user stated here, with the
    same authority (`user`), is imported beside it; the user's own word stays current (a line
    in the shared folder is anyone's word, as for tombstones above)."""
    cli.ok("remember", "the cache is redis", "--kind", "fact", "--source", "user")
    cli.ok("sync", "--export-only")
    folder = _shared(initialised)
    exported = [json.loads(line) for line in (folder / "memories.jsonl").read_text().splitlines()]
    mine = next(r for r in exported if r.get("text") == "the cache is redis")
    newer = _fact("the cache is memcached", parent=mine["id"], rel="supersedes",
                  created="2026-02-01T00:00:00.000000Z")
    with (folder / "memories.jsonl").open("a", encoding="utf-8") as out:
        out.write(newer.line + "\n")
    assert cli.json("sync", "--import-only")["imported"] == 1
    statuses = {m["text"]: m["status"] for m in cli.json("memory", "list", "--status", "all")}
    assert statuses["the cache is redis"] in ("active", "contested"), statuses
    assert "the cache is memcached" in statuses


def test_evidence_refs_are_scanned_unless_agentstate_made_them(cli, initialised, store):
    """A first export skips the scan of evidence lines whose ref is `user` or an evt: id
    (nothing in them was written by a person); a file: ref is a path someone wrote and is
    scanned like the memory line."""
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    cli.ok("remember", "the parser accepts tabs", "--kind", "fact", "--source", "user")
    row = store.value("SELECT row FROM memories WHERE text = 'the parser accepts tabs'")
    store.conn.execute(  # as an older version of agentstate could have stored it
        "INSERT INTO memory_evidence (memory_row, ref, kind, added, actor) VALUES "
        "(?, ?, 'file', '2026-01-01', 'owner')", (row, f"file:keys/{token}.txt@abc1234"))
    result = cli.json("sync", "--export-only")
    assert result["exported"] == 1 and result["exported_evidence"] == 1
    assert [item["what"].split()[0] for item in result["skipped_items"]] == ["evidence"]
    written = (_shared(initialised) / "evidence.jsonl").read_text()
    assert '"ref":"user"' in written and token not in written


def test_an_agent_importing_never_adds_the_users_word_as_evidence(cli, initialised):
    # A teammate's evidence line `user` vouches for a fact with the user's authority: an
    # import run by a principal that may not claim `user` (the agent) leaves it out.
    folder = _shared(initialised)
    fact = _fact("the staging database is rebuilt nightly", source="model",
                 principal="agent")
    vouch = make_record("evidence", memory=fact.id, ref="user")
    _write(folder, "memories.jsonl", [fact.line])
    _write(folder, "evidence.jsonl", [vouch.line])
    cli.ok("sync", "--import-only", env={"AGENTSTATE_PRINCIPAL": "agent"})
    [memory] = cli.json("memory", "list", "--status", "all")
    assert memory["text"] == "the staging database is rebuilt nightly"
    assert "user" not in [e["ref"] for e in memory["evidence"]]
    # Pulled again, the record is mapped here: its evidence goes through the evidence pass
    # (not the batch of new versions), which leaves the ref out too.
    cli.ok("sync", "--import-only", env={"AGENTSTATE_PRINCIPAL": "agent"})
    [memory] = cli.json("memory", "list", "--status", "all")
    assert "user" not in [e["ref"] for e in memory["evidence"]]
    # The owner importing the same folder does take it.
    cli.ok("sync", "--import-only")
    [memory] = cli.json("memory", "list", "--status", "all")
    assert "user" in [e["ref"] for e in memory["evidence"]]


def test_a_teammates_preference_arrives_as_a_candidate(cli, initialised):
    # Only the local user pins a preference: an imported one waits for `memory confirm
    # --evidence user`, however the record names its source.
    folder = _shared(initialised)
    _write(folder, "memories.jsonl", [_fact("I like four-space indents", kind="preference").line])
    cli.ok("sync", "--import-only")
    [memory] = cli.json("memory", "list", "--status", "all")
    assert (memory["kind"], memory["status"]) == ("preference", "candidate")
    assert cli.json("recall", "four-space indents")["hits"] == []


def test_each_record_is_judged_by_its_own_scope_and_source(cli, initialised):
    # The import keeps one verdict a (scope, source) pair: records that share a scope but not
    # a source are judged apart, whichever comes first — the agent's own words arrive, the
    # ones claiming the user's do not.
    folder = _shared(initialised)
    claims = [_fact(f"the agent saw build step {n} pass", source="model", principal="agent")
              for n in range(4)]
    claims += [_fact(f"the user said step {n} is optional", source="user", principal="agent")
               for n in range(4)]
    _write(folder, "memories.jsonl", [record.line for record in claims])
    result = cli("sync", "--import-only", env={"AGENTSTATE_PRINCIPAL": "agent"})
    assert result.exit_code == 0, result.stderr
    assert "may not claim source 'user'" in result.stdout + result.stderr
    assert sorted(_memories(cli)) == sorted(f"the agent saw build step {n} pass"
                                            for n in range(4))
