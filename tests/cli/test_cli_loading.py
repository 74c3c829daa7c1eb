"""`main()` imports only the command modules a command line needs; the table must be true."""

from __future__ import annotations

import subprocess
import sys

from agentstate.cli import ALL_MODULES, COMMAND_MODULES, app, load_commands, modules_for


def _module_of(callback) -> str:
    return getattr(callback, "__wrapped__", callback).__module__.rsplit(".", 1)[-1]


def registered_modules() -> dict[str, set[str]]:
    """Top-level command name → the modules whose functions it runs."""
    load_commands()
    found: dict[str, set[str]] = {}
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        found.setdefault(name, set()).add(_module_of(info.callback))
    for group in app.registered_groups:
        sub = group.typer_instance
        mods = {_module_of(c.callback) for c in sub.registered_commands}
        found.setdefault(group.name, set()).update(mods)
    return found


def test_command_table_matches_registrations():
    actual = registered_modules()
    assert set(actual) == set(COMMAND_MODULES)
    for name, modules in actual.items():
        assert modules <= set(COMMAND_MODULES[name]), name
    assert set(ALL_MODULES) == {m for mods in COMMAND_MODULES.values() for m in mods}


def test_modules_for_skips_root_options():
    assert modules_for(["--dir", "x", "resume"]) == ("runs_cmd",)
    assert modules_for(["--version"]) == ALL_MODULES
    assert modules_for(["nonsense"]) == ALL_MODULES
    assert modules_for(["run", "distill"]) == ("runs_cmd", "memory_cmd")


def test_one_command_does_not_import_the_others(initialised):
    code = (
        "import sys; sys.argv = ['agentstate', 'events']\n"
        "from agentstate.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('agentstate.cli.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=initialised, capture_output=True,
                          text=True, timeout=60)
    loaded = proc.stdout.strip().splitlines()[-1]
    assert "agentstate.cli.runs_cmd" in loaded
    for other in ("skills_cmd", "skill_share_cmd", "context_cmd"):
        assert f"agentstate.cli.{other}" not in loaded


def test_help_lists_every_command(initialised):
    proc = subprocess.run([sys.executable, "-m", "agentstate", "--help"], cwd=initialised,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for name in COMMAND_MODULES:
        assert name in proc.stdout


def test_help_and_plain_reads_import_neither_git_nor_tiktoken(initialised):
    for argv in (["--help"], ["events"], ["run", "list"], ["resume"]):
        code = (
            f"import sys; sys.argv = ['agentstate', *{argv!r}]\n"
            "from agentstate.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in ('git', 'tiktoken', 'sqlite_utils') "
            "if m in sys.modules))"
        )
        proc = subprocess.run([sys.executable, "-c", code], cwd=initialised,
                              capture_output=True, text=True, timeout=60)
        heavy = [line for line in proc.stdout.splitlines() if line.startswith("HEAVY")]
        assert heavy == ["HEAVY []"], (argv, heavy, proc.stderr[-500:])


def test_cli_modules_hold_no_sql():
    """The CLI parses, calls a domain function and renders: queries live with their table's
    owner (docs/architecture.md)."""
    from pathlib import Path

    import agentstate.cli

    folder = Path(agentstate.cli.__file__).parent
    offenders = [path.name for path in sorted(folder.glob("*.py"))
                 if any(marker in path.read_text(encoding="utf-8")
                        for marker in (".conn", ".execute(", "SELECT ", "INSERT ", "UPDATE "))]
    assert offenders == []
