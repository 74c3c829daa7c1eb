"""Drift that says what moved: files dirty at the checkpoint are not new, a rewrite names both
heads and the commits that left the branch (never the root), a rename shows old → new, the
count of events since the checkpoint agrees with `events`. Through the CLI."""

from __future__ import annotations

import json

from tests.conftest import git


def _commit(repo, name: str, message: str) -> str:
    (repo / name).write_text(f"{message}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_files_untracked_at_the_checkpoint_are_not_new(cli, initialised):
    cli.ok("run", "start", "goal")
    (initialised / "scratch.txt").write_text("kept aside\n")
    cli.ok("checkpoint", "--note", "scratch file exists")
    (initialised / "later.txt").write_text("new since\n")
    drift = cli.json("resume")["drift"]
    assert [f["path"] for f in drift["files"]] == ["later.txt"]
    assert [f["path"] for f in drift["still"]] == ["scratch.txt"]
    text = cli.ok("resume").stdout
    assert "  - untracked later.txt" in text
    assert "  - untracked scratch.txt" not in text
    assert "1 untracked; 1 still uncommitted as recorded" in text
    assert "still untracked scratch.txt (uncommitted as recorded)" in text


def test_rewritten_history_names_both_heads_and_the_lost_commits(cli, initialised):
    root = git(initialised, "rev-parse", "HEAD").strip()
    _commit(initialised, "c1.txt", "commit one")
    old = _commit(initialised, "c2.txt", "commit two")
    cli.ok("run", "start", "goal")
    cli.ok("checkpoint")
    git(initialised, "reset", "-q", "--hard", "HEAD~1")
    new = _commit(initialised, "c3.txt", "commit three")
    drift = cli.json("resume")["drift"]
    assert drift["history_rewritten"] is True
    assert [c.split(" ", 1)[1] for c in drift["commits"]] == ["commit three"]
    assert [c.split(" ", 1)[1] for c in drift["lost_commits"]] == ["commit two"]
    text = cli.ok("resume").stdout
    assert f"history rewritten: HEAD {old[:12]} → {new[:12]}" in text
    assert "1 commit(s) no longer on it, 1 new commit(s)" in text
    assert "commit no longer on the branch" in text and "commit two" in text
    assert "initial" not in text and root[:7] not in text


def test_a_rename_shows_old_and_new_names(cli, initialised):
    _commit(initialised, "c1.py", "add c1")
    cli.ok("run", "start", "goal")
    cli.ok("checkpoint")
    git(initialised, "mv", "c1.py", "c2.py")
    drift = cli.json("resume")["drift"]
    assert drift["files"] == [{"kind": "renamed", "path": "c2.py", "from": "c1.py"}]
    assert "  - renamed c1.py → c2.py" in cli.ok("resume").stdout


def _listed_after(cli, checkpoint: str) -> list[str]:
    refs = [e["ref"] for e in cli.json("events")]
    return refs[refs.index(checkpoint) + 1:]


def test_events_since_the_checkpoint_agree_with_events(cli, initialised):
    run = cli.json("run", "start", "goal")["run"]["ref"]
    # A record imported with its own (later) time: stored before the checkpoint, listed
    # after it by `events`, which orders by time.
    later = initialised / "later.jsonl"
    later.write_text(json.dumps({"kind": "observation", "text": "from the other machine",
                                 "ts": "2099-01-01T00:00:00Z"}) + "\n")
    cli.ok("import", "jsonl", str(later), "--run", run)
    checkpoint = cli.json("checkpoint", "--note", "half way")["ref"]
    assert len(_listed_after(cli, checkpoint)) == 1
    pack = cli.json("resume")
    assert pack["checkpoint"]["events_since"] == 1
    assert "(1 event(s) since)" in pack["text"]
    cli.ok("log", "observation", "one more thing")
    assert cli.json("resume")["checkpoint"]["events_since"] == len(
        _listed_after(cli, checkpoint)) == 2


def test_hooks_install_help_mentions_post_merge(cli):
    text = cli.ok("hooks", "install", "--help").stdout
    assert "post-merge" in text
