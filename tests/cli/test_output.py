"""Human output shows stored text as typed: square brackets are not rich markup."""

from __future__ import annotations

from tests.conftest import run_agentstate


def test_bracketed_text_is_printed_verbatim(initialised):
    goal = "[/] fix [bold]the[/bold] parser"
    started = run_agentstate("run", "start", goal, cwd=initialised)
    assert started.returncode == 0, started.stderr
    assert goal in started.stdout
    note = run_agentstate("log", "note", "[red]x[/]", cwd=initialised)
    assert note.returncode == 0, note.stderr
    shown = run_agentstate("run", "show", cwd=initialised)
    assert goal in shown.stdout and "Traceback" not in shown.stderr
    guess = run_agentstate("remember", "[/] a guess", "--kind", "fact", "--source", "model",
                           cwd=initialised)
    assert guess.returncode == 0, guess.stderr
    ref = guess.stdout.split()[0]
    detail = run_agentstate("memory", "show", ref, cwd=initialised)
    assert detail.returncode == 0 and "[/] a guess" in detail.stdout


TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def test_usage_errors_never_echo_a_secret(initialised):
    bad_value = run_agentstate("recall", "x", "--limit", TOKEN, cwd=initialised)
    assert bad_value.returncode == 2
    assert TOKEN not in bad_value.stdout + bad_value.stderr
    assert "is not a valid int" in bad_value.stderr
    bad_option = run_agentstate("recall", "x", f"--{TOKEN}", cwd=initialised)
    assert bad_option.returncode == 2 and TOKEN not in bad_option.stdout + bad_option.stderr
    as_json = run_agentstate("recall", "x", "--limit", TOKEN, "--json", cwd=initialised)
    assert as_json.returncode == 2 and TOKEN not in as_json.stdout + as_json.stderr
    assert '"code": "usage"' in as_json.stdout


def test_plain_usage_errors_are_one_line_like_our_own(initialised):
    # Click's bad values and agentstate's own checks of a value read the same way.
    for args in (("resume", "--budget", "abc"), ("exec", "--timeout", "abc", "--", "true"),
                 ("context", "--budget", "abc")):
        proc = run_agentstate(*args, cwd=initialised)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert "abc" in proc.stderr and "Usage:" not in proc.stderr
