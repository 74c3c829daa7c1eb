"""Functions stay small enough to read in one screen (issue 22).

Long functions were split along their steps into named helpers; this keeps new ones from
growing back. The limit counts every line from `def` to the function's last line, its
docstring included (a long docstring is a sign of a function doing several things too).
Branching is bounded separately by ruff's mccabe rule (C90, pyproject.toml).
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentstate

PACKAGE = Path(agentstate.__file__).parent
MAX_LINES = 100


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function or method in `source` longer than `limit`
    lines; nested functions count inside their parent and on their own."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                lines = child.end_lineno - child.lineno + 1
                if lines > limit:
                    found.append((name, lines))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_the_measure_finds_a_long_function_a_method_and_a_nested_one():
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))  # def line + 100 = 101
    source = (f"def long():\n{body}\n\n"
              f"def short():\n    return 1\n\n"
              f"class C:\n    def method(self):\n{body.replace('    ', '        ')}\n\n"
              f"def outer():\n    def inner():\n{body.replace('    ', '        ')}\n")
    found = dict(long_functions(source))
    assert found["long"] == MAX_LINES + 1
    assert found["C.method"] == MAX_LINES + 1
    assert found["outer.inner"] == MAX_LINES + 1 and found["outer"] == MAX_LINES + 2
    assert "short" not in found
    # Exactly at the limit is allowed.
    assert long_functions(f"def f():\n{body}\n", limit=MAX_LINES + 1) == []


def test_no_function_in_the_package_is_longer_than_the_limit():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100  # the whole package is read, not an empty folder
    offenders = [f"{path.relative_to(PACKAGE)}: {name} ({lines} lines)"
                 for path in modules
                 for name, lines in long_functions(path.read_text(encoding="utf-8"))]
    assert not offenders, (
        f"functions over {MAX_LINES} lines (split them along their steps into named "
        "helpers):\n" + "\n".join(offenders))
