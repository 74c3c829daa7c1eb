"""The interrupted-task story: yesterday's session died; today's `resume` picks it up."""

from __future__ import annotations

import json

import pytest

from tests.conftest import git, run_agentstate


def _ref(cli, *args: str) -> str:
    return cli.json(*args)["ref"]


@pytest.fixture
def story(cli, initialised):
    """A run with every kind of state, checkpointed, then 'interrupted'."""
    refs = {}
    refs["run"] = cli.json(
        "run", "start", "fix the flaky date parser test",
        "-c", "do not change the public API", "-c", "stay on Python 3.11",
    )["run"]["ref"]
    refs["obs"] = _ref(cli, "log", "observation", "test_parse_date fails 1 run in 5",
                       "--source", "tool:pytest")
    refs["hyp"] = _ref(cli, "log", "hypothesis", "a race in the parser cache")
    refs["hyp2"] = _ref(cli, "log", "hypothesis", "the timezone database is stale")
    refs["diag"] = _ref(cli, "log", "diagnosis", "the cache key ignores the locale",
                        "--resolves", refs["hyp"])
    refs["decision"] = _ref(cli, "log", "decision", "include the locale in the cache key")
    refs["q_open"] = _ref(cli, "log", "question", "does CI run with a different locale?")
    refs["q_done"] = _ref(cli, "log", "question", "is the cache shared between threads?")
    refs["answer"] = _ref(cli, "log", "answer", "no, it is per thread",
                          "--resolves", refs["q_done"])
    refs["verify"] = _ref(cli, "log", "verify", "run test_parse_date 50 times under de_DE")
    refs["verify_done"] = _ref(cli, "log", "verify", "unit tests pass")
    refs["verified"] = _ref(cli, "log", "verified", "42 passed",
                            "--resolves", refs["verify_done"])
    refs["checkpoint"] = cli.json("checkpoint", "--note", "fix written, not yet verified")["ref"]
    return refs


def test_resume_shows_the_working_state(cli, story, initialised):
    proc = run_agentstate("resume", cwd=initialised)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "fix the flaky date parser test" in text
    assert "do not change the public API" in text and "stay on Python 3.11" in text
    assert "the cache key ignores the locale" in text
    assert "run test_parse_date 50 times under de_DE" in text
    assert "does CI run with a different locale?" in text
    assert "fix written, not yet verified" in text
    # Settled things are not listed as open/pending.
    assert "is the cache shared between threads?" not in text
    assert "unit tests pass" not in text
    # The confirmed hypothesis is gone; the other is shown, and only as UNCONFIRMED.
    assert "a race in the parser cache" not in text
    hyp_lines = [line for line in text.splitlines() if "timezone database" in line]
    assert hyp_lines == [f"- {story['hyp2']} UNCONFIRMED: the timezone database is stale"]
    hyp_section = text.index("## Unconfirmed hypotheses")
    assert text.index("timezone database") > hyp_section
    assert text.index("## Confirmed diagnoses") < hyp_section
    # Recent events are refs with a gist, not the transcript.
    assert story["decision"] in text
    assert "no drift" in text


def test_resume_json_is_structured(cli, story):
    pack = cli.json("resume")
    assert pack["goal"] == "fix the flaky date parser test"
    assert pack["run"]["ref"] == story["run"]
    assert [c["text"] for c in pack["constraints"]] == ["do not change the public API",
                                                        "stay on Python 3.11"]
    assert [d["ref"] for d in pack["diagnoses"]] == [story["diag"]]
    assert [h["ref"] for h in pack["hypotheses"]] == [story["hyp2"]]
    assert [q["ref"] for q in pack["open_questions"]] == [story["q_open"]]
    assert [v["ref"] for v in pack["pending_verifications"]] == [story["verify"]]
    assert pack["checkpoint"]["ref"] == story["checkpoint"]
    assert pack["checkpoint"]["note"] == "fix written, not yet verified"
    assert pack["drift"]["any"] is False
    recent = [e["ref"] for e in pack["recent_events"]]
    assert story["decision"] in recent and story["obs"] in recent
    # Things in their own sections are not repeated as recent events.
    assert story["diag"] not in recent and story["checkpoint"] not in recent
    assert pack["text"].startswith(f"# Resume {story['run']}")


def test_drift_after_a_new_commit(cli, story, initialised):
    (initialised / "parser.py").write_text("cache = {}\n")
    git(initialised, "add", "parser.py")
    git(initialised, "commit", "-q", "-m", "parser: key the cache by locale")
    pack = cli.json("resume")
    drift = pack["drift"]
    assert drift["head_moved"] is True and drift["uncommitted"] == "unchanged"
    assert len(drift["commits"]) == 1 and drift["commits"][0].endswith(
        "parser: key the cache by locale")
    assert drift["since"] == f"checkpoint {story['checkpoint']}"
    assert "HEAD moved" in pack["text"] and "parser: key the cache by locale" in pack["text"]


def test_drift_after_an_uncommitted_edit(cli, story, initialised):
    (initialised / "README.md").write_text("edited\n")
    drift = cli.json("resume")["drift"]
    assert drift["head_moved"] is False
    assert drift["uncommitted"] == "appeared" and drift["changed_files"] == ["README.md"]
    cli.ok("checkpoint", "--note", "edit recorded")
    assert cli.json("resume")["drift"]["any"] is False  # the checkpoint is the new baseline
    (initialised / "README.md").write_text("edited again\n")
    drift = cli.json("resume")["drift"]
    assert drift["uncommitted"] == "changed"
    text = cli.ok("resume").stdout
    assert "uncommitted changes changed" in text and "README.md" in text
    git(initialised, "checkout", "README.md")
    assert cli.json("resume")["drift"]["uncommitted"] == "cleaned"


def test_drift_without_checkpoint_is_since_run_start(cli, initialised):
    cli.ok("run", "start", "goal")
    (initialised / "new.txt").write_text("x")
    drift = cli.json("resume")["drift"]
    assert drift["since"].startswith("run start")
    assert drift["uncommitted"] == "appeared" and drift["changed_files"] == ["new.txt"]


def test_resume_picks_the_current_run_or_the_named_one(cli, initialised):
    old = cli.json("run", "start", "old goal")["run"]["ref"]
    new = cli.json("run", "start", "new goal")["run"]["ref"]
    assert cli.json("resume")["run"]["ref"] == new
    cli.ok("run", "end", new)
    # the current run ended: no other run takes over, but resume names the active one
    after = cli("resume")
    assert after.exit_code == 1 and f"still active, not current: {old}" in after.stderr
    assert cli.json("resume", old)["run"]["ref"] == old
    pack = cli.json("resume", new)
    assert pack["run"]["ref"] == new and pack["run"]["status"] == "done"
    cli.ok("run", "end", old)
    result = cli("resume")
    assert result.exit_code == 1 and "no unfinished run" in result.stderr


def test_recent_events_count_comes_from_config(cli, initialised):
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("recent_events = 12", "recent_events = 3"))
    cli.ok("run", "start", "goal")
    for i in range(10):
        cli.ok("log", "note", f"note {i}")
    recent = cli.json("resume")["recent_events"]
    assert [e["gist"] for e in recent] == ["note 7", "note 8", "note 9"]


def test_resume_lists_matching_published_skills(cli, story, initialised, store):
    store.db["skill_versions"].insert({
        "name": "verify-flaky-test", "version": 2, "status": "published",
        "description": "Run a flaky test many times to verify a fix",
        "triggers": json.dumps(["flaky test", "verify fix"]), "created": store.now(),
    })
    store.db["skill_versions"].insert({
        "name": "write-changelog", "version": 1, "status": "published",
        "description": "Draft release notes", "triggers": "[]", "created": store.now(),
    })
    pack = cli.json("resume")
    names = [s["name"] for s in pack["skills"]]
    assert "verify-flaky-test" in names and "write-changelog" not in names
    assert pack["skills"][0]["ref"] == "skill:verify-flaky-test@v2"
    assert "skill:verify-flaky-test@v2" in pack["text"]


def test_drift_names_new_and_no_longer_dirty_files(cli, initialised):
    cli.ok("run", "start", "goal")
    (initialised / "fix.py").write_text("x = 1\n")
    cli.ok("checkpoint", "--note", "fix written")
    git(initialised, "add", "fix.py")
    git(initialised, "commit", "-q", "-m", "add the fix")
    (initialised / "notes.md").write_text("later\n")
    text = cli.ok("resume").stdout
    assert "HEAD moved to" in text and "  - commit " in text and "add the fix" in text
    assert "  - untracked notes.md" in text
    assert "  - no longer uncommitted (committed or reverted) fix.py" in text


def test_drift_reports_rewritten_history(cli, initialised):
    cli.ok("run", "start", "goal")
    (initialised / "a.txt").write_text("a\n")
    git(initialised, "add", "a.txt")
    git(initialised, "commit", "-q", "-m", "first try")
    cli.ok("checkpoint")
    git(initialised, "commit", "-q", "--amend", "-m", "first try, amended")
    drift = cli.json("resume")["drift"]
    assert drift["head_moved"] and drift["history_rewritten"]
    assert "history rewritten" in cli.ok("resume").stdout


def test_resume_outside_git_says_drift_is_unknown(tmp_path, monkeypatch):
    from tests.conftest import Cli

    monkeypatch.chdir(tmp_path)
    cli = Cli()
    cli.ok("init")
    cli.ok("run", "start", "no git here")
    pack = cli.json("resume")
    assert pack["drift"]["known"] is False
    assert "unknown (not a git work tree)" in pack["text"]


def test_failed_verification_is_listed_once(cli, initialised):
    cli.ok("run", "start", "goal")
    v = _ref(cli, "log", "verify", "the tests pass")
    f = _ref(cli, "log", "failed", "3 tests fail", "--resolves", v, "--source", "tool:pytest")
    pack = cli.json("resume")
    assert [i["ref"] for i in pack["failed_verifications"]] == [f]
    assert pack["failed_verifications"][0]["about"] == v
    assert pack["pending_verifications"] == []
    assert f not in [e["ref"] for e in pack["recent_events"]]
    assert pack["text"].count(f) == 1
    assert "## Failed verifications" in pack["text"]


@pytest.mark.parametrize("value", ['"x"', "-1", "2.5"])
def test_bad_recent_events_setting_is_a_clear_error(cli, initialised, value):
    cli.ok("run", "start", "goal")
    config = initialised / ".agentstate" / "config.toml"
    text = config.read_text()
    assert "\nrecent_events = 12\n" in text
    config.write_text(text.replace("\nrecent_events = 12\n", f"\nrecent_events = {value}\n"))
    proc = run_agentstate("resume", cwd=initialised)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "[resume] recent_events" in proc.stderr


def test_drift_to_a_detached_head_says_so(cli, story, initialised):
    git(initialised, "checkout", "-q", "--detach")
    text = cli.ok("resume").stdout
    assert "branch changed: main → (detached HEAD)" in text
    assert "None" not in text
