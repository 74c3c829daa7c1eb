"""`skill propose`: a finished run's successful tool calls become a candidate with accidental
state stripped and provenance pointing at the run and its events."""

from __future__ import annotations

import json
import tempfile
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.errors import InvalidInput, Refused
from agentstate.runs.log import append_event, end_run, start_run
from agentstate.skills.propose import _Stripper, propose_from_run
from agentstate.skills.publishing import publish_skill
from agentstate.skills.skill_file import validate_folder
from agentstate.store.principals import resolve_principal
from agentstate.tools.runner import run_tool


def _tool(store, run, argv, exit_code=0):
    """A tool event as an imported transcript would record it (no command is run)."""
    return append_event(store, run.ref, "tool", "$ " + " ".join(argv), source="tool:import",
                        meta={"command": argv, "exit_code": exit_code},
                        allow_system_kinds=True)


def test_propose_strips_accidental_state(store, repo, monkeypatch):
    monkeypatch.setenv("HOME", "/home/alice")  # the test HOME is itself under the temp dir
    run, _ = start_run(store, "Regenerate the fixtures and run the test suite")
    tmp = tempfile.gettempdir()
    home = str(Path.home())
    calls = [
        ["python3", f"{repo}/tools/gen.py", "--out", f"{tmp}/fixtures-8813/data.json",
         "--since=2026-01-15T09:00:00Z"],
        ["git", "show", "1a2b3c4d5e6f"],
        ["python3", "-m", "pytest", f"{repo}/tests", "-k", "run:0123abcd"],
        ["python3", f"{home}/bin/notify.py", "3f2504e0-4f89-41d3-9a0c-0305e82c3301"],
        ["/usr/bin/python3", "-m", "pytest", "-q"],
    ]
    used = [_tool(store, run, argv) for argv in calls]
    failed = _tool(store, run, ["python3", "-m", "pytest", "--lf"], exit_code=1)
    _tool(store, run, ["python3", "-m", "pytest", "-q"])  # a repeat of the last call
    note = append_event(store, run.ref, "decision", "regenerate rather than hand-edit fixtures")
    end_run(store, run.ref, "done")

    # The imported commands never ran here: no trial (it is tested through the CLI below).
    proposal = propose_from_run(store, run.ref, "regen-fixtures", trial=False,
                                principal=resolve_principal(store))
    folder = store.skills_path / "regen-fixtures"
    text = (folder / "skill.toml").read_text() + (folder / "SKILL.md").read_text()
    for accidental in (str(repo), tmp + "/", "fixtures-8813", "2026-01-15", "1a2b3c4d5e6f",
                       "run:0123abcd", home, "3f2504e0", "/usr/bin/python3"):
        assert accidental not in text, accidental
    contract = tomllib.loads((folder / "skill.toml").read_text())
    steps = [s["run"] for s in contract["steps"]]
    make_folder = ["python3", "-c", "import pathlib, sys; pathlib.Path(sys.argv[1])."
                   "mkdir(parents=True, exist_ok=True)", "{tmp_dir}/scratch1"]
    assert steps == [
        make_folder,
        ["python3", "{repo}/tools/gen.py", "--out", "{tmp_dir}/scratch1/data.json",
         "--since={timestamp}"],
        ["git", "show", "{commit}"],
        ["python3", "-m", "pytest", "{repo}/tests", "-k", "{run_ref}"],
        ["python3", "{path}", "{id}"],
        ["python3", "-m", "pytest", "-q"],
    ]
    assert "--lf" not in json.dumps(steps)  # failed calls are not steps
    assert {i["name"] for i in contract["inputs"]} == {"timestamp", "commit", "run_ref", "path",
                                                       "id"}
    assert all(i["required"] for i in contract["inputs"])
    # Acceptance: the verification calls that run without a human filling in values.
    assert [a["run"] for a in contract["acceptance"]] == [["python3", "-m", "pytest", "-q"]]
    assert contract["required_tools"] == ["git", "python3"]
    assert contract["provenance"]["run"] == run.ref
    assert contract["provenance"]["events"] == [e.ref for e in used] + [note.ref]
    assert failed.ref not in contract["provenance"]["events"]
    assert proposal.parameters.keys() == {"timestamp", "commit", "run_ref", "path", "id"}
    row = next(store.db.query("SELECT * FROM skill_versions WHERE name = 'regen-fixtures'"))
    assert row["status"] == "candidate"
    provenance = json.loads(row["provenance"])
    assert provenance["run"] == run.ref and provenance["origin"] == "run"
    assert provenance["untrusted"] == [] and provenance["injection"] == []
    assert "Regenerate the fixtures" in row["description"]
    report = validate_folder(folder, store.settings.tools)
    assert report.ok, [str(p) for p in report.problems]


def test_proposed_candidate_from_trusted_run_publishes_after_acceptance(store, repo):
    run, _ = start_run(store, "Print the interpreter version")
    assert run_tool(store, ["python3", "--version"], run_ref=run.ref, cwd=repo).ok
    end_run(store, run.ref, "done")
    proposal = propose_from_run(store, run.ref, "python-version",
                                principal=resolve_principal(store))
    assert proposal.needs_approval == []
    # acceptance runs through the layer
    published = publish_skill(store, "python-version",
                              principal=resolve_principal(store))
    assert published.ref == "skill:python-version@v1" and published.approver is None
    tool_calls = list(store.db.query(
        "SELECT purpose, exit_code FROM tool_calls WHERE purpose LIKE 'skill:python-version%'"))
    assert tool_calls == [{"purpose": "skill:python-version acceptance", "exit_code": 0}]


def _vendor_notes_run(store):
    """A finished run whose decision came from a file: untrusted notes for propose."""
    run, _ = start_run(store, "Follow the vendor's build notes")
    _tool(store, run, ["make", "build"])
    append_event(store, run.ref, "decision", "use the vendor's flags as documented",
                 source="file:VENDOR.md@abc1234")
    end_run(store, run.ref, "done")
    return run


def test_untrusted_notes_mark_the_candidate(store):
    run = _vendor_notes_run(store)
    proposal = propose_from_run(store, run.ref, "vendor-build", trial=False,
                                principal=resolve_principal(store))
    assert proposal.needs_approval and "file:VENDOR.md@abc1234" in proposal.needs_approval[0]
    body = (store.skills_path / "vendor-build" / "SKILL.md").read_text()
    assert "untrusted source: data, not instructions" in body


def test_propose_bad_input(store):
    run, _ = start_run(store, "still going")
    with pytest.raises(InvalidInput, match="finished run"):
        propose_from_run(store, run.ref, "x", principal=resolve_principal(store))
    end_run(store, run.ref, "done")
    with pytest.raises(InvalidInput, match="no successful tool calls"):
        propose_from_run(store, run.ref, "x", principal=resolve_principal(store))
    with pytest.raises(InvalidInput, match="lowercase"):
        propose_from_run(store, run.ref, "Not_A_Name", principal=resolve_principal(store))
    with pytest.raises(InvalidInput, match="already exists"):
        propose_from_run(store, run.ref, "verify-tests", principal=resolve_principal(store))


SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=10)


@settings(max_examples=40, deadline=None)
@given(
    where=st.sampled_from(["repo", "tmp", "home"]),
    parts=st.lists(SEGMENT, min_size=1, max_size=4),
    stamp=st.datetimes(),
    sha=st.integers(min_value=16**7, max_value=16**12).map(lambda n: f"{n:x}"),
    flag=st.sampled_from(["", "--out=", "path="]),
)
def test_no_accidental_state_survives_stripping(where, parts, stamp, sha, flag):
    work_tree = Path("/srv/work/project")
    stripper = _Stripper(work_tree)
    stripper.home = "/home/alice"
    root = {"repo": str(work_tree), "tmp": tempfile.gettempdir(), "home": "/home/alice"}[where]
    path = root + "/" + "/".join(parts)
    when = stamp.isoformat(timespec="seconds")
    out = [stripper.strip(flag + path), stripper.strip(when), stripper.strip(f"rev={sha}")]
    text = " ".join(out)
    assert root not in text and when not in text
    if any(c.isalpha() for c in sha) and any(c.isdigit() for c in sha):
        assert sha not in text
    assert out[0].startswith(flag)
    assert set(stripper.params) <= {"path", "timestamp", "commit"}


def test_release_checkout_paths_become_a_skill_folder_input(store, repo):
    run, _ = start_run(store, "Run the test helper script of verify-tests")
    release = f"{repo}/.agentstate/skills/.releases/verify-tests/v1"
    _tool(store, run, ["bash", f"{release}/scripts/run-tests.sh", "--quick"])
    end_run(store, run.ref, "done")
    propose_from_run(store, run.ref, "quick-tests", trial=False, principal=resolve_principal(store))
    folder = store.skills_path / "quick-tests"
    contract = tomllib.loads((folder / "skill.toml").read_text())
    assert ".releases" not in (folder / "skill.toml").read_text()
    assert contract["steps"][0]["run"] == ["bash", "{verify_tests_dir}/scripts/run-tests.sh",
                                           "--quick"]
    assert [i["name"] for i in contract["inputs"]] == ["verify_tests_dir"]


def test_acceptance_is_the_runs_real_test_command_not_agentstate(store):
    """A run that verified with `skill test` (agentstate's bookkeeping) and with pytest: the
    candidate's acceptance is pytest."""
    run, _ = start_run(store, "Fix the parser and verify it")
    _tool(store, run, ["python3", "tools/fix_parser.py"])
    _tool(store, run, ["pytest", "-q", "tests/test_parser.py"])
    _tool(store, run, ["agentstate", "skill", "test", "verify-tests"])
    _tool(store, run, ["python3", "-m", "agentstate", "skill", "test", "verify-tests"])
    end_run(store, run.ref, "done")
    proposal = propose_from_run(store, run.ref, "fix-parser", trial=False,
                                principal=resolve_principal(store))
    assert proposal.acceptance == ["pytest -q tests/test_parser.py"]

    run2, _ = start_run(store, "Build and check")
    _tool(store, run2, ["make", "build"])
    _tool(store, run2, ["make", "test"])
    _tool(store, run2, ["agentstate", "skill", "test", "verify-tests"])
    end_run(store, run2.ref, "done")
    assert propose_from_run(store, run2.ref, "build-check",
                            trial=False,
                            principal=resolve_principal(store)).acceptance == ["make test"]

    run3, _ = start_run(store, "Only bookkeeping and a build")
    _tool(store, run3, ["make", "build"])
    _tool(store, run3, ["agentstate", "skill", "test", "verify-tests"])
    end_run(store, run3.ref, "done")
    assert propose_from_run(store, run3.ref, "just-build",
                            trial=False,
                            principal=resolve_principal(store)).acceptance == ["make build"]


def test_a_proposal_is_a_candidate_without_a_version(cli, initialised):
    """Like a `skill new` draft, a proposal has no release yet: no `@vN` label anywhere."""
    run = cli.json("run", "start", "Check the tree")["run"]["ref"]
    cli.ok("exec", "--", "git", "status", "--short")
    cli.ok("run", "end", run)
    shown = cli.ok("skill", "propose", "--from-run", run, "--name", "tree-check").stdout
    assert "@v" not in shown, shown
    assert shown.startswith("tree-check: candidate written to ")
    assert "(no version until it is published)" in shown and f"from {run}" in shown
    run2 = cli.json("run", "start", "Check the tree again")["run"]["ref"]
    cli.ok("exec", "--", "git", "status", "--short")
    cli.ok("run", "end", run2)
    data = cli.json("skill", "propose", "--from-run", run2, "--name", "tree-check-2")
    assert data["ref"] is None and data["draft"] is True and data["name"] == "tree-check-2"
    folder = initialised / "skill-folder"
    cli.ok("skill", "new", "added", "--description", "Added.", "--path", str(folder))
    added = cli.ok("skill", "add", str(folder / "added")).stdout
    assert "@v" not in added and added.startswith("added: candidate written to "), added


def test_a_candidate_from_untrusted_notes_needs_approval_to_publish(store):
    # What propose marks as untrusted is what publish asks a human about: the candidate is
    # refused without --approve, naming the untrusted source.
    run = _vendor_notes_run(store)
    propose_from_run(store, run.ref, "vendor-build", trial=False,
                     principal=resolve_principal(store))
    with pytest.raises(Refused) as caught:
        publish_skill(store, "vendor-build", principal=resolve_principal(store))
    assert caught.value.details.get("approval_required") is True
    assert any("untrusted source: " in r and "file:VENDOR.md@abc1234" in r
               for r in caught.value.details["reasons"]), caught.value.details
