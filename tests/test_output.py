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
