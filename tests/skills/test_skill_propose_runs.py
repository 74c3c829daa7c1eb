"""Proposals that run: accidental state becomes parameters only where the step still works,
and the proposed steps are tried in a scratch copy before the candidate is offered.
Through the CLI, with commands that really ran through `agentstate exec`."""

from __future__ import annotations

import os
import tempfile
import tomllib


def _finished_run(cli, goal: str, *commands: list[str]) -> str:
    run = cli.json("run", "start", goal)["run"]["ref"]
    for argv in commands:
        cli.ok("exec", "--", *argv)
    cli.ok("run", "end", run, "--status", "done")
    return run


def test_a_temp_file_becomes_a_step_that_makes_one_and_the_skill_runs(cli, initialised):
    # Unsandboxed: in exec's sandbox /tmp is private, so a file the caller's shell made with
    # `mktemp` is not there to cat (the sandbox's own tests cover that).
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace('sandbox = "auto"', 'sandbox = "none"'))
    fd, scratch = tempfile.mkstemp()  # what `cat $(mktemp)` passed to cat
    os.close(fd)
    run = _finished_run(cli, "Show the notes and a scratch file",
                        ["cat", str(initialised / "README.md")], ["cat", scratch])
    os.unlink(scratch)  # gone, as a temp file is by the time anyone reuses the procedure
    proposal = cli.json("skill", "propose", "--from-run", run, "--name", "show-notes")
    contract = tomllib.loads(
        (initialised / ".agentstate" / "skills" / "show-notes" / "skill.toml").read_text())
    steps = [s["run"] for s in contract["steps"]]
    assert steps[0] == ["cat", "{repo}/README.md"]  # a repo path, {repo}-relative
    assert steps[-1] == ["cat", "{tmp_dir}/scratch1"]   # not `cat {tmp_dir}`: a file
    assert steps[1][-1] == "{tmp_dir}/scratch1" and "touch()" in " ".join(steps[1])
    assert scratch not in str(contract)
    assert [t["status"] for t in proposal["trial"]] == ["exit 0", "exit 0", "exit 0"]
    published = cli.json("skill", "publish", "show-notes")
    assert published["ref"] == "skill:show-notes@v1"
    ran = cli.json("skill", "run", "show-notes")
    assert [s["ok"] for s in ran["steps"]] == [True, True, True]


def test_a_proposal_that_fails_its_own_steps_is_refused_naming_the_step(cli, initialised):
    notes = initialised / "notes.txt"
    notes.write_text("only here during the run\n")
    run = _finished_run(cli, "Read the notes", ["git", "status", "--short"],
                        ["cat", str(notes)])
    notes.unlink()  # the step depended on a file the repository no longer has
    refused = cli("skill", "propose", "--from-run", run, "--name", "read-notes")
    assert refused.exit_code == 3, refused.stderr
    assert "fails its own step 2 (`cat '{repo}/notes.txt'`)" in refused.stderr
    assert "No such file" in refused.stderr and "Traceback" not in refused.stderr
    assert not (initialised / ".agentstate" / "skills" / "read-notes").exists()
    listed = [e["name"] for e in cli.json("skill", "list", "--all")]
    assert "read-notes" not in listed


def test_the_trial_runs_in_a_copy_not_in_the_work_tree(cli, initialised):
    run = _finished_run(cli, "Write a marker file",
                        ["python3", "-c", "open('marker.txt', 'w').write('x')"])
    (initialised / "marker.txt").unlink()
    proposal = cli.json("skill", "propose", "--from-run", run, "--name", "write-marker")
    assert [t["status"] for t in proposal["trial"]] == ["exit 0"]
    assert not (initialised / "marker.txt").exists()  # the copy got it, not the work tree
