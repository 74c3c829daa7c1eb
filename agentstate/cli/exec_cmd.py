"""`agentstate exec -- CMD [ARGS...]`: run one command through the one tool layer."""

from __future__ import annotations

from typing import Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, RunOption, cli_store, emit


@app.command(
    "exec",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def exec_command(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="The command and its arguments, after `--`.", show_default=False),
    ] = None,
    run: RunOption = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Kill the command after this many seconds "
                                       "(default: [tools] timeout in config.toml)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run a command under the [tools] policy and log it as a `tool` event.

    The command runs without a shell (pipes and `&&` are plain arguments); the program is
    looked up in `[tools] path` in config.toml, not in PATH. Its output streams
    through; the event keeps the command, exit code, duration and a redacted output excerpt.
    Exit code: the command's own exit code; 3 when the policy denies it; 1 when it is not
    found; 124 when it times out. Without an active run only the tool_calls row is written.
    It starts with an allow-listed environment, and under bubblewrap where that is installed
    (`[tools] sandbox`); without a sandbox one line on stderr (or `sandbox_note` in --json)
    says the policy is the only line.
    """
    from agentstate.errors import NotFound, Refused, UsageError
    from agentstate.tools.runner import TIMEOUT_EXIT, run_tool

    argv = list(command or [])
    if not argv or not argv[0].strip():  # `exec -- ""` names no program either
        raise UsageError("no command given (usage: agentstate exec [--run REF] -- CMD [ARGS...])")
    with cli_store() as store:
        result = run_tool(store, argv, run_ref=run, timeout=timeout, echo=not as_json)
    logged = result.event or f"tool call {result.call_id} (no active run, no event)"
    if not result.allowed:
        raise Refused(f"{result.reason}; logged as {logged}",
                      details={"event": result.event, "tool_call": result.call_id})
    if result.not_found:
        raise NotFound(f"{result.reason}; logged as {logged}",
                       details={"event": result.event, "tool_call": result.call_id})
    data = {
        "command": result.argv,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_ms": result.duration_ms,
        "event": result.event,
        "tool_call": result.call_id,
        "run": result.run,
        "stdout": result.stdout if as_json else None,
        "stderr": result.stderr if as_json else None,
        "output_digest": result.output_digest,
        "sandbox": result.sandbox,
        "sandbox_note": result.sandbox_note,
    }
    if as_json:
        emit(data, as_json=True)
    else:
        from agentstate.output import info

        if result.sandbox_note:
            info(f"agentstate: {result.sandbox_note}")
        if result.timed_out:
            info(f"agentstate: {result.reason}; logged as {logged}")
        elif result.event is None:
            info(f"agentstate: no active run; logged as {logged}")
    if result.timed_out:
        raise typer.Exit(TIMEOUT_EXIT)
    raise typer.Exit(result.exit_code or 0)
