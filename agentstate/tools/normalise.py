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
import shlex
from dataclasses import dataclass


def program_name(argv0: str) -> str:
    """The program's name as policy rules see it (a path's last component)."""
    return os.path.basename(argv0.rstrip("/")) or argv0


class Unreadable(Exception):
    """A wrapper's arguments could not be read, so what it runs is unknown."""


@dataclass(frozen=True)
class Layer:
    argv: list[str]
    open_ended: bool = False  # more arguments arrive at run time (xargs reads them from stdin)
    via: str = ""  # the wrapper that starts it ("" for the command itself)
    shell: bool = False  # a simple command found in a shell string (best effort)


# Wrapper option tables: (options taking a value, flag options). Long options may be written
# `--opt=value`; short flags may be clustered (`-nE`); a short value option may be attached.
_WRAPPERS: dict[str, tuple[set[str], set[str]]] = {
    "env": ({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
            {"-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-",
             "--default-signal", "--ignore-signal", "--block-signal", "--list-signal-handling"}),
    "nice": ({"-n", "--adjustment"}, set()),
    "timeout": ({"-s", "--signal", "-k", "--kill-after"},
                {"--preserve-status", "--foreground", "-v", "--verbose"}),
    "nohup": (set(), set()),
    "sudo": ({"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h",
              "--host", "-p", "--prompt", "-r", "--role", "-t", "--type", "-T",
              "--command-timeout", "-U", "--other-user"},
             {"-A", "--askpass", "-b", "--background", "-E", "--preserve-env", "-H",
              "--set-home", "-i", "--login", "-K", "--remove-timestamp", "-k",
              "--reset-timestamp", "-n", "--non-interactive", "-P", "--preserve-groups",
              "-S", "--stdin", "-s", "--shell", "-B", "--bell", "-N", "--no-update"}),
    "doas": ({"-u", "-C"}, {"-n", "-s"}),
    "stdbuf": ({"-i", "--input", "-o", "--output", "-e", "--error"}, set()),
    "ionice": ({"-c", "--class", "-n", "--classdata"}, {"-t", "--ignore"}),
    "setsid": (set(), {"-c", "--ctty", "-f", "--fork", "-w", "--wait"}),
    "time": ({"-f", "--format", "-o", "--output"},
             {"-a", "--append", "-p", "--portability", "-v", "--verbose", "-q", "--quiet"}),
    "xargs": ({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args",
               "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"},
              {"-0", "--null", "-p", "--interactive", "-r", "--no-run-if-empty", "-t",
               "--verbose", "-x", "--exit", "-o", "--open-tty", "-e", "--eof", "-i",
               "--replace", "-l", "--max-lines"}),
    "chrt": (set(), {"-a", "--all-tasks", "-b", "--batch", "-d", "--deadline", "-e",
                     "--ext", "-f", "--fifo", "-i", "--idle", "-o", "--other", "-r", "--rr",
                     "-R", "--reset-on-fork", "-v", "--verbose"}),
    "taskset": (set(), {"-a", "--all-tasks"}),
}
# Multi-call binaries: the next word is the program.
_MULTICALL = {"busybox", "toybox"}
# Shells whose `-c STRING` is split into simple commands (best effort: see split_shell).
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"}
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


def _skip_options(program: str, args: list[str], values: set[str],
                  flags: set[str]) -> int:
    """Index of the first word after the wrapper's options (and its leading positionals)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-" and program != "env":
            break
        if word == "-":
            i += 1
            continue
        if word.startswith("--"):
            name, takes = _split_option(word, values)
            if name not in values and name not in flags and not (
                    program == "sudo" and name == "--preserve-env"):
                raise Unreadable(f"{program} option {name!r} is not one agentstate can read")
            i += 2 if takes else 1
            continue
        if program == "nice" and word[1:].lstrip("-").isdigit():  # nice -10, nice --5
            i += 1
            continue
        # A short cluster: flags, then perhaps one value option (rest of word or next word).
        j = 1
        taken = False
        while j < len(word):
            option = "-" + word[j]
            if option in values:
                taken = j == len(word) - 1  # value is the next word
                break
            if option not in flags:
                raise Unreadable(f"{program} option {option!r} is not one agentstate can read")
            j += 1
        i += 2 if taken else 1
    if program == "env":
        while i < len(args) and "=" in args[i] and not args[i].startswith("="):
            i += 1
    i += _LEADING_POSITIONALS.get(program, 0)
    return i


def _env_split_string(args: list[str]) -> list[str]:
    """`env -S 'rm -rf /'` and `env --split-string=…`: the string is split into words."""
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-S", "--split-string") and i + 1 < len(args):
            out.extend(_shlex(args[i + 1]))
            i += 2
            continue
        if word.startswith("--split-string="):
            out.extend(_shlex(word.split("=", 1)[1]))
        elif word.startswith("-S") and len(word) > 2 and not word.startswith("--"):
            out.extend(_shlex(word[2:]))
        else:
            out.append(word)
        i += 1
    return out


def _shlex(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise Unreadable(f"cannot split {text!r} into words ({exc})") from None


def split_shell(script: str) -> list[list[str]]:
    """The simple commands of a shell string, split at `;`, `&&`, `||`, `|`, `&`, newlines
    and parentheses. Best effort: variables, `eval`, command substitution and here-documents
    are not followed (an allowed shell can run anything; see docs/security.md)."""
    lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise Unreadable(f"cannot split the shell string {script!r} ({exc})") from None
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= set(";&|()"):
            commands.append([])
        elif token and set(token) <= set("<>"):
            continue
        else:
            commands[-1].append(token)
    out = []
    for words in commands:
        while words and "=" in words[0] and not words[0].startswith("="):
            words = words[1:]  # VAR=value prefixes
        if words and words[0] in ("exec", "command", "builtin", "then", "do", "else", "!"):
            words = words[1:]
        if words:
            out.append(words)
    return out


def _inner(argv: list[str]) -> tuple[list[list[str]], bool, bool]:
    """The commands `argv` starts directly: (commands, open_ended, from_shell)."""
    name = program_name(argv[0])
    args = argv[1:]
    if name in _MULTICALL:
        return ([args] if args and not args[0].startswith("-") else []), False, False
    if name in _SHELLS:
        for i, word in enumerate(args):
            if word == "-c" or (word.startswith("-") and not word.startswith("--")
                                and "c" in word[1:]):
                return ([c for c in split_shell(args[i + 1])] if i + 1 < len(args)
                        else []), False, True
            if not word.startswith("-"):
                break
        return [], False, False
    if name in _WRAPPERS:
        values, flags = _WRAPPERS[name]
        if name == "env":
            args = _env_split_string(args)
        start = _skip_options(name, args, values, flags)
        rest = args[start:]
        return ([rest] if rest else []), name == "xargs", False
    if name in ("uv", "uvx"):
        words = args
        if name == "uv":
            if words[:1] == ["run"]:
                words = words[1:]
            elif words[:2] == ["tool", "run"]:
                words = words[2:]
            else:
                return [], False, False
        i = 0
        while i < len(words) and words[i].startswith("-") and words[i] != "--":
            i += 2 if _split_option(words[i], _UV_RUN_VALUES)[1] or words[i] in (
                "-p", "-f", "-P", "-C") else 1
        if i < len(words) and words[i] == "--":
            i += 1
        return ([words[i:]] if words[i:] else []), False, False
    if name in ("npm", "npx"):
        words = args
        if name == "npm":
            if words[:1] not in (["exec"], ["x"]):
                return [], False, False
            words = words[1:]
        if any(w in ("-c", "--call") or w.startswith("--call=") for w in words):
            raise Unreadable("npm exec -c runs a shell command string agentstate cannot read")
        i = 0
        while i < len(words) and words[i].startswith("-") and words[i] != "--":
            i += 2 if _split_option(words[i], _NPM_EXEC_VALUES)[1] or words[i] in (
                "-p", "-w") else 1
        if i < len(words) and words[i] == "--":
            i += 1
        return ([words[i:]] if words[i:] else []), False, False
    if name == "tox" and args[:1] == ["exec"] and "--" in args:
        rest = args[args.index("--") + 1:]
        return ([rest] if rest else []), False, False
    return [], False, False


def layers(argv: list[str], depth: int = 0) -> list[Layer]:
    """`argv` and every command it starts through known wrappers, outermost first."""
    if depth > 16:
        raise Unreadable("wrappers nested more than 16 deep")
    out = [Layer(list(argv))]
    commands, open_ended, shell = _inner(argv)
    for command in commands:
        for layer in layers(command, depth + 1):
            out.append(Layer(layer.argv, layer.open_ended or open_ended,
                             layer.via or program_name(argv[0]), layer.shell or shell))
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
