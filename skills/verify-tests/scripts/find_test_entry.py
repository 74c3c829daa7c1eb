#!/usr/bin/env python3
"""Print a repository's own test command (standard library only; runs nothing itself).

Usage: find_test_entry.py [--json] [REPO]      (REPO defaults to the current directory)
       find_test_entry.py --self-test

Exit codes: 0 found (command on line 1, reason on line 2), 2 no entry found, 1 bad usage.
The command is meant to be run through `agentstate exec -- ...`, not by this script.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from types import ModuleType

tomllib: ModuleType | None
try:
    import tomllib
except ImportError:  # Python < 3.11: pyproject detection falls back to a text search
    tomllib = None

CI_SCRIPTS = (".ci/run", "ci/test.sh", "scripts/test")
MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
NPM_PLACEHOLDER = "no test specified"


def _make_has_test(path: Path) -> bool:
    text = path.read_text(encoding="utf-8", errors="replace")
    return re.search(r"^test\s*:(?!=)", text, re.M) is not None


def _just_has_test(path: Path) -> bool:
    text = path.read_text(encoding="utf-8", errors="replace")
    return re.search(r"^test(\s[^:]*)?:(?!=)", text, re.M) is not None


def _npm_test(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return False
    script = (data.get("scripts") or {}).get("test") if isinstance(data, dict) else None
    return isinstance(script, str) and NPM_PLACEHOLDER not in script


def _pytest_configured(repo: Path) -> str | None:
    if (repo / "pytest.ini").is_file():
        return "pytest.ini"
    pyproject = repo / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8", errors="replace")
        if tomllib is not None:
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                data = {}
            if "pytest" in data.get("tool", {}):
                return "[tool.pytest] in pyproject.toml"
        elif "[tool.pytest" in text:
            return "[tool.pytest] in pyproject.toml"
    setup_cfg = repo / "setup.cfg"
    if setup_cfg.is_file() and "[tool:pytest]" in setup_cfg.read_text(errors="replace"):
        return "[tool:pytest] in setup.cfg"
    if (repo / "conftest.py").is_file():
        return "conftest.py"
    tests = repo / "tests"
    if tests.is_dir() and any(tests.glob("test_*.py")):
        return "tests/test_*.py"
    return None


def find_entry(repo: Path) -> tuple[list[str], str] | None:
    """(command argv, reason) for the repository's own test entry, or None."""
    for rel in CI_SCRIPTS:
        path = repo / rel
        if path.is_file() and os.access(path, os.X_OK):
            return ["./" + rel], f"executable CI script {rel}"
    for name in MAKEFILES:
        path = repo / name
        if path.is_file() and _make_has_test(path):
            return ["make", "test"], f"`test` target in {name}"
    for name in ("justfile", "Justfile", ".justfile"):
        path = repo / name
        if path.is_file() and _just_has_test(path):
            return ["just", "test"], f"`test` recipe in {name}"
    if (repo / "package.json").is_file() and _npm_test(repo / "package.json"):
        return ["npm", "test"], "scripts.test in package.json"
    if (repo / "Cargo.toml").is_file():
        return ["cargo", "test"], "Cargo.toml"
    if (repo / "go.mod").is_file():
        return ["go", "test", "./..."], "go.mod"
    if (repo / "tox.ini").is_file():
        return ["tox"], "tox.ini"
    reason = _pytest_configured(repo)
    if reason:
        return ["python3", "-m", "pytest"], f"pytest configuration ({reason})"
    return None


def self_test() -> int:
    """Build one throw-away repository per ecosystem and check what is detected."""
    cases = {
        "ci": ({".ci/run": "#!/bin/sh\nmake test\n", "Makefile": "test:\n\ttrue\n"},
               ["./.ci/run"]),
        "make": ({"Makefile": "all:\n\ttrue\ntest: all\n\ttrue\n", "pytest.ini": ""},
                 ["make", "test"]),
        "make-var-only": ({"Makefile": "test := 1\n", "pytest.ini": ""},
                          ["python3", "-m", "pytest"]),
        "npm": ({"package.json": '{"scripts": {"test": "jest"}}'}, ["npm", "test"]),
        "npm-placeholder": ({"package.json": '{"scripts": {"test": "echo \\"Error: no test '
                                             'specified\\" && exit 1"}}'}, None),
        "cargo": ({"Cargo.toml": "[package]\nname='x'\n"}, ["cargo", "test"]),
        "go": ({"go.mod": "module x\n"}, ["go", "test", "./..."]),
        "pyproject": ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts='-q'\n"},
                      ["python3", "-m", "pytest"]),
        "tests-dir": ({"tests/test_a.py": "def test_a():\n    pass\n"},
                      ["python3", "-m", "pytest"]),
        "nothing": ({"README.md": "hello\n"}, None),
    }
    failures = []
    with tempfile.TemporaryDirectory(prefix="find-test-entry-") as tmp:
        for label, (files, expected) in cases.items():
            repo = Path(tmp) / label
            for rel, text in files.items():
                path = repo / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                if rel == ".ci/run":
                    path.chmod(0o755)
            found = find_entry(repo)
            got = found[0] if found else None
            if got != expected:
                failures.append(f"{label}: expected {expected}, got {got}")
    for line in failures:
        print("FAIL", line, file=sys.stderr)
    print(f"self-test: {len(cases) - len(failures)}/{len(cases)} cases passed")
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--self-test"]:
        return self_test()
    as_json = "--json" in argv
    rest = [a for a in argv if a != "--json"]
    if len(rest) > 1 or any(a.startswith("-") for a in rest):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 1
    repo = Path(rest[0] if rest else ".")
    if not repo.is_dir():
        print(f"not a directory: {repo}", file=sys.stderr)
        return 1
    found = find_entry(repo)
    if found is None:
        message = "no test entry found (no CI script, make/just test, npm test, Cargo.toml, " \
                  "go.mod, tox.ini or pytest configuration)"
        if as_json:
            print(json.dumps({"command": None, "reason": message}))
        else:
            print(message, file=sys.stderr)
        return 2
    command, reason = found
    if as_json:
        print(json.dumps({"command": command, "reason": reason}))
    else:
        print(shlex.join(command))
        print(reason)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
