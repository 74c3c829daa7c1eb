"""What a command really runs, so that policy rules cannot be dodged by spelling.

Two jobs, both pure functions of an argv:

- `layers(argv)`: a command and every command it starts through a known wrapper
  (`env`, `nice`, `timeout`, `nohup`, `sudo`, `busybox`, `xargs`, `uv run`, `npm exec`,
  `sh -c '…'` …). `env -i nice -n5 timeout 9 busybox rm -rf /` yields the four wrappers and
  `rm -rf /`; each is checked against the deny rules. A wrapper whose options cannot be read
  raises `Unreadable` (the caller refuses: it cannot tell what would run).
- `normalise(program, args, cwd)`: a canonical spelling of the arguments for programs whose
  options can be reordered and merged (today `rm`): `rm -r -f /`, `rm -fr /`,
  `rm --recursive --force -- //` all become `-f -r /`, so one deny rule covers them.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

from agentstate.tools.getopt import Spec, Unreadable, parse, spec

__all__ = ["STARTERS", "UNKNOWN_CWD", "Layer", "Unreadable", "layers", "normalise", "program_name",
           "split_shell"]


def program_name(argv0: str) -> str:
    """The program's name as policy rules see it (a path's last component)."""
    return os.path.basename(argv0.rstrip("/")) or argv0


@dataclass(frozen=True)
class Layer:
    argv: list[str]
    open_ended: bool = False  # more arguments arrive at run time (xargs reads them from stdin)
    via: str = ""  # the wrapper that starts it ("" for the command itself)
    shell: bool = False  # a simple command found in a shell string (best effort)
    # The directory it runs in, when a wrapper or a shell's `cd` moved it (None: the caller's
    # working directory). UNKNOWN_CWD when it cannot be known (`cd "$X"`).
    cwd: str | None = None


# Where a command runs when a shell's `cd` names a directory agentstate cannot read: judged as
# if from `/`, the worst case for the rules that compare paths (`rm -rf .` is `rm -rf /`).
UNKNOWN_CWD = "/"

# Wrapper options (GNU getopt_long's rules: see tools/getopt.py).
_WRAPPERS: dict[str, Spec] = {
    "env": spec(flags="ignore-environment null debug list-signal-handling help version",
                values="unset chdir split-string",
                optional="default-signal ignore-signal block-signal",
                short={"i": "ignore-environment", "0": "null", "u": "unset", "C": "chdir",
                       "S": "split-string", "v": "debug"}),
    "nice": spec(flags="help version", values="adjustment", short={"n": "adjustment"}),
    "timeout": spec(flags="preserve-status foreground verbose help version",
                    values="signal kill-after",
                    short={"s": "signal", "k": "kill-after", "v": "verbose"}),
    "nohup": spec(flags="help version"),
    "sudo": spec(flags="askpass background set-home login remove-timestamp reset-timestamp "
                       "non-interactive preserve-groups stdin shell bell no-update -E",
                 values="user group close-from chdir host prompt role type command-timeout "
                        "other-user",
                 optional="preserve-env",
                 short={"u": "user", "g": "group", "C": "close-from", "D": "chdir",
                        "h": "host", "p": "prompt", "r": "role", "t": "type",
                        "T": "command-timeout", "U": "other-user", "A": "askpass",
                        "b": "background", "E": "-E", "H": "set-home", "i": "login",
                        "K": "remove-timestamp", "k": "reset-timestamp", "n": "non-interactive",
                        "P": "preserve-groups", "S": "stdin", "s": "shell", "B": "bell",
                        "N": "no-update"}),
    "doas": spec(flags="-n -s", values="-u -C",
                 short={"u": "-u", "C": "-C", "n": "-n", "s": "-s"}),
    "stdbuf": spec(flags="help version", values="input output error",
                   short={"i": "input", "o": "output", "e": "error"}),
    "ionice": spec(flags="ignore help version", values="class classdata",
                   short={"c": "class", "n": "classdata", "t": "ignore"}),
    "setsid": spec(flags="ctty fork wait help version",
                   short={"c": "ctty", "f": "fork", "w": "wait"}),
    "time": spec(flags="append portability verbose quiet help version", values="format output",
                 short={"f": "format", "o": "output", "a": "append", "p": "portability",
                        "v": "verbose", "q": "quiet"}),
    "xargs": spec(flags="null interactive no-run-if-empty verbose exit open-tty show-limits "
                        "help version -0",
                  values="arg-file delimiter max-args max-procs max-chars process-slot-var "
                         "-E -I -L",
                  optional="eof replace max-lines",
                  short={"a": "arg-file", "d": "delimiter", "E": "-E", "I": "-I", "L": "-L",
                         "n": "max-args", "P": "max-procs", "s": "max-chars", "0": "null",
                         "p": "interactive", "r": "no-run-if-empty", "t": "verbose",
                         "x": "exit", "o": "open-tty", "e": "eof", "i": "replace",
                         "l": "max-lines"}),
    "chrt": spec(flags="all-tasks batch deadline ext fifo idle other rr reset-on-fork verbose "
                       "help version",
                 values="sched-runtime sched-period sched-deadline",
                 short={"a": "all-tasks", "b": "batch", "d": "deadline", "e": "ext",
                        "f": "fifo", "i": "idle", "o": "other", "r": "rr",
                        "R": "reset-on-fork", "v": "verbose", "T": "sched-runtime",
                        "P": "sched-period", "D": "sched-deadline"}),
    "taskset": spec(flags="all-tasks cpu-list help version",
                    short={"a": "all-tasks", "c": "cpu-list"}),
}
# Options that move the command to another directory.
_CHDIR = {"env": "chdir", "sudo": "chdir"}
# Multi-call binaries: the next word is the program.
_MULTICALL = {"busybox", "toybox"}
# Shells whose `-c STRING` is split into simple commands (best effort: see split_shell).
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"}
# Programs that start other programs named in their arguments: given arguments that only
# exist at run time (xargs), what they would start cannot be known.
STARTERS = frozenset(_WRAPPERS) | _MULTICALL | _SHELLS | {"uv", "uvx", "npm", "npx", "tox"}
# Positional words a wrapper takes before the command (timeout's DURATION, chrt's PRIORITY,
# taskset's MASK).
_LEADING_POSITIONALS = {"timeout": 1, "chrt": 1, "taskset": 1}
# `uv run` and friends: options that take a value (the rest are flags).
_UV_RUN_VALUES = {"--with", "--with-editable", "--with-requirements", "--python", "-p",
                  "--env-file", "--directory", "--project", "--package", "--extra", "--group",
                  "--index", "--default-index", "--index-url", "--extra-index-url",
                  "--find-links", "-f", "--cache-dir", "--config-file", "--from",
                  "--only-group", "--no-group", "--no-extra", "--resolution", "--prerelease",
                  "--exclude-newer", "--link-mode", "--python-platform", "--color",
                  "--refresh-package", "--reinstall-package", "--upgrade-package", "-P",
                  "--no-binary-package", "--no-build-package", "--keyring-provider",
                  "--allow-insecure-host", "--index-strategy", "-C", "--config-setting"}
_NPM_EXEC_VALUES = {"--package", "-p", "--workspace", "-w"}


def _split_option(word: str, values: set[str]) -> tuple[str, bool]:
    """(option name, takes the next word as its value)."""
    if word.startswith("--"):
        name, eq, _ = word.partition("=")
        return name, name in values and not eq
    return word, False


def _moved(cwd: str | None, where: str) -> str:
    """The directory `cd where` reaches from `cwd` (None: the caller's directory, unknown
    here, so a relative move from it stays relative and is resolved by the caller)."""
    if where.startswith("/"):
        return os.path.normpath("/" + where.lstrip("/"))
    if cwd is None:
        return os.path.normpath(where)
    return os.path.normpath(os.path.join(cwd, where))


def _env_string(text: str) -> list[str]:
    """`env -S STRING` split as GNU env would. Its escapes (`\\c`, `\\_`…) and `${VAR}`
    differ from a shell's; a string that uses them is refused rather than guessed at."""
    if "\\" in text or "$" in text:
        raise Unreadable(f"env -S string {text!r} uses escapes or variables agentstate does "
                         "not read")
    return _shlex(text)


def _wrapper(name: str, args: list[str], cwd: str | None) -> tuple[list[str], str | None, str]:
    """The command a wrapper starts, the directory it starts it in, and (xargs) the string
    that input replaces in it ("" when none)."""
    spec_ = _WRAPPERS[name]
    if name == "nice" and args and args[0][1:].lstrip("-").isdigit() \
            and args[0].startswith("-"):  # nice -10, nice --5
        args = args[1:]
    replace = ""
    env_dash = "ignore-environment" if name == "env" else None
    found, start = parse(name, args, spec_, dash_alone=env_dash)
    while name == "env":
        split = next((k for k, o in enumerate(found) if o.name == "split-string"), None)
        if split is None:
            break
        # GNU env splits the string and reads its words as if given in its place: options
        # in it count (`env -S'-C / rm -rf .'`). What came before it still applies.
        for option in found[:split]:
            if option.name == "chdir" and option.value is not None:
                cwd = _moved(cwd, option.value)
        args = _env_string(found[split].value or "") + args[found[split].end:]
        found, start = parse(name, args, spec_, dash_alone=env_dash)
    for option in found:
        if option.name == _CHDIR.get(name) and option.value is not None:
            cwd = _moved(cwd, option.value)
        if name == "xargs" and option.name in ("-I", "replace"):
            replace = option.value or "{}"
    rest = args[start:]
    if name == "env":
        while rest and "=" in rest[0] and not rest[0].startswith("="):
            rest = rest[1:]
    rest = rest[_LEADING_POSITIONALS.get(name, 0):]
    return rest, cwd, replace


def _shlex(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise Unreadable(f"cannot split {text!r} into words ({exc})") from None


def split_shell(script: str, cwd: str | None = None) -> list[tuple[list[str], str | None]]:
    """The simple commands of a shell string, split at `;`, `&&`, `||`, `|`, `&`, newlines
    and parentheses, each with the directory it runs in (`cd DIR` moves the commands after
    it, except in a pipeline, a background job or a subshell). Best effort: variables,
    `eval`, command substitution and here-documents are not followed (an allowed shell can
    run anything; see docs/security.md); a `cd` to a directory written with them makes the
    directory unknown (UNKNOWN_CWD)."""
    lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise Unreadable(f"cannot split the shell string {script!r} ({exc})") from None
    out: list[tuple[list[str], str | None]] = []
    stack: list[str | None] = []
    words: list[str] = []
    before = cwd  # where the current command started (a `cd` in a pipeline does not last)

    def finish() -> None:
        nonlocal cwd, words
        current = words
        while current and "=" in current[0] and not current[0].startswith("="):
            current = current[1:]  # VAR=value prefixes
        if current and current[0] in ("exec", "command", "builtin", "then", "do", "else", "!"):
            current = current[1:]
        if current and current[0] in ("cd", "pushd"):
            target = [w for w in current[1:] if not w.startswith("-")]
            cwd = (_moved(cwd, target[0]) if target and not set(target[0]) & set("$`~")
                   else UNKNOWN_CWD)
        elif current:
            out.append((current, cwd))
        words = []

    for token in tokens:
        if token and set(token) <= set(";&|()"):
            finish()
            # The lexer groups neighbouring punctuation (`);`, `)&&`): read each operator.
            for operator in re.findall(r"&&|\|\||\|&|[;&|()]", token):
                if operator in ("|", "&", "|&"):
                    cwd = before  # the command ran in a subshell of its own
                elif operator == "(":
                    stack.append(cwd)
                elif operator == ")":
                    cwd = stack.pop() if stack else cwd
                before = cwd
        elif token and set(token) <= set("<>"):
            continue
        else:
            words.append(token)
    finish()
    return out


def _inner(argv: list[str], cwd: str | None
           ) -> tuple[list[tuple[list[str], str | None]], bool, bool]:
    """The commands `argv` starts directly, each with its directory: (commands, open_ended,
    from_shell)."""
    name = program_name(argv[0])
    args = argv[1:]
    if name in _MULTICALL:
        return ([(args, cwd)] if args and not args[0].startswith("-") else []), False, False
    if name in _SHELLS:
        return _shell_inner(args, cwd)
    if name in _WRAPPERS:
        rest, where, replace = _wrapper(name, args, cwd)
        if name == "xargs" and rest and replace and replace in rest[0]:
            raise Unreadable(f"xargs -I {replace}: the program itself would come from its "
                             "input")
        return ([(rest, where)] if rest else []), name == "xargs", False
    if name in ("uv", "uvx"):
        return _uv_inner(name, args, cwd)
    if name in ("npm", "npx"):
        return _npm_inner(name, args, cwd)
    if name == "tox" and args[:1] == ["exec"] and "--" in args:
        rest = args[args.index("--") + 1:]
        return ([(rest, cwd)] if rest else []), False, False
    return [], False, False


_Inner = tuple[list[tuple[list[str], str | None]], bool, bool]  # what _inner returns


def _shell_inner(args: list[str], cwd: str | None) -> _Inner:
    """`sh -c STRING` (or a bundle holding c): the commands of the string."""
    for i, word in enumerate(args):
        if word == "-c" or (word.startswith("-") and not word.startswith("--")
                            and "c" in word[1:]):
            return (split_shell(args[i + 1], cwd) if i + 1 < len(args) else []), False, True
        if not word.startswith("-"):
            break
    return [], False, False


def _after_options(words: list[str], takes_value: tuple[str, ...],
                   value_options: set[str]) -> list[str]:
    """The words after the leading options (skipping each option's value) and a `--`."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        i += 2 if _split_option(words[i], value_options)[1] or words[i] in takes_value else 1
    if i < len(words) and words[i] == "--":
        i += 1
    return words[i:]


def _uv_inner(name: str, args: list[str], cwd: str | None) -> _Inner:
    """`uv run` / `uv tool run` / `uvx`: the program they run."""
    words = args
    if name == "uv":
        if words[:1] == ["run"]:
            words = words[1:]
        elif words[:2] == ["tool", "run"]:
            words = words[2:]
        else:
            return [], False, False
    rest = _after_options(words, ("-p", "-f", "-P", "-C"), _UV_RUN_VALUES)
    return ([(rest, cwd)] if rest else []), False, False


def _npm_inner(name: str, args: list[str], cwd: str | None) -> _Inner:
    """`npm exec` / `npm x` / `npx`: the program they run (`-c STRING` is refused)."""
    words = args
    if name == "npm":
        if words[:1] not in (["exec"], ["x"]):
            return [], False, False
        words = words[1:]
    if any(w in ("-c", "--call") or w.startswith("--call=") for w in words):
        raise Unreadable("npm exec -c runs a shell command string agentstate cannot read")
    rest = _after_options(words, ("-p", "-w"), _NPM_EXEC_VALUES)
    return ([(rest, cwd)] if rest else []), False, False


def layers(argv: list[str], depth: int = 0, cwd: str | None = None) -> list[Layer]:
    """`argv` and every command it starts through known wrappers, outermost first."""
    if depth > 16:
        raise Unreadable("wrappers nested more than 16 deep")
    out = [Layer(list(argv), cwd=cwd)]
    commands, open_ended, shell = _inner(argv, cwd)
    for command, where in commands:
        for layer in layers(command, depth + 1, where):
            out.append(Layer(layer.argv, layer.open_ended or open_ended,
                             layer.via or program_name(argv[0]), layer.shell or shell,
                             layer.cwd))
    return out


# ---------------------------------------------------------------- canonical arguments

_RM_LONG = {"--recursive": "-r", "--force": "-f", "--dir": "-d", "--verbose": "-v",
            "--interactive": "--interactive", "--one-file-system": "--one-file-system",
            "--no-preserve-root": "--no-preserve-root", "--preserve-root": "--preserve-root"}


def _long(name: str, table: dict[str, str]) -> str:
    """GNU getopt accepts any unambiguous prefix of a long option (`--rec`, `--no-pres`)."""
    if name in table:
        return table[name]
    matches = {canon for full, canon in table.items() if full.startswith(name)}
    return matches.pop() if len(matches) == 1 else name


def _path(word: str, cwd: str | None) -> str:
    if cwd and not word.startswith("/"):
        word = os.path.join(cwd, word)
    if word.startswith("/"):
        word = "/" + word.lstrip("/")  # `//` is `/` on Linux (normpath keeps it)
    return os.path.normpath(word) if word else word


def _normalise_rm(args: list[str], cwd: str | None) -> list[str]:
    options: set[str] = set()
    operands: list[str] = []
    ended = False
    for word in args:
        if ended or word == "-" or not word.startswith("-"):
            operands.append(_path(word, cwd))
        elif word == "--":
            ended = True
        elif word.startswith("--"):
            options.add(_long(word.split("=", 1)[0], _RM_LONG))
        else:
            options.update("-r" if ch in "rR" else "-" + ch for ch in word[1:])
    return sorted(options) + operands


_NORMALISERS = {"rm": _normalise_rm}


def normalise(program: str, args: list[str], cwd: str | None) -> list[str] | None:
    """Canonical arguments of `program` (None: no normaliser, compare words as written)."""
    function = _NORMALISERS.get(program)
    return function(args, cwd) if function else None
