"""The layers of docs/architecture.md, enforced: every import in every module under
agentstate/ (at any depth: top level, inside functions, under `if TYPE_CHECKING:`) may only
point to its own package or to a package in a lower layer, and packages form no cycle.

A module's package is its first name under `agentstate` (`agentstate.runs.log` → `runs`;
a top-level module such as `errors.py` is its own unit; the package root `__init__.py`, the
library face, is `agentstate`). The map below is the one in docs/architecture.md, bottom
first; a test compares the two, so the drawing cannot drift from what is enforced. A new
package must be placed in it before it can be imported.
"""

from __future__ import annotations

import ast
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentstate"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

# Bottom first. A unit may import units of lower layers only; units sharing a layer do not
# import each other.
LAYERS: list[set[str]] = [
    {"lazy_re"},
    {"secret_formats"},
    {"distribution", "secret_scan", "output"},
    {"errors"},
    {"safety", "config", "config_template"},
    {"tokens"},
    {"store"},
    {"runs"},
    {"error_boundary"},
    {"memory", "tools"},
    {"skills"},
    {"context", "sync"},
    {"maintenance"},
    {"evals", "api"},
    {"integrations", "web"},
    {"cli"},
    {"entry", "agentstate"},
    {"__main__"},
]

# Imports by name at run time (importlib.import_module), which the import statements do not
# show. Each is allowed here with its reason; any other is reported so it gets one.
DYNAMIC_ALLOWED = {
    # The one ordered list of migrations is the store's; the functions live with the domain
    # that owns the tables (docs/architecture.md, "A migration"). Looked up by name only
    # when a store has a migration pending.
    ("store/migrations.py", "module"),
    # `main()` imports only the command modules a command line needs (its own package).
    ("cli/__init__.py", "agentstate.cli.{name}"),
}


@dataclass(frozen=True)
class Import:
    source: str  # module path relative to the package folder, e.g. "runs/log.py"
    line: int
    target: str  # dotted module name, e.g. "agentstate.store.db"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(root: Path, dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    base = root / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(root: Path, path: Path) -> tuple[list[Import], list[Import]]:
    """(static imports of agentstate modules, dynamic ones) anywhere in the file."""
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    rel = path.relative_to(root).as_posix()
    static: list[Import] = []
    dynamic: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            static += [Import(rel, node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                # `from pkg import sub` imports the submodule; `from mod import name` the module.
                sub = f"{module}.{alias.name}"
                static.append(Import(rel, node.lineno, sub if is_module(root, sub) else module))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args):
            dynamic.append(Import(rel, node.lineno, _pattern(node.args[0])))
    ours = [i for i in static if i.target == "agentstate" or i.target.startswith("agentstate.")]
    return ours, dynamic


def _pattern(arg: ast.expr) -> str:
    """A dynamic import's module as written: a constant, or an f-string with `{name}` holes
    (a holed part stands for any module, so the pattern is cut after the first hole)."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):
        out = ""
        for part in arg.values:
            if isinstance(part, ast.Constant):
                out += str(part.value)
            else:
                expr = part.value if isinstance(part, ast.FormattedValue) else part
                return out + "{" + (expr.id if isinstance(expr, ast.Name) else "?") + "}"
        return out
    return ast.unparse(arg)  # the module comes from data (store/migrations.py's map)


def unit_of(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "agentstate"


def all_imports(root: Path) -> tuple[list[Import], list[Import]]:
    static: list[Import] = []
    dynamic: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        s, d = imports_of(root, path)
        static += s
        dynamic += d
    return static, dynamic


def unit_of_source(rel: str) -> str:
    if rel == "__init__.py":
        return "agentstate"
    return rel.split("/")[0].removesuffix(".py")


def violations(root: Path, layers: list[set[str]] = LAYERS) -> list[str]:
    """Every import that runs up a layer or sideways, every unit the map does not place,
    every package-level cycle and every dynamic import without a reason, as lines."""
    rank = {unit: i for i, layer in enumerate(layers) for unit in layer}
    static, dynamic = all_imports(root)
    problems = []
    units = {unit_of_source(p.relative_to(root).as_posix()) for p in root.rglob("*.py")}
    problems += [f"{u}: not placed in any layer (tests/test_layers.py LAYERS)"
                 for u in sorted(units - rank.keys())]
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in static:
        src, dst = unit_of_source(imp.source), unit_of(imp.target)
        if src == dst:
            continue
        graph[src].add(dst)
        if src in rank and dst in rank and rank[dst] >= rank[src]:
            how = "up a layer" if rank[dst] > rank[src] else "sideways, within a layer"
            problems.append(f"{imp.source}:{imp.line} imports {imp.target} ({src} → {dst}: "
                            f"{how})")
    problems += [f"package cycle: {' → '.join(c)}" for c in cycles(graph)]
    problems += [f"{imp.source}:{imp.line} imports {imp.target} by name, with no reason in "
                 "DYNAMIC_ALLOWED" for imp in dynamic
                 if (imp.source, imp.target) not in DYNAMIC_ALLOWED]
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def module_cycles(root: Path) -> list[list[str]]:
    """Cycles between modules (any depth of import), inside a package or across."""
    static, _ = all_imports(root)
    graph: dict[str, set[str]] = defaultdict(set)
    for imp in static:
        src = module_name(root, root / imp.source)
        if imp.target != src:
            graph[src].add(imp.target)
    return cycles(graph)


# ---------------------------------------------------------------- the real tree


def test_no_import_runs_up_a_layer_and_no_package_cycle():
    assert violations(PACKAGE) == []


def test_no_module_cycle():
    """Not even two modules of one package import each other (at any depth): a cycle is
    a layer the drawing does not show."""
    assert module_cycles(PACKAGE) == []


def test_the_drawing_in_architecture_md_is_this_map():
    """docs/architecture.md draws the layers top first, one line per layer, each line's
    units separated by commas, between the markers; it must be LAYERS read top down."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = re.search(r"<!-- layers -->\n```\n(.*?)```\n<!-- /layers -->", text, re.S)
    assert block, "docs/architecture.md has no layer drawing between <!-- layers --> markers"
    drawn = []
    for line in block.group(1).splitlines():
        names = line.split("  ")[0].strip()
        if names:
            drawn.append({n.strip().rstrip("/").removesuffix(".py")
                          for n in names.split(",")})
    assert drawn == list(reversed(LAYERS))


# ---------------------------------------------------------------- the checker can fail


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "agentstate"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__", "bundled_skills"))
    return root


def _plant(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_a_planted_upward_import_inside_a_function_is_caught(tmp_path):
    root = _copy(tmp_path)
    assert violations(root) == []
    _plant(root / "store" / "db.py", "\n\ndef _planted():\n"
           "    from agentstate.context.resume import build_pack\n    return build_pack\n")
    found = violations(root)
    assert any(p.startswith("store/db.py:") and "store → context: up a layer" in p
               for p in found), found
    assert any(p.startswith("package cycle:") and "store" in p for p in found), found


def test_a_planted_import_under_type_checking_is_caught(tmp_path):
    root = _copy(tmp_path)
    _plant(root / "runs" / "log.py", "\n\nfrom typing import TYPE_CHECKING\n\n"
           "if TYPE_CHECKING:\n    from agentstate.memory import model\n")
    found = violations(root)
    assert any(p.startswith("runs/log.py:") and "runs → memory" in p for p in found), found


def test_a_sideways_import_and_an_unplaced_package_are_caught(tmp_path):
    root = _copy(tmp_path)
    _plant(root / "memory" / "write.py", "\n\nfrom agentstate.tools import policy\n")
    (root / "newpkg").mkdir()
    (root / "newpkg" / "__init__.py").write_text("")
    found = violations(root)
    assert any("memory → tools: sideways" in p for p in found), found
    assert "newpkg: not placed in any layer (tests/test_layers.py LAYERS)" in found


def test_a_module_cycle_inside_a_package_and_a_new_dynamic_import_are_caught(tmp_path):
    root = _copy(tmp_path)
    _plant(root / "skills" / "folder_layout.py",
           "\n\ndef _planted():\n    from agentstate.skills import skill_file\n"
           "    import importlib\n    return importlib.import_module('agentstate.cli')\n")
    # The cycle is every module on a path back to folder_layout: those skill_file imports.
    assert [f"agentstate.skills.{name}" for name in (
        "contract_toml", "file_checks", "folder_layout", "skill_file", "skill_md",
    )] in module_cycles(root)
    assert any("imports agentstate.cli by name" in p for p in violations(root))
