"""Built-in rules: arguments that make an allowed program run another program.

`git` is allowed by default, but `git -c 'alias.x=!curl …' x` runs curl; `make --eval`,
`find -exec`, `sed 's/x/y/e'`, `tar --to-command`, `rsync -e` do the same. These rules are
always on (whatever `[tools] allow` says) and each refusal names its rule. They are a list of
known spellings, not a proof: what a program does with its own configuration files (a
Makefile, `.git/config`, hooks, `conftest.py`, `package.json` scripts) is out of their reach,
and an allowed interpreter (`python -c`, `node -e`) can run anything. See docs/security.md's
"The tool layer".
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agentstate.tools.normalise import program_name

# ---------------------------------------------------------------- git

# Config variables whose value is a program or command to run (matched on the lower-cased
# last part of the name), or that pull in more config (include.path).
_GIT_EXEC_NAMES = {
    "sshcommand", "pager", "editor", "fsmonitor", "hookspath", "askpass", "gitproxy",
    "external", "textconv", "command", "cmd", "program", "helper", "driver", "clean",
    "smudge", "process", "uploadpack", "receivepack", "packobjectshook", "browser",
    "alternaterefscommand", "difffilter", "path", "proxycommand",
    "templatedir",  # a template's hooks run in the new repository (post-checkout on clone)
}
_GIT_EXEC_SECTIONS = {"pager", "include", "includeif"}
# Subcommand options that name a command to run.
_GIT_SUB_OPTIONS = {
    "rebase": {"-x", "--exec"},
    "difftool": {"-x", "--extcmd"},
    "grep": {"-O", "--open-files-in-pager"},
    "clone": {"-u", "--upload-pack", "--template"},
    "init": {"--template"},
    "fetch": {"--upload-pack"},
    "pull": {"--upload-pack"},
    "ls-remote": {"--upload-pack"},
    "fetch-pack": {"--upload-pack", "--exec"},
    "push": {"--receive-pack", "--exec"},
    "send-pack": {"--receive-pack", "--exec"},
    "archive": {"--exec"},
    "send-email": {"--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"},
}
_GIT_SUB_WORDS = {"submodule": "foreach", "bisect": "run"}
_GIT_GLOBAL_VALUES = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                      "--config-env", "--list-cmds", "--attr-source"}


def _git_key_runs(key: str, value: str | None) -> bool:
    parts = key.strip().lower().split(".")
    if len(parts) < 2:
        return False
    section, name = parts[0], parts[-1]
    if section == "alias":
        return value is None or value.lstrip().startswith("!")
    if section == "protocol" and name == "allow":
        return True  # enables ext::, which runs a command as a "transport"
    return section in _GIT_EXEC_SECTIONS or name in _GIT_EXEC_NAMES


def git_subcommand(args: list[str]) -> str | None:
    """The subcommand of `git ARGS` (after git's own options), or None."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name, eq, _ = args[i].partition("=")
        i += 1 if eq or name not in _GIT_GLOBAL_VALUES else 2
    return args[i] if i < len(args) else None


def _git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        name, eq, attached = word.partition("=")
        value = attached if eq else (args[i + 1] if i + 1 < len(args) else "")
        found = _git_global_option(word, name, bool(eq), value)
        if found:
            return found
        i += 1 if eq or name not in _GIT_GLOBAL_VALUES else 2
    if i >= len(args):
        return None
    return _git_subcommand_rule(args[i], args[i + 1:])


def _git_global_option(word: str, name: str, attached: bool, value: str) -> str | None:
    """A git option before the subcommand that makes git run a program: `-c KEY=VALUE`,
    `--config-env`, `--exec-path=DIR`."""
    if word == "-c":
        key, has, setting = value.partition("=")
        if _git_key_runs(key, setting if has else None):
            return f"git-config-exec: `git -c {value}` sets a command git would run"
    elif name == "--config-env":
        if _git_key_runs(value.partition("=")[0], None):
            return (f"git-config-exec: `git --config-env {value}` sets a command git "
                    "would run from an environment variable")
    elif name == "--exec-path" and attached:
        return "git-exec-path: `git --exec-path=DIR` runs git's subcommands from DIR"
    return None


def _git_subcommand_rule(sub: str, rest: list[str]) -> str | None:
    """A git subcommand (with its arguments `rest`) that runs a program."""
    if sub == "filter-branch":
        return "git-runs-command: `git filter-branch` runs its filters as shell commands"
    if sub == "config":
        operands = [w for w in rest if not w.startswith("-")]
        for index, key in enumerate(operands[:2]):  # `KEY VALUE`, or `set KEY VALUE`
            if "." in key and index + 1 < len(operands) \
                    and _git_key_runs(key, operands[index + 1]):
                return f"git-config-exec: `git config {key} …` sets a command git would run"
        return None
    if _GIT_SUB_WORDS.get(sub) in rest[:1] or (sub == "submodule" and "foreach" in rest):
        return f"git-runs-command: `git {sub} {_GIT_SUB_WORDS[sub]}` runs a shell command"
    options = _GIT_SUB_OPTIONS.get(sub, set())
    for index, word in enumerate(rest):
        if word == "--":
            break
        name = word.split("=", 1)[0]
        if sub == "clone" and (found := _git_clone_config(name, word, rest, index)):
            return found
        if _git_option_in(word, options):
            return f"git-runs-command: `git {sub} {name}` names a command (or hooks) to run"
    return None


def _git_clone_config(name: str, word: str, rest: list[str], index: int) -> str | None:
    """`git clone -c/--config KEY=VALUE` (or a prefix of --config) naming a command."""
    if name in ("-c", "--config") or (len(name) >= 4 and "--config".startswith(name)):
        setting = word.split("=", 1)[1] if "=" in word else (
            rest[index + 1] if index + 1 < len(rest) else "")
        key, has, value = setting.partition("=")
        if _git_key_runs(key, value if has else None):
            return f"git-config-exec: `git clone {name} {setting}` sets a command git would run"
    return None


def _git_option_in(word: str, options: set[str]) -> bool:
    """Does `word` spell one of `options` as git's option parser reads it: a long option or
    any unambiguous prefix of one (`--upload-pa=`, `--templ`), a short one alone, with its
    value attached or bundled after other short flags (`-qu x`)?"""
    if word.startswith("--"):
        name = word.split("=", 1)[0]
        # An ambiguous prefix is an error to git; refusing it costs nothing.
        return len(name) >= 3 and any(o.startswith("--") and o.startswith(name)
                                      for o in options)
    if word.startswith("-") and len(word) > 1:
        return any("-" + letter in options for letter in word[1:])
    return False


# ---------------------------------------------------------------- make, find, tar, rsync

_MAKE_SHORT_VALUES = set("CfIjloW")
_MAKE_VAR = re.compile(
    r"^\s*(SHELL|\.SHELLFLAGS|MAKESHELL|MAKEFLAGS|MFLAGS|GNUMAKEFLAGS)\s*[:+?!]*=")


def _make(args: list[str]) -> str | None:
    for word in args:
        name = word.split("=", 1)[0]
        if name.startswith("--") and len(name) >= 3 and "--eval".startswith(name):
            # GNU make takes any unambiguous prefix (`--ev=`); an ambiguous one is an error.
            return "make-eval: `make --eval` adds rules (and so commands) from the command line"
        if _MAKE_VAR.match(word):
            return f"make-shell: `make {word.split('=')[0]}=…` replaces the shell recipes run in"
        if word.startswith("-") and not word.startswith("--"):
            for ch in word[1:]:
                if ch == "E":
                    return "make-eval: `make -E` adds rules (and so commands) from the command line"
                if ch in _MAKE_SHORT_VALUES:
                    break
    return None


def _find(args: list[str]) -> str | None:
    for word in args:
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            return f"find-exec: `find {word}` runs a command for each file"
    return None


def _long_options(program: str, rule: str, options: tuple[str, ...], short: str = ""
                  ) -> Callable[[list[str]], str | None]:
    def check(args: list[str]) -> str | None:
        for word in args:
            if word == "--":
                break
            name = word.split("=", 1)[0]
            if name.startswith("--") and len(name) >= 3 and any(o.startswith(name)
                                                               for o in options):
                return f"{rule}: `{program} {name}` names a command to run"
            if short and word.startswith("-") and not word.startswith("--") and any(
                    ch in short for ch in word[1:]):
                return f"{rule}: `{program} {word}` names a command to run"
        return None
    return check


_tar = _long_options("tar", "tar-command", (
    "--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
    "--new-volume-script", "--rsh-command"), short="IF")
_rsync = _long_options("rsync", "rsync-command", ("--rsh", "--rsync-path"), short="e")


# ---------------------------------------------------------------- sed

def _sed(args: list[str]) -> str | None:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            operands += args[i + 1:]
            break
        if word == "--sandbox":
            return None  # GNU sed itself then refuses e, r and w
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            # Any unambiguous prefix is the option (`--e=` is `--expression=`).
            if "--expression".startswith(name) and len(name) >= 3:
                scripts.append(value if eq else (args[i + 1] if i + 1 < len(args) else ""))
                i += 1 if eq else 2
                continue
            if "--file".startswith(name) and len(name) >= 3:
                return "sed-script-file: a sed script read from a file cannot be checked"
            i += 2 if name in ("--line-length",) and not eq else 1
            continue
        if word.startswith("-") and word != "-":
            taken = _sed_short_bundle(word, args[i + 1] if i + 1 < len(args) else None,
                                      scripts)
            if taken is None:
                return "sed-script-file: a sed script read from a file cannot be checked"
            i += 1 + taken
            continue
        operands.append(word)
        i += 1
    if not scripts and operands:
        scripts.append(operands[0])
    return _sed_verdict(scripts)


def _sed_short_bundle(word: str, following: str | None, scripts: list[str]) -> int | None:
    """Read a bundle of short sed options (`-ne SCRIPT`, `-i.bak`): a script of `-e` goes to
    `scripts`. Returns how many following words it took as a value (0 or 1); None for `-f`
    (a script file, which cannot be checked)."""
    for j in range(1, len(word)):
        ch = word[j]
        if ch == "e":
            scripts.append(word[j + 1:] or (following if following is not None else ""))
            return 0 if word[j + 1:] else 1
        if ch == "f":
            return None
        if ch in "il":  # -i[SUFFIX], -l N: the rest of the word is their value
            return 1 if ch == "l" and not word[j + 1:] else 0
    return 0


def _sed_verdict(scripts: list[str]) -> str | None:
    for script in scripts:
        verdict = sed_runs_command(script)
        if verdict is None:
            return f"sed-unreadable: cannot read the sed script {script!r} to check it"
        if verdict:
            return "sed-exec: the sed script uses `e` (runs a shell command)"
    return None


def _sed_delimited(s: str, i: int, parts: int) -> int:
    """Skip `parts` sections delimited by s[i] (with backslash escapes); index after them."""
    if i >= len(s) or s[i] in "\n\\":
        raise ValueError
    delim = s[i]
    i += 1
    for _ in range(parts):
        while i < len(s) and s[i] != delim:
            i += 2 if s[i] == "\\" else 1
        if i >= len(s):
            raise ValueError
        i += 1
    return i


def _sed_address(s: str, i: int) -> int:
    if i < len(s) and s[i] in "/\\":
        i = _sed_delimited(s, i + 1 if s[i] == "\\" else i, 1)
        while i < len(s) and s[i] in "IM":
            i += 1
        return i
    while i < len(s) and (s[i].isdigit() or s[i] in "$~+"):
        i += 1
    return i


def _to_line_end(s: str, i: int) -> int:
    while i < len(s) and s[i] != "\n":
        i += 2 if s[i] == "\\" else 1
    return i


def _sed_addresses(s: str, i: int) -> int:
    """Skip a command's address or address range and any `!`; the index of the command."""
    i = _sed_address(s, i)
    if i < len(s) and s[i] == ",":
        i = _sed_address(s, i + 1)
    while i < len(s) and s[i] in " \t!":
        i += 1
    return i


def _sed_s_flags(s: str, i: int) -> tuple[int, bool]:
    """The flags after `s/…/…/` from `i`: (the index after them, whether `e` is one)."""
    while i < len(s) and s[i] not in ";\n}":
        if s[i] == "e":
            return i, True
        if s[i] in "wW":  # the rest of the line is a file name
            return _to_line_end(s, i), False
        i += 1
    return i, False


def _sed_arguments(s: str, i: int, command: str) -> int | None:
    """Skip the arguments of a sed command other than `s` and `e` (from `i`, just after the
    command letter); None for a command sed does not have."""
    if command == "y":
        return _sed_delimited(s, i, 2)
    if command in "aicrRwW#":
        return _to_line_end(s, i)
    if command in ":btTv":
        while i < len(s) and s[i] not in ";\n":
            i += 1
    elif command in "qQlL":
        while i < len(s) and (s[i].isdigit() or s[i] == " "):
            i += 1
    elif command not in "{}=dDgGhHnNpPxzF":
        return None
    return i


def sed_runs_command(script: str) -> bool | None:
    """Does a (GNU) sed script run a shell command (`e` command or `s///e`)? None: unreadable."""
    s, i = script, 0
    try:
        while i < len(s):
            while i < len(s) and s[i] in " \t\n;":
                i += 1
            if i >= len(s):
                break
            i = _sed_addresses(s, i)
            if i >= len(s):
                return None
            command = s[i]
            i += 1
            if command == "e":
                return True
            if command == "s":
                i, runs = _sed_s_flags(s, _sed_delimited(s, i, 2))
                if runs:
                    return True
                continue
            after = _sed_arguments(s, i, command)
            if after is None:
                return None
            i = after
    except ValueError:
        return None
    return False


# ---------------------------------------------------------------- cargo, go, npm

# `cargo --config KEY=VALUE` keys that only tune a build. Everything else is refused: many
# keys name a program (build.rustc-wrapper, target.*.linker, target.*.runner, doc.browser,
# credential providers) or pass flags that do (build.rustflags `-C linker=…`), and an
# allow-list does not go stale when cargo adds another.
_CARGO_SAFE_KEYS = re.compile(
    r"^(build\.(jobs|target|target-dir|incremental)|net\.(offline|retry)"
    r"|term\.(verbose|quiet|color|progress\.when|progress\.width)"
    r"|profile\.[\w-]+\.(opt-level|debug|debug-assertions|overflow-checks|lto|panic"
    r"|incremental|codegen-units|strip|split-debuginfo))$")
# Words after `cargo rustc --` / `cargo rustdoc --` that make the compiler run a program.
_RUSTC_RUNS = ("linker", "link-arg", "runtool", "test-builder", "wrapper")


def _cargo(args: list[str]) -> str | None:
    sub = None
    for index, word in enumerate(args):
        if word == "--":
            if sub in ("rustc", "rustdoc") and any(
                    any(r in w for r in _RUSTC_RUNS) for w in args[index + 1:]):
                return (f"cargo-rustc-flags: `cargo {sub} -- …` passes the compiler an option "
                        "that runs a program")
            break
        if word == "--config" or word.startswith("--config="):
            value = word.split("=", 1)[1] if "=" in word else (
                args[index + 1] if index + 1 < len(args) else "")
            key, has, _ = value.partition("=")
            if not has:
                return "cargo-config: `cargo --config FILE` reads settings that cannot be checked"
            if not _CARGO_SAFE_KEYS.match(key.strip().strip("'\"")):
                return (f"cargo-config: `cargo --config {key.strip()}=…` is not a setting "
                        "agentstate lets a command change (it may name a program to run)")
        elif sub is None and not word.startswith("-") and not word.startswith("+") and (
                index == 0 or args[index - 1] not in ("--config", "-Z", "--color", "-C")):
            sub = word
    return None


# `go` flags (single or double dash, `=value` or the next word) that name a program to run.
_GO_EXEC_FLAGS = {"exec", "toolexec", "vettool"}
# `go env -w` keys that only choose where modules come from; others (CC, CXX, GOFLAGS,
# GOTOOLCHAIN, GOAUTH, GOCACHEPROG…) name programs or flags later builds would run.
_GO_ENV_SAFE = {"GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOINSECURE", "GOPROXY", "GOSUMDB",
                "GO111MODULE", "CGO_ENABLED"}


def _go(args: list[str]) -> str | None:
    if args[:1] == ["env"] and any(w in ("-w", "--w") for w in args[1:]):
        for word in args[1:]:
            key = word.split("=", 1)[0]
            if "=" in word and key not in _GO_ENV_SAFE:
                return (f"go-env-write: `go env -w {key}=…` sets what later go commands run "
                        "with")
        return None
    for word in args:
        if word in ("-args", "--args"):
            break  # the rest goes to the test binary
        if not word.startswith("-"):
            continue
        name, _, value = word.lstrip("-").partition("=")
        if name in _GO_EXEC_FLAGS:
            return f"go-exec: `go -{name}` names a program to run"
        if name in ("ldflags", "gccgoflags") and "extld" in (value or word):
            return f"go-exec: `go -{name}` with -extld names a linker to run"
    for index, word in enumerate(args[:-1]):
        if word.lstrip("-") in ("ldflags", "gccgoflags") and "extld" in args[index + 1]:
            return f"go-exec: `go {word}` with -extld names a linker to run"
    return None


# npm config options (given on its command line) that name a program to run or a config file
# that could. npm reads any unambiguous abbreviation, so a prefix of one counts.
_NPM_EXEC_OPTIONS = ("script-shell", "shell", "editor", "browser", "git", "node-options",
                     "userconfig", "globalconfig", "viewer", "call", "onload-script")
# npm options of their own that are also prefixes of the ones above.
_NPM_OWN_NAMES = {"global", "ca", "user", "node"}


def _npm(args: list[str]) -> str | None:
    for word in args:
        if word == "--":
            break
        if not word.startswith("--") or len(word) < 3:
            continue
        name = word[2:].split("=", 1)[0].lower()
        if name.startswith("no-") or name in _NPM_OWN_NAMES:
            continue
        if any(option.startswith(name) for option in _NPM_EXEC_OPTIONS):
            return f"npm-config-exec: `npm --{name}` names a program or a config file to use"
    return None


_RULES = {"git": _git, "make": _make, "gmake": _make, "find": _find, "sed": _sed,
          "gsed": _sed, "tar": _tar, "gtar": _tar, "rsync": _rsync, "cargo": _cargo,
          "go": _go, "npm": _npm, "npx": _npm}
# Programs whose arguments these rules read (xargs may not add arguments to them).
RULED_PROGRAMS = frozenset(_RULES)


def exec_argument_rule(argv: list[str]) -> str | None:
    """The built-in rule `argv` breaks ("name: why"), or None."""
    check = _RULES.get(program_name(argv[0]))
    return check(argv[1:]) if check else None
