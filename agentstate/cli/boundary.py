"""The command line's side of the one error boundary (agentstate/error_boundary.py holds
the mapping and the crash log that the MCP server and the hooks share).

Whatever a command raises ends here and leaves as exactly one report:

- our error family (agentstate.errors), and the SQLite/OS failures a user can cause, map to
  their exit code and either one `error: …` line on stderr or, under --json, the error
  envelope on stdout;
- a malformed command line is `usage` (exit 2), its message passed through the secret
  redactor (click quotes the offending value, which may be a token pasted into the wrong
  option);
- Ctrl-C is `interrupted` (exit 130);
- anything else is a bug: `internal` (exit 70), one stderr line naming a crash log that
  holds the traceback (secrets redacted), and the envelope under --json. Never a bare
  traceback.

Whether --json is on is read from the parsed command line: just before a command runs, the
boundary records its click context (`watch`), and the value of its `--json` option is there.
Only a command line that could not be parsed that far (an unknown option, a stray argument)
falls back to looking for the `--json` token.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import typer

from agentstate.error_boundary import PROGRAM, Failure, classify, stdout_gone
from agentstate.errors import AgentStateError, Interrupted, InvalidInput
from agentstate.output import envelope_error, info, print_json

JSON_FLAG = "--json"
DIR_FLAG = "--dir"


@dataclass
class Invocation:
    """One run of the command line: its arguments and, once parsed, the command's context."""

    argv: list[str] = field(default_factory=list)
    context: Any = None  # the leaf command's click context, set just before it runs


_current = Invocation()


def begin(argv: list[str]) -> Invocation:
    """Start a new invocation (the in-process tests run many in one process)."""
    global _current
    _current = Invocation(list(argv))
    return _current


def current() -> Invocation:
    return _current


# ------------------------------------------------------------------ the command line as typed

VERSION_FLAG = "--version"


def global_options_first(argv: list[str]) -> list[str]:
    """Accept the global options on either side of the command: `--dir PATH` and
    `--version` written after it move in front (the root command owns them), `--json`
    written before it, or among its words (`run --json start`), moves behind them (every
    leaf command owns its own). Only agentstate's own arguments are touched: after `--`
    they belong to the program `exec` runs.

    With --version anywhere, a --json before the command is dropped here: the version is
    answered first, in the envelope when the token was given."""
    cut = argv.index("--") if "--" in argv else len(argv)
    own, rest = argv[:cut], argv[cut:]
    command_at = _first_command(own)
    if command_at is None:
        return [a for a in own if a != JSON_FLAG] + rest if VERSION_FLAG in own else argv
    front, moved_json, after = own[:command_at], False, []
    front_globals = [a for a in front if a != JSON_FLAG]
    moved_json = len(front_globals) != len(front)
    tail = own[command_at:]
    index = 0
    while index < len(tail):
        arg = tail[index]
        if arg == DIR_FLAG and index + 1 < len(tail):
            front_globals += tail[index:index + 2]
            index += 2
            continue
        if arg.startswith(DIR_FLAG + "=") or arg == VERSION_FLAG:
            front_globals.append(arg)
        else:
            after.append(arg)
        index += 1
    # Among the command's words (`run --json start GOAL`: between a group and its
    # subcommand, where the group has no --json of its own) the flag moves behind them too.
    # No option precedes it there, so it cannot be an option's value.
    words_end = next((i for i, a in enumerate(after) if a.startswith("-") and a != JSON_FLAG),
                     len(after))
    if JSON_FLAG in after[:words_end]:
        after = [a for a in after[:words_end] if a != JSON_FLAG] + after[words_end:]
        moved_json = True
    if moved_json and VERSION_FLAG not in front_globals:
        # Right after the command's words (`run start GOAL --json …`), before its options,
        # where it cannot become the value of an option that takes one.
        words = next((i for i, a in enumerate(after) if a.startswith("-")), len(after))
        after.insert(words, JSON_FLAG)
    return front_globals + after + rest


def _first_command(own: list[str]) -> int | None:
    """Where the sub-command name is among the root's arguments (skipping --dir's value)."""
    index = 0
    while index < len(own):
        arg = own[index]
        if arg == DIR_FLAG:
            index += 2
            continue
        if not arg.startswith("-"):
            return index
        index += 1
    return None


# ------------------------------------------------------------------ the parsed command line


def option_value(ctx: Any, flag: str) -> tuple[bool, Any]:
    """The parsed value of the option spelled `flag` on ctx's command, as (found, value).

    Looked up by how the user spells it, not by the Python parameter's name. Not found when
    the command has no such option or parsing stopped before reaching it."""
    if ctx is None:
        return False, None
    for param in ctx.command.params:
        if flag in getattr(param, "opts", ()) and param.name in ctx.params:
            return True, ctx.params[param.name]
    return False, None


def command_path(ctx: Any) -> str:
    """The sub-command names of a click context, e.g. `run show` (never the program name,
    which is `python -m agentstate` when run as a module)."""
    parts = []
    while ctx is not None and ctx.parent is not None:
        parts.append(ctx.info_name)
        ctx = ctx.parent
    return " ".join(reversed(parts)) or PROGRAM


def command_name() -> str:
    """The running command's name, for success and error envelopes alike."""
    return command_path(_current.context)


def store_override() -> str | None:
    """--dir (or AGENTSTATE_DIR), as parsed on the root command."""
    ctx = _current.context
    _, value = option_value(ctx.find_root() if ctx is not None else None, DIR_FLAG)
    return value


def json_requested(invocation: Invocation, ctx: Any = None) -> bool:
    """Is --json on? The parsed value when the command line got that far; otherwise (usage
    errors before the option was read) whether the token is among agentstate's own
    arguments (after `--` they belong to the command `exec` runs)."""
    found, value = option_value(ctx if ctx is not None else invocation.context, JSON_FLAG)
    if found:
        return bool(value)
    argv = invocation.argv
    own = argv[: argv.index("--")] if "--" in argv else argv
    return JSON_FLAG in own


# ------------------------------------------------------------------ help text

# What an option's value is, by the option's name; otherwise by its type, else its name.
_METAVARS = {
    "run": "RUN", "resolves": "EVT", "supersedes": "EVT", "evidence": "REF", "meta": "KEY=VALUE",
    "budget": "TOKENS", "timeout": "SECONDS", "as": "PRINCIPAL", "dir": "PATH",
    "ttl": "DURATION", "until": "DATE", "since": "DATE",
}
_TYPE_METAVARS = {"integer": "N", "float": "NUMBER", "path": "PATH", "int": "N"}


def name_metavars(command: Any) -> None:
    """Give every parameter of the click tree a meaningful placeholder in help and usage
    lines: arguments by their name (`KIND TEXT`, `[REF]`), options by what they take
    (`--run RUN`, `--budget TOKENS`, `--meta KEY=VALUE`) instead of `{text}` and `<str>`.
    A metavar a command sets itself is kept."""
    for sub in (getattr(command, "commands", None) or {}).values():
        name_metavars(sub)
    for param in command.params:
        if param.param_type_name == "argument":
            param.make_metavar = _argument_metavar(param)
        elif param.metavar is None and not getattr(param, "is_flag", False) \
                and getattr(param.type, "name", "") != "choice":
            long = max(param.opts, key=len).lstrip("-")
            param.metavar = _METAVARS.get(long) or _TYPE_METAVARS.get(
                getattr(param.type, "name", ""), long.upper().replace("-", "_"))


def _argument_metavar(param: Any) -> Callable[..., str]:
    name = param.metavar or (param.name or "arg").upper()

    def make_metavar(ctx: Any = None, *, usage: bool = False) -> str:
        text = name if param.required or not usage else f"[{name}]"
        return text + ("..." if param.nargs != 1 else "")

    return make_metavar


# ------------------------------------------------------------------ before a command runs


def watch(command: Any) -> None:
    """Have every command of the click tree record its context into the current invocation
    (`begin`) and check its text arguments once click has parsed them and before the command
    touches anything. The tree is built once per process (cli.command_tree) and serves every
    invocation, so the invocation is looked up when the command runs."""
    subcommands = getattr(command, "commands", None)
    if isinstance(subcommands, dict):
        for sub in subcommands.values():
            watch(sub)
        return
    run = command.invoke

    def invoke(ctx: Any) -> Any:
        _current.context = ctx
        reject_undecodable(ctx)
        return run(ctx)

    command.invoke = invoke


def reject_undecodable(ctx: Any) -> None:
    """Text arguments must be UTF-8. Python hands other bytes from argv or the environment
    over as lone surrogates, which SQLite and JSON cannot encode: refuse them here, naming
    the argument, before anything is stored. (Path parameters are not text and may be any
    bytes the file system allows.)"""
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        for item in value if isinstance(value, list | tuple) else (value,):
            label = max(param.opts, key=len) if param.param_type_name == "option" \
                else (param.name or "argument").upper()
            if isinstance(item, str) and not _is_utf8(item):
                raise InvalidInput(f"{label} is not valid UTF-8: {_escaped(item)}",
                                   details={"argument": label})
            if isinstance(item, os.PathLike) and not _is_file_name(item):
                raise InvalidInput(f"{label} is not a file name this system can use: "
                                   f"{_escaped(os.fspath(item))}", details={"argument": label})


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def reject_impossible(argv: list[str]) -> None:
    """An argument holding a surrogate that stands for no byte (`\\ud800`) cannot come from
    a real command line, only from main(argv) called from Python; refuse it before click
    parses it (a path parameter would hand it to the file system)."""
    for position, arg in enumerate(argv, start=1):
        if not _is_file_name(arg):
            raise InvalidInput(f"argument {position} is not valid UTF-8: {_escaped(arg)}",
                               details={"argument": position})


def _is_file_name(path: os.PathLike[str] | str) -> bool:
    """Any bytes the file system allows, but not a surrogate that came from no byte (only
    possible through the Python API, never from a real command line)."""
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    """The argument as the user typed it, undecodable bytes shown as \\xNN."""
    from agentstate.output import shorten

    return "'" + shorten(_bytes_shown(text), 60) + "'"


def _bytes_shown(text: str) -> str:
    """`text` with undecodable bytes (lone surrogates) written out as \\xNN: printable, and
    encodable as UTF-8 for the envelope."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that did not come from a byte
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


# ------------------------------------------------------------------ the boundary


def run(body: Callable[[], Any], invocation: Invocation) -> int:
    """Run `body` (parse and invoke the command line); return the exit code to leave with."""
    try:
        try:
            result = body()
            return result if isinstance(result, int) else 0
        except typer.Exit as exc:
            return exc.exit_code
        except typer.Abort:
            return report(AgentStateError("aborted"), invocation)
        except BrokenPipeError:
            return stdout_gone()
        except _click_exception() as exc:
            return _usage(exc, invocation)
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the point of a boundary
            failure = classify(exc, invocation.argv)
            return _internal(failure, invocation) if failure.bug \
                else report(failure.error, invocation)
    except BrokenPipeError:  # the reader went away while we reported
        return stdout_gone()
    except KeyboardInterrupt:  # a second Ctrl-C while reporting the first
        return Interrupted.exit_code


def report(exc: AgentStateError, invocation: Invocation) -> int:
    """The error envelope on stdout under --json, else one `error:` line on stderr — or,
    when the error lists its `reasons` (a refused publish), the message's first clause and
    each reason on a line of its own."""
    if json_requested(invocation):
        print_json(envelope_error(command_path(invocation.context), exc.code, exc.message,
                                  exc.details))
        return exc.exit_code
    reasons = exc.details.get("reasons") or []
    if reasons and isinstance(reasons, list):
        info(f"error: {exc.message.split(': ', 1)[0]}:")
        for reason in reasons:
            info(f"  - {reason}")
    else:
        info(f"error: {exc.message}")
    return exc.exit_code


def _click_exception() -> type[Exception]:
    """click's ClickException, the base of every usage error, reached through the public
    `typer.BadParameter`: Typer >= 0.25 raises its own vendored copy of click's exceptions,
    older Typer raises click's, and neither exports the base class itself."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _usage(exc: Any, invocation: Invocation) -> int:
    """A command line click could not accept: its own form on stderr, or the envelope."""
    from agentstate.secret_scan import redact_secrets

    # click quotes the offending argument, which may hold bytes that are not UTF-8.
    exc.message = redact_secrets(_bytes_shown(exc.message))
    ctx = getattr(exc, "ctx", None)
    if json_requested(invocation, ctx):
        code = "usage" if exc.exit_code == 2 else "error"
        print_json(envelope_error(command_path(ctx), code, redact_secrets(exc.format_message())))
    else:
        # One line, like every other error (agentstate's own checks of a value say
        # `error: --budget must be …` with the same exit code 2), naming where help is.
        message = " ".join(redact_secrets(exc.format_message()).split())
        where = f"{PROGRAM} {command_path(ctx)}" if ctx is not None and ctx.parent else PROGRAM
        info(f"error: {message} (see `{where} --help`)")
    return exc.exit_code


def _internal(failure: Failure, invocation: Invocation) -> int:
    """A bug: the traceback is in the crash log (error_boundary), the user gets one line
    naming it — on stderr always; under --json stdout still carries exactly one envelope."""
    error = failure.error
    info(f"error: {error.message}")
    if json_requested(invocation):
        print_json(envelope_error(command_path(invocation.context), error.code, error.message,
                                  error.details))
    return error.exit_code
