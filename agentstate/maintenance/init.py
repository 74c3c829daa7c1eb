"""`agentstate init`: the store, the skills registry and the shipped skills.

Running it again creates whatever part is missing and changes nothing else. A deleted or
emptied registry is created again and the shipped skills are restored into it at the versions
the database records (see agentstate.skills.shipped: a revoked version stays revoked).
"""

from __future__ import annotations

from pathlib import Path

from agentstate.config import CONFIG_NAME
from agentstate.store.init import InitResult, create_store


def init_store(
    start: Path | None = None,
    target: Path | None = None,
    override: str | Path | None = None,
) -> InitResult:
    """Create whatever part of `.agentstate/` is missing (see store.init.create_store for
    where; a brand-new store is staged and renamed into place, skills included)."""
    return create_store(start=start, target=target, override=override, extra=_extra)


def _extra(root: Path, result: InitResult) -> None:
    _skills(root, result)
    if CONFIG_NAME in result.created:  # a config init wrote now, never a committed one
        added = project_tools(root / CONFIG_NAME, root.parent)
        if added:
            result.created.append(f"{CONFIG_NAME} [tools]: {added}")
    from agentstate.sync.gitsetup import INFO_ATTRIBUTES, ensure_gitattributes

    # The shared folder (agentstate sync) merges by union. The rule goes to this clone's own
    # .git/info/attributes, never to a tracked file a teammate's init would also create.
    if ensure_gitattributes(root):
        result.created.append(f"{INFO_ATTRIBUTES} (shared/*.jsonl merge=union)")


def _skills(root: Path, result: InitResult) -> None:
    from agentstate.skills.registry import ensure_registry
    from agentstate.skills.shipped import install_into

    if ensure_registry(root / "skills"):
        result.created.append("skills/ (git repository)")
    installed = install_into(root)
    for ref in installed.restored:
        result.created.append(f"skill {ref} (shipped, restored into the registry)")
    for ref in installed.published:
        result.created.append(f"skill {ref} (shipped, published)")


# What a project's usual test and lint commands start, by the file that shows the kind of
# project: (marker file, programs to allow, [tools] path entries where they are installed).
# The default allow list already has git, make, pytest, python, npm, node, cargo, go, ruff,
# uv and tox; these are the rest of each ecosystem's everyday commands.
_PROJECT_KINDS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("pyproject.toml", ("mypy", "nox", "pre-commit"), ()),
    ("setup.py", ("mypy", "nox"), ()),
    ("tox.ini", ("tox",), ()),
    ("package.json", ("npx",), ("node_modules/.bin",)),
    ("pnpm-lock.yaml", ("pnpm",), ()),
    ("yarn.lock", ("yarn",), ()),
    ("go.mod", ("gofmt", "golangci-lint"), ("/usr/local/go/bin", "~/go/bin")),
    ("Cargo.toml", ("rustc", "rustfmt"), ("~/.cargo/bin",)),
    ("justfile", ("just",), ()),
)

# Node test and lint tools, allowed when package.json names them (a dependency or a script).
_NODE_TOOLS = ("eslint", "prettier", "tsc", "typescript", "jest", "vitest", "mocha", "biome")


def project_tools(config: Path, work_tree: Path) -> str:
    """Widen the fresh config's [tools] so the project's own test and lint commands run
    (`exec -- npx eslint .`, `exec -- cargo test` with cargo in ~/.cargo/bin): the programs
    and install directories of each kind of project found at the work-tree root. Returns
    what was added ("" when nothing). Only names are added; deny rules still win."""
    import tomlkit

    allow: list[str] = []
    path: list[str] = []
    found: list[str] = []
    for marker, programs, dirs in _PROJECT_KINDS:
        if (work_tree / marker).is_file():
            found.append(marker)
            allow += [p for p in programs if p not in allow]
            path += [d for d in dirs if d not in path]
    if "package.json" in found:
        # `npx eslint .` is checked as eslint too (npx runs another program): allow the
        # project's own Node test and lint tools that package.json names.
        try:
            manifest = (work_tree / "package.json").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            manifest = ""
        allow += [tool for tool in _NODE_TOOLS
                  if (f'"{tool}"' in manifest or f'"{tool} ' in manifest) and tool not in allow]
    if not found:
        return ""
    document = tomlkit.parse(config.read_text(encoding="utf-8"))
    tools = document["tools"]
    have_allow = [str(x) for x in tools["allow"]]
    have_path = [str(x) for x in tools["path"]]
    new_allow = [p for p in allow if p not in have_allow]
    new_path = [d for d in path if d not in have_path]
    if not new_allow and not new_path:
        return ""
    for program in new_allow:
        tools["allow"].append(program)
    for entry in new_path:
        tools["path"].append(entry)
    config.write_text(tomlkit.dumps(document), encoding="utf-8")
    parts = [f"allow {', '.join(new_allow)}"] if new_allow else []
    if new_path:
        parts.append(f"path {', '.join(new_path)}")
    return f"{'; '.join(parts)} (found {', '.join(found)})"
