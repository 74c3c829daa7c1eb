"""Settings: `.agentstate/config.toml`, typed and validated once, when it is read.

`load_settings(path)` reads the file with the standard library's tomllib (fast, read-only) and
returns a frozen `Settings`: one frozen dataclass per table. Every key is optional; a default
is written in one place, the field default of its section below, so a file written by an older
version still works. Everything is checked at load — type, range, shape — and the first
problem is one `InvalidInput` line naming the file and the key, e.g.
`.agentstate/config.toml: [memory] min_relevance must be a number between 0 and 1, got '0.3'`.
Code past the load trusts the values and repeats no default and no check.

Unknown names: a key agentstate does not know inside a table it knows is an error (a typo such
as `max_char` would otherwise be ignored without a word). A whole table it does not know is
ignored, so a file written for a newer version still loads — unless its name is a near miss of
a known one (`[memroy]`), which is reported as the typo it almost certainly is.

The commented template written by `init` (config_template.py) shows the same defaults (a test
parses it and compares). Writing uses tomlkit so comments survive edits; it is imported only then.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from agentstate.errors import InvalidInput
from agentstate.lazy_re import LazyPattern

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

CONFIG_NAME = "config.toml"

# The context pack's priority classes, highest first. The context domain gives them meaning;
# they are named here because `[context] classes` is checked against them at load.
CONTEXT_CLASSES = ("pinned", "task", "catalog", "evidence", "trajectory", "index")
MAX_BUDGET = 1_000_000_000  # tokens; the largest budget a pack may be given


# ---------------------------------------------------------------- checks


class _Bad(Exception):
    """A value failed its check: `what` it must be; `got` is the offending value."""

    def __init__(self, what: str, got: Any) -> None:
        super().__init__(what)
        self.what, self.got = what, got


class _Problem(Exception):
    """A whole message (without the file), raised up to `parse_settings`."""


Check = Callable[[Any], Any]  # returns the value, normalised (lists become tuples)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(minimum: int, maximum: int | None = None) -> Check:
    what = (f"a whole number from {minimum} to {maximum}" if maximum is not None
            else f"a whole number >= {minimum}")

    def check(value: Any) -> int:
        if (not isinstance(value, int) or isinstance(value, bool) or value < minimum
                or (maximum is not None and value > maximum)):
            raise _Bad(what, value)
        return value
    return check


def _number(low: float, high: float | None = None, what: str | None = None) -> Check:
    what = what or (f"a number between {low:g} and {high:g}" if high is not None
                    else f"a number >= {low:g}")

    def check(value: Any) -> float:
        if (not _is_number(value) or not math.isfinite(value) or value < low
                or (high is not None and value > high)):
            raise _Bad(what, value)
        return float(value)
    return check


def _text(*, empty: bool = True) -> Check:
    what = "a string" if empty else "a non-empty string"

    def check(value: Any) -> str:
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise _Bad(what, value)
        return value
    return check


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Bad("a list of strings", value)
    return tuple(value)


def _optional_strings(value: Any) -> tuple[str, ...] | None:
    return None if value is None else _strings(value)


# What `actions` may name: the owner-only operations (see agentstate.store.principals).
PRINCIPAL_ACTIONS = ("approve", "revoke", "purge")


def _actions(value: Any) -> tuple[str, ...] | None:
    actions = _optional_strings(value)
    for action in actions or ():
        if action not in PRINCIPAL_ACTIONS and action != "*":
            raise _Bad(f"a list of actions from {', '.join(PRINCIPAL_ACTIONS)}", value)
    return actions


def _rules(value: Any) -> tuple[str, ...]:
    """Command prefixes: each must split into words like a command line."""
    import shlex

    rules = _strings(value)
    for rule in rules:
        try:
            shlex.split(rule)
        except ValueError as exc:
            raise _Bad(f"a list of command prefixes ({rule!r} does not split into words: "
                       f"{exc})", value) from None
    return rules


# Variables `[tools] env` may not hand to commands: each makes a program load or run other
# code, or choose its editor, pager, password prompt or configuration (git's identity
# variables are only names and dates). PATH is always the `[tools] path`.
_TOOL_ENV_REFUSED = LazyPattern(
    r"^(PATH|LD_\w*|DYLD_\w*|GIT_(?!(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$)\w*|BASH_FUNC_.*"
    r"|\w*_ASKPASS|\w*_WRAPPER|EDITOR|VISUAL|PAGER|MANPAGER|BROWSER|PYTHONSTARTUP"
    r"|PYTHONINSPECT|BASH_ENV|ENV|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|NODE_OPTIONS|MAKEFLAGS"
    r"|MFLAGS|GNUMAKEFLAGS|PERL5OPT|RUBYOPT|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|GOFLAGS|RUSTC"
    r"|RUSTDOC|RUSTC_\w*|CARGO_BUILD_\w*|CARGO_TARGET_\w*|npm_config_\w*|NPM_CONFIG_\w*)$")
_ENV_NAME = LazyPattern(r"^[A-Za-z_][A-Za-z0-9_]*$")


def tool_env_refused(name: str) -> bool:
    """May `[tools] env` (or any caller of the tool layer) not pass variable `name`?"""
    return bool(_TOOL_ENV_REFUSED.match(name))


def _env_entries(value: Any) -> tuple[str, ...]:
    """`NAME` (pass the caller's value) or `NAME=value` (set it), never a refused name."""
    entries = _strings(value)
    for entry in entries:
        name = entry.split("=", 1)[0]
        if not _ENV_NAME.match(name):
            raise _Bad(f'a list of "NAME" or "NAME=value" entries ({entry!r} is not one)',
                       value)
        if tool_env_refused(name):
            raise _Bad(f"a list of variables commands may get ({name} makes a program run "
                       "other code or choose its configuration: never passed)", value)
    return entries


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad("true or false", value)
    return value


def _choice(options: tuple[str, ...]) -> Check:
    what = "one of " + ", ".join(repr(o) for o in options)

    def check(value: Any) -> str:
        if value not in options:
            raise _Bad(what, value)
        return value
    return check


def _classes(value: Any) -> tuple[str, ...]:
    classes = _strings(value)
    for name in classes:
        if name not in CONTEXT_CLASSES:
            raise _Bad(f"a list of some of {', '.join(CONTEXT_CLASSES)} (unknown class "
                       f"{name!r})", value)
    return classes


@dataclass(frozen=True)
class ToolDefinition:
    """A tool shown in the context catalog that need not be a command on PATH (MCP tools)."""

    name: str
    description: str = ""


def _definitions(value: Any) -> tuple[ToolDefinition, ...]:
    shape = 'a list of tables {name = "...", description = "..."}'
    if not isinstance(value, list):
        raise _Bad(shape, value)
    out = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) \
                or not item["name"].strip() or not isinstance(item.get("description", ""), str):
            raise _Bad(shape, item)
        extra = sorted(set(item) - {"name", "description"})
        if extra:
            raise _Bad(f"{shape} (unknown key {extra[0]!r})", item)
        out.append(ToolDefinition(item["name"].strip(), " ".join(item.get("description",
                                                                          "").split())))
    return tuple(out)


def _setting(default: Any, check: Check) -> Any:
    return field(default=default, metadata={"check": check})


# ---------------------------------------------------------------- sections


@dataclass(frozen=True)
class TokenSettings:
    """[tokens]: how every budget is counted."""

    encoding: str = _setting("cl100k_base", _text(empty=False))
    calibration: float = _setting(1.0, _number(0.1, 10))


@dataclass(frozen=True)
class ResumeSettings:
    """[resume]"""

    recent_events: int = _setting(12, _whole(0))


@dataclass(frozen=True)
class PrincipalSpec:
    """[principals.NAME]: the scopes a principal reads and writes; `sources` it may claim
    (None = any source); `actions`, the owner-only operations it may perform (None = all of
    them when it may write every scope, none otherwise)."""

    read: tuple[str, ...] = _setting((), _strings)
    write: tuple[str, ...] = _setting((), _strings)
    sources: tuple[str, ...] | None = _setting(None, _optional_strings)
    actions: tuple[str, ...] | None = _setting(None, _actions)


def _default_principals() -> Mapping[str, PrincipalSpec]:
    return MappingProxyType({
        "owner": PrincipalSpec(read=("*",), write=("*",), actions=PRINCIPAL_ACTIONS),
        "agent": PrincipalSpec(
            read=("repo", "branch:*", "path:*", "run:*"),
            write=("run:*", "repo"),
            # An agent cannot claim the user's authority for what it writes.
            sources=("model", "tool:*", "file:*", "evt:*"),
            actions=(),
        ),
    })


@dataclass(frozen=True)
class PrincipalsSettings:
    """[principals]: `default` and one table per declared principal. A file's tables are
    laid over the built-in ones (a key left out of `[principals.agent]` keeps its default)."""

    default: str = "owner"
    declared: Mapping[str, PrincipalSpec] = field(default_factory=_default_principals)


@dataclass(frozen=True)
class MemorySettings:
    """[memory]: the write and read gates."""

    max_chars: int = _setting(4000, _whole(1))
    min_relevance: float = _setting(0.2, _number(0, 1))


@dataclass(frozen=True)
class ContextSettings:
    """[context]: the pack's default budget, class order and the bounds on what it considers."""

    system_file: str = _setting("", _text())
    default_budget: int = _setting(8000, _whole(1, MAX_BUDGET))
    recent_full_events: int = _setting(8, _whole(0))
    classes: tuple[str, ...] = _setting(CONTEXT_CLASSES, _classes)
    trajectory_window: int = _setting(40, _whole(0))
    evidence_events: int = _setting(30, _whole(0))
    evidence_memories: int = _setting(30, _whole(0))
    catalog_skills: int = _setting(10, _whole(0))
    index_reserve: int = _setting(200, _whole(0))  # tokens (and at most 5% of the budget)
    task_items: int = _setting(25, _whole(0))       # newest items per task-state group
    query_questions: int = _setting(5, _whole(0))   # open questions added to the query
    query_words: int = _setting(40, _whole(0))      # distinct words kept in the query
    evidence_terms: int = _setting(24, _whole(0))   # the event search's N rarest terms


@dataclass(frozen=True)
class ToolSettings:
    """[tools]: the one tool layer's policy (see agentstate.tools.policy)."""

    allow: tuple[str, ...] = _setting(
        ("git", "make", "pytest", "python", "python3", "ls", "cat", "echo", "true", "false",
         "grep", "rg", "sed", "find", "npm", "node", "cargo", "go", "ruff", "uv", "tox",
         "agentstate"), _rules)
    deny: tuple[str, ...] = _setting(("rm -rf /", "curl", "wget", "ssh", "scp"), _rules)
    # Where programs are looked up (never the caller's PATH): system directories first, then
    # the repository's virtualenv. `~/` is the user's home; relative entries are relative to
    # the repository.
    path: tuple[str, ...] = _setting(
        ("/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin",
         "/opt/homebrew/bin", ".venv/bin"), _strings)
    # "auto": bubblewrap where it is installed and works, else none (exec and doctor say so).
    sandbox: str = _setting("auto", _choice(("auto", "none", "bwrap")))
    # Inside the sandbox: may commands reach the network?
    network: bool = _setting(False, _flag)
    # Variables commands get besides the built-in few (PATH, HOME, locale, TERM, TMPDIR, USER):
    # "NAME" passes the caller's value, "NAME=value" sets one.
    env: tuple[str, ...] = _setting((), _env_entries)
    # Seconds; 0 means no limit.
    timeout: float = _setting(600.0, _number(0, what="a number of seconds (0 for no limit)"))
    definitions: tuple[ToolDefinition, ...] = _setting((), _definitions)


@dataclass(frozen=True)
class SkillSettings:
    """[skills]: limits every skill folder is checked against (validate, publish and pull
    alike), and whether pulled releases always wait for an approval."""

    max_file_bytes: int = _setting(1_048_576, _whole(1))    # one file of a skill
    max_skill_bytes: int = _setting(5_242_880, _whole(1))   # all files of a skill together
    # true: every release `skill pull` brings in waits for `skill pull --approve`
    approve_pulled: bool = _setting(False, _flag)


@dataclass(frozen=True)
class RetentionSettings:
    """[retention]: how long `agentstate gc` keeps the events of finished runs, and how many
    replaced stores `agentstate restore --force` keeps aside."""

    keep_events_days: int = _setting(0, _whole(0))  # 0: keep every event (gc does nothing)
    # Each kept store is a whole copy (hundreds of MB on a large one): the newest N stay.
    keep_restore_copies: int = _setting(2, _whole(0))


@dataclass(frozen=True)
class Settings:
    """Everything config.toml sets, validated. `Settings()` is the defaults."""

    tokens: TokenSettings = field(default_factory=TokenSettings)
    resume: ResumeSettings = field(default_factory=ResumeSettings)
    principals: PrincipalsSettings = field(default_factory=PrincipalsSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    context: ContextSettings = field(default_factory=ContextSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    skills: SkillSettings = field(default_factory=SkillSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)


# ---------------------------------------------------------------- loading


def load_settings(path: Path) -> Settings:
    """The settings in the file at `path`, validated (a missing file = the defaults)."""
    if not path.exists():
        return Settings()
    try:
        return _settings_of_text(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{_display(path)}: not valid TOML ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{_display(path)}: not UTF-8 text") from exc
    except OSError as exc:
        raise InvalidInput(f"{_display(path)}: cannot be read ({exc.strerror or exc})") from exc
    except _Problem as exc:
        raise InvalidInput(f"{_display(path)}: {exc}") from None


@lru_cache(maxsize=8)
def _settings_of_text(text: str) -> Settings:
    # By text, not by path: most stores keep the config `init` wrote, so a process that
    # has parsed it once (the hook helper, before it forks) never parses it again, and an
    # edited file is simply another text. Settings are frozen; a bad text raises (not cached).
    return _parse(tomllib.loads(text))


def parse_settings(data: Mapping[str, Any], origin: str = CONFIG_NAME) -> Settings:
    """Settings from parsed TOML (or any dict of the same shape); `origin` names the file in
    the error. Raises InvalidInput for the first bad key."""
    try:
        return _parse(data)
    except _Problem as exc:
        raise InvalidInput(f"{origin}: {exc}") from None


def _display(path: Path) -> str:
    """The path as the user would type it from here: relative when under the working
    directory, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


_S = TypeVar("_S", bound="DataclassInstance")  # a section or PrincipalSpec

_SECTIONS: dict[str, type] = {
    "tokens": TokenSettings, "resume": ResumeSettings, "principals": PrincipalsSettings,
    "memory": MemorySettings, "context": ContextSettings, "tools": ToolSettings,
    "skills": SkillSettings, "retention": RetentionSettings,
}


def _parse(data: Mapping[str, Any]) -> Settings:
    for name in data:
        if name not in _SECTIONS:
            near = _near_miss(name, _SECTIONS)
            if near:
                raise _Problem(f"[{name}] is not a table agentstate knows; did you mean "
                               f"[{near}]?")
    tables = {}
    for name in _SECTIONS:
        table = data.get(name, {})
        if not isinstance(table, dict):
            raise _Problem(f"[{name}] must be a table, got {table!r}")
        tables[name] = table
    return Settings(
        tokens=_build(TokenSettings, "tokens", tables["tokens"]),
        resume=_build(ResumeSettings, "resume", tables["resume"]),
        principals=_principals(tables["principals"]),
        memory=_build(MemorySettings, "memory", tables["memory"]),
        context=_build(ContextSettings, "context", tables["context"]),
        tools=_build(ToolSettings, "tools", tables["tools"]),
        skills=_build(SkillSettings, "skills", tables["skills"]),
        retention=_build(RetentionSettings, "retention", tables["retention"]),
    )


def _build(cls: type[_S], title: str, table: Mapping[str, Any], base: _S | None = None) -> _S:
    """`cls` from the keys of `table` (checked), over `base` or the defaults."""
    known = {f.name: f for f in fields(cls)}
    values = {}
    for key, value in table.items():
        if key not in known:
            raise _Problem(_unknown_key(title, key, known))
        try:
            values[key] = known[key].metadata["check"](value)
        except _Bad as bad:
            raise _Problem(f"[{title}] {key} must be {bad.what}, got {bad.got!r}") from None
    return replace(base, **values) if base is not None else cls(**values)


def _principals(table: Mapping[str, Any]) -> PrincipalsSettings:
    defaults = PrincipalsSettings()
    declared = dict(defaults.declared)
    default = defaults.default
    for key, value in table.items():
        if key == "default":
            if not isinstance(value, str) or not value.strip():
                raise _Problem(f"[principals] default must be a principal's name, "
                               f"got {value!r}")
            default = value
        elif isinstance(value, dict):
            declared[key] = _build(PrincipalSpec, f"principals.{key}", value,
                                   declared.get(key, PrincipalSpec()))
        else:
            raise _Problem(f"[principals] {key} must be a table [principals.{key}] with read "
                           f"and write lists (the only other key is `default`), got {value!r}")
    if default not in declared:
        raise _Problem(f"[principals] default must name a declared principal "
                       f"({', '.join(sorted(declared))}), got {default!r}")
    return PrincipalsSettings(default=default, declared=MappingProxyType(declared))


def _near_miss(name: str, known: Mapping[str, Any]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return close[0] if close else None


def _unknown_key(title: str, key: str, known: Mapping[str, Any]) -> str:
    near = _near_miss(key, known)
    hint = f"did you mean {near}?" if near else f"known keys: {', '.join(known)}"
    return f"[{title}] {key} is not a setting agentstate knows ({hint})"
