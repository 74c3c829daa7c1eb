"""A principal on every read and write path, explicit below the entry points (issue 22).

The entry points (cli/, integrations/, web/, api.py, evals/) decide whose rights apply, once,
and pass the principal down. Below them a function that reads or writes memory, events or
skills takes the principal as a required parameter: a default of None used to mean "the
environment's principal", which is how the MCP `resume` tool came to read as the shell's
owner. These tests read the source (signatures and calls), and one runs a domain function on
a real store to show that forgetting the principal fails loudly instead of falling back.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "agentstate"
# The domains whose functions read or write memory, events or skills, and sync (which writes
# memory from the shared folder).
DOMAINS = ("memory", "runs", "skills", "context", "sync")
# Where a principal is decided: the command line, the agent integrations (hooks, MCP, git
# hooks), the web ui, the library face and the evals (each builds its own stores).
ENTRY_POINTS = ("cli", "integrations", "web", "evals", "api.py", "entry.py", "__init__.py",
                "__main__.py")
# Parameter names that carry the principal a function acts for. (`claimed_by` on the run
# log's writers is not among them: None there means a write by agentstate itself — a tool
# call's own record, a skill load event — which claims no source on anyone's behalf.)
PRINCIPAL_PARAMS = ("principal", "who")
# Modules below the entry points that read the environment's principal, and why.
ENVIRONMENT_READERS = {
    "store/principals.py": "defines it (resolve_principal, environment_principal)",
    "maintenance/join.py": "a fresh clone's first import runs while any entry point opens "
                           "its store, before a --as can be read: it joins as the environment",
    "maintenance/restore.py": "restore checks the principal against the settings of the "
                              "backup it restores, before any store is open",
    "store/integrity.py": "doctor reports which principal the environment grants (a report, "
                          "no read or write of memory, events or skills)",
}
ENVIRONMENT_CALLS = ("environment_principal", "principal_from_environment")


def _modules(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (PACKAGE / package).rglob("*.py"))


def _below_entry_points() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] not in ENTRY_POINTS]


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _defaulted_principals(path: Path) -> list[str]:
    """`file:line function(param=default)` for every principal parameter with a default."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]],
                            args.defaults, strict=True))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults,
                                                   strict=True) if d is not None})
        for name in PRINCIPAL_PARAMS:
            if name in defaults:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"
                             f"({name}={ast.unparse(defaults[name])})")
    return found


def test_no_domain_function_gives_its_principal_a_default():
    defaulted = [hit for path in _modules(*DOMAINS) for hit in _defaulted_principals(path)]
    assert defaulted == [], (
        "a domain function gives its principal a default; make it a required parameter and "
        "pass the principal the entry point resolved: " + "; ".join(defaulted))


def test_the_scan_sees_a_defaulted_principal(tmp_path):
    # The scan itself must find what it forbids, in each spelling a regression could take.
    sample = tmp_path / "sample.py"
    sample.write_text("def a(store, principal=None): ...\n"
                      "def b(store, *, principal: str | None = None): ...\n"
                      "def c(store, who='owner', limit=1): ...\n"
                      "def ok(store, *, principal, limit=3): ...\n", encoding="utf-8")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        found = _defaulted_principals(sample)
    finally:
        PACKAGE = saved
    assert [f.split(" ", 1)[1] for f in found] == [
        "a(principal=None)", "b(principal=None)", "c(who='owner')"]


def _environment_fallbacks(path: Path) -> list[str]:
    """Calls that take the environment's principal without saying so: resolve_principal
    without an explicit principal (or with a literal None)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or _called_name(node) != "resolve_principal":
            continue
        given = node.args[1:2] + [k.value for k in node.keywords if k.arg == "name"]
        if not given or (isinstance(given[0], ast.Constant) and given[0].value is None):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {ast.unparse(node)}")
    return found


def test_below_the_entry_points_nothing_resolves_the_environments_principal_implicitly():
    implicit = [hit for path in _below_entry_points() for hit in _environment_fallbacks(path)]
    assert implicit == [], ("below the entry points a principal is passed, never taken "
                            "from the environment: " + "; ".join(implicit))


def test_the_domains_take_the_principal_they_are_given():
    # In the domains the principal is what the caller passed (`acting`); resolve_principal
    # (the entry points' decision) is not called there at all.
    calls = [f"{path.relative_to(PACKAGE)}:{node.lineno}"
             for path in _modules(*DOMAINS, "maintenance")
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and _called_name(node) == "resolve_principal"]
    assert calls == []


def test_only_the_listed_modules_read_the_environments_principal():
    readers = {}
    for path in _below_entry_points():
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _called_name(node) in ENVIRONMENT_CALLS:
                readers.setdefault(rel, node.lineno)
    assert set(readers) <= set(ENVIRONMENT_READERS), (
        f"a module below the entry points reads the environment's principal: {readers}")


def test_the_scan_sees_an_implicit_resolve(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f(store, name):\n"
                      "    resolve_principal(store)\n"
                      "    principals.resolve_principal(store, None)\n"
                      "    resolve_principal(store, name)\n", encoding="utf-8")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        found = _environment_fallbacks(sample)
    finally:
        PACKAGE = saved
    assert [f.split(":", 1)[1].split(" ", 1)[0] for f in found] == ["2", "3"]


def test_a_domain_call_without_its_principal_fails_instead_of_reading_the_environment(
        store, monkeypatch):
    from agentstate.memory.recall import recall
    from agentstate.memory.write import remember

    # The environment would grant the owner: a silent fallback would succeed as the owner.
    monkeypatch.setenv("AGENTSTATE_PRINCIPAL", "owner")
    with pytest.raises(TypeError, match="principal"):
        remember(store, "the lexer lives in lex.py", kind="fact")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="principal is required"):
        recall(store, "lexer", principal=None)  # type: ignore[arg-type]
    # Named, it works, and a name still cannot widen the environment's rights.
    written = remember(store, "prefer tabs in the lexer", kind="preference", scope="user",
                       source="user", principal="owner")
    assert written.memory.principal == "owner"
    monkeypatch.setenv("AGENTSTATE_PRINCIPAL", "agent")
    from agentstate.errors import Refused

    with pytest.raises(Refused, match="may only narrow"):
        recall(store, "lexer", principal="owner")
    hidden = recall(store, "tabs lexer", principal="agent")
    assert hidden.hits == [] and hidden.withheld.get("permission") == 1
