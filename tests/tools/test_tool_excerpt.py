"""The one tool-output excerpt, and the failing tool result that `resume` and `context` show.

The story: an agent runs the tests through `agentstate exec`, they fail, the session dies;
the next session's `resume` and `context` show the assertion line with the event's ref.
"""

from __future__ import annotations

import json

import pytest

from agentstate.context.assemble import build_context
from agentstate.context.resume import build_pack
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal
from agentstate.tools.excerpt import EXCERPT_CHARS, excerpt, output_excerpt
from tests.conftest import run_agentstate

PY = "python3"

FAILING_SUITE = """
import sys
for n in range(3000):
    print(f"tests/test_mod.py::test_{n} PASSED")
print("    def test_total():")
print(">       assert total([1, 2]) == 4")
print("E       AssertionError: assert 3 == 4")
for n in range(3000):
    print(f"tests/test_more.py::test_{n} PASSED")
print("FAILED tests/test_mod.py::test_total - AssertionError: assert 3 == 4")
print("1 failed, 6000 passed in 3.2s")
sys.exit(1)
"""

TRACEBACK = "\n".join(
    [f"progress line {n}" for n in range(2000)]
    + ["Traceback (most recent call last):", '  File "app.py", line 3, in <module>',
       "    main()", '  File "app.py", line 2, in main', "    raise ValueError('bad config')",
       "ValueError: bad config"]
    + [f"cleanup line {n}" for n in range(400)]
)


def test_short_output_is_kept_whole_and_redacted():
    assert excerpt("ok\n") == "ok"
    assert excerpt("") == ""
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert token not in excerpt(f"using {token}") and "***" in excerpt(f"using {token}")
    assert output_excerpt("out", "err") == "out\n[stderr]\nerr"


def test_long_output_keeps_failures_and_the_end_within_the_bound():
    text = excerpt(TRACEBACK)
    assert len(text) <= EXCERPT_CHARS
    # The exception line and the traceback's last frame before it, though mid-output.
    assert "    raise ValueError('bad config')\nValueError: bad config" in text
    assert text.splitlines()[-1] == "cleanup line 399"
    assert "progress line 0" in text  # what was run, while room is left
    assert "line(s) omitted" in text
    dots = "\n".join("." * 80 for _ in range(500))
    pytest_like = f"{dots}\nE       assert 3 == 4\n{dots}\n1 failed"
    assert "E       assert 3 == 4" in excerpt(pytest_like)
    one_long_line = "x" * 50_000 + "\nError: it broke"
    cut = excerpt(one_long_line)
    assert len(cut) <= EXCERPT_CHARS and cut.endswith("Error: it broke")


def test_exec_failure_is_shown_by_resume_and_context(initialised, tmp_path):
    # in the repository: the sandbox (on where bubblewrap works) hides the rest of /tmp
    (initialised / "suite.py").write_text(FAILING_SUITE)
    started = run_agentstate("run", "start", "make the totals test pass", "--json",
                             cwd=initialised)
    assert started.returncode == 0, started.stderr
    ran = run_agentstate("exec", "--json", "--", PY, str(initialised / "suite.py"),
                         cwd=initialised)
    assert ran.returncode == 1, ran.stderr
    event = json.loads(ran.stdout)["data"]["event"]
    resume = run_agentstate("resume", cwd=initialised)
    assert resume.returncode == 0, resume.stderr
    text = resume.stdout
    assert "## Failing tool results" in text
    section = text.split("## Failing tool results", 1)[1]
    assert event in section.splitlines()[1]
    assert "E       AssertionError: assert 3 == 4" in section
    assert "1 failed, 6000 passed in 3.2s" in section
    context = run_agentstate("context", "--budget", "4000", cwd=initialised)
    assert context.returncode == 0, context.stderr
    task = context.stdout.split("## Failing tool results", 1)[1]
    assert f"- [{event} · " in task
    assert "E       AssertionError: assert 3 == 4" in task


def _tool(store, run, command, code, excerpt_text=""):
    return append_event(store, run.ref, "tool", f"$ {command} → exit {code} in 0.10s",
                        source="tool:pytest", meta={"exit_code": code, "excerpt": excerpt_text},
                        allow_system_kinds=True)


def test_older_failures_compress_and_a_later_pass_closes_one(store):
    run, _ = start_run(store, "fix the suite")
    old = _tool(store, run, "pytest tests/a.py", 1, "E   assert old")
    fixed = _tool(store, run, "pytest tests/b.py", 2, "E   assert fixed")
    _tool(store, run, "pytest tests/b.py", 0, "ok")
    new = _tool(store, run, "pytest tests/c.py", 1, "E   assert newest")
    pack = build_pack(store, run.ref, principal="owner",
                      drift={"known": False, "since": "test"}, skills=[])
    section = pack.text.split("## Failing tool results", 1)[1].split("\n## ", 1)[0]
    assert [f["ref"] for f in pack.failing_tools] == [new.ref, old.ref]
    assert "E   assert newest" in section and "E   assert old" not in section
    assert old.ref in section and fixed.ref not in section
    assert section.count("\n- ") == 2  # the older failure is one line
    context = build_context(store, run=run.ref, budget=3000, save=False,
                            principal=resolve_principal(store))
    task = context.text.split("## Failing tool results", 1)[1]
    assert "E   assert newest" in task and "E   assert old" not in task
    assert f"- [{old.ref} · " in task and fixed.ref not in task


def test_tight_budget_keeps_the_failure_as_one_line(store):
    run, _ = start_run(store, "fix the suite")
    failing = _tool(store, run, "pytest", 1, "\n".join(f"E   line {n}" for n in range(200)))
    full = build_pack(store, run.ref, principal="owner",
                      drift={"known": False, "since": "test"}, skills=[])
    budget = len(full.pinned_text) // 3 + 60  # room for the one line, not the excerpt
    pack = build_pack(store, run.ref, principal="owner", budget=budget, count=lambda t: len(t) // 3,
                      drift={"known": False, "since": "test"}, skills=[])
    assert failing.ref in pack.text and "E   line 199" not in pack.text
    assert failing.ref in pack.compressed


def test_thousands_of_error_lines_cost_a_scan_of_what_is_kept_only(monkeypatch):
    """Each candidate line is scanned for secrets before it is measured: an output of 4,000
    failures scans about as many lines as the excerpt keeps (not all 4,000), and still keeps
    the latest failures and the summary."""
    from agentstate.tools import excerpt as module

    scanned = []
    real = module.redact_secrets

    def counting(text, **kwargs):
        scanned.append(text)
        return real(text, **kwargs)

    monkeypatch.setattr(module, "redact_secrets", counting)
    lines = [f"FAILED tests/test_x.py::test_{i} - AssertionError: expected {i} got {i + 1}"
             for i in range(4000)]
    text = "\n".join([*lines, "4000 failed in 9.10s"])
    out = module.excerpt(text)
    kept = [line for line in out.splitlines() if not line.startswith("[…")]
    assert "4000 failed in 9.10s" in out and "test_3999 " in out
    assert len(scanned) <= len(kept) + 3, (len(scanned), len(kept))


@pytest.mark.parametrize("secret", [False, True])
def test_a_short_output_is_scanned_once_unless_something_was_masked(monkeypatch, secret):
    """A clean output that fits is scanned once (its redaction found nothing, so a second
    scan would find nothing); one where something was masked is scanned again, and the
    token never survives."""
    from agentstate.tools import excerpt as module

    scanned = []
    real = module.find_secrets

    def counting(text):
        scanned.append(text)
        return real(text)

    monkeypatch.setattr(module, "find_secrets", counting)
    monkeypatch.setattr("agentstate.secret_scan.find_secrets", counting)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "collected 3 items\n" + (f"export GH={token}\n" if secret else "") + "3 passed"
    out = module.excerpt(text)
    assert token not in out and "3 passed" in out
    assert len(scanned) == (3 if secret else 1), scanned
