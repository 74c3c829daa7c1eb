"""`agentstate doctor`: the storage checks (agentstate.store.integrity) plus the domains': the
skills registry (a git repository; interrupted publishes, git locks, untagged commits; the
database mirror against the tags) and the memory/event search indexes. Nothing is changed;
`agentstate.maintenance.repair` mends what can be mended.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from agentstate.config import Settings
from agentstate.errors import AgentStateError
from agentstate.store.db import DB_NAME, SKILLS_DIR
from agentstate.store.integrity import FAIL, OK, WARN, Check, Report, storage_checks

REPAIR_HINT = "run `agentstate doctor --repair`"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _read_only(root: Path) -> sqlite3.Connection | None:
    try:
        return sqlite3.connect(f"file:{root / DB_NAME}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error:
        return None


def check_skills_repo(root: Path) -> Check:
    path = root / SKILLS_DIR
    if not path.is_dir():
        return Check("skills", FAIL, f"{path} missing (run `agentstate init`: it recreates the "
                                     "registry and restores the shipped skills)")
    top = _git(path, "rev-parse", "--show-toplevel")
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != path.resolve():
        return Check("skills", FAIL, f"{path} is not its own git repository (move it aside and "
                                     "run `agentstate init`)")
    head = _git(path, "rev-parse", "--short", "HEAD").stdout.strip() or "(no commits)"
    # --no-optional-locks: the doctor must not take git's index lock itself.
    status = _git(path, "--no-optional-locks", "status", "--porcelain").stdout
    dirty = [line[3:] for line in status.splitlines() if line.strip()]
    tags = [t for t in _git(path, "tag", "--list").stdout.splitlines() if t]
    data = {"head": head, "dirty": dirty, "tags": len(tags)}
    if dirty:
        # Drafts and proposed candidates live in the work tree until they are published.
        return Check("skills", OK, f"git repository at {head}, {len(tags)} tag(s); "
                                   f"{len(dirty)} unpublished draft path(s): "
                                   f"{', '.join(dirty[:5])}", data)
    return Check("skills", OK, f"git repository at {head}, clean, {len(tags)} tag(s)", data)


def check_publishing(root: Path) -> Check:
    """Interrupted publishes (journal rows), git lock files, untagged commits at HEAD."""
    from agentstate.skills.repair import inspect_publishing

    path = root / SKILLS_DIR
    if not (path / ".git").exists():
        return Check("publish", WARN, "not checked: no skills registry")
    conn = _read_only(root)
    try:
        state = inspect_publishing(path, conn)
    except (sqlite3.Error, AgentStateError, OSError) as exc:
        return Check("publish", WARN, f"not checked: {exc}")
    finally:
        if conn is not None:
            conn.close()
    problems = state.problems
    if problems:
        return Check("publish", FAIL, "; ".join(problems[:3]) + f" ({REPAIR_HINT})",
                     {"problems": problems})
    return Check("publish", OK, "no interrupted publish, no git lock, every commit tagged")


def check_search_indexes(root: Path) -> Check:
    """FTS5 integrity of the memory and event indexes.

    FTS5's integrity-check is phrased as an INSERT, so it needs a writable connection; it runs
    inside a transaction that is rolled back, leaving the store exactly as it was.
    """
    from agentstate.memory.indexes import check_indexes

    try:
        conn = sqlite3.connect(str(root / DB_NAME), isolation_level=None, timeout=10)
    except sqlite3.Error as exc:
        return Check("search", WARN, f"not checked: {exc}")
    try:
        conn.execute("BEGIN")
        problems = check_indexes(conn)
    except sqlite3.Error as exc:
        return Check("search", WARN, f"not checked: {exc}")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
    if any("readonly" in p for p in problems):
        return Check("search", WARN, "not checked: the store is read-only")
    if problems:
        return Check("search", FAIL, "; ".join(problems[:3]), {"problems": problems})
    return Check("search", OK, "memory and event full-text indexes consistent")


def check_registry_mirror(root: Path, settings: Settings) -> Check:
    """Every released skill version in the database has its tag at the recorded commit/tree,
    every release tag has a row, and the shipped skills are installed."""
    from agentstate.skills.history import check_registry
    from agentstate.store.db import LazyDatabase, Store

    if not (root / SKILLS_DIR / ".git").exists():
        return Check("registry", WARN, "not checked: no skills registry")
    conn = _read_only(root)
    if conn is None:
        return Check("registry", WARN, "not checked: the database cannot be opened")
    store = Store(root=root, db=LazyDatabase(conn), settings=settings)  # type: ignore[arg-type]
    try:
        problems = check_registry(store)
    except (sqlite3.Error, AgentStateError, OSError) as exc:
        return Check("registry", WARN, f"not checked: {exc}")
    finally:
        conn.close()
    if problems:
        return Check("registry", FAIL, "; ".join(problems[:3]) + f" ({REPAIR_HINT})",
                     {"problems": problems})
    return Check("registry", OK, "database mirror matches the registry's tags")


def check_skill_tools(root: Path, settings: Settings) -> Check:
    """Published skills whose required tools cannot run here (a warning: they are listed
    as unavailable and never offered, but a user should know why)."""
    from agentstate.skills.catalog import list_catalog
    from agentstate.store.db import LazyDatabase, Store

    if not (root / SKILLS_DIR / ".git").exists():
        return Check("skill-tools", WARN, "not checked: no skills registry")
    conn = _read_only(root)
    if conn is None:
        return Check("skill-tools", WARN, "not checked: the database cannot be opened")
    store = Store(root=root, db=LazyDatabase(conn), settings=settings)  # type: ignore[arg-type]
    try:
        gone = [e for e in list_catalog(store) if e.unavailable]
    except (sqlite3.Error, AgentStateError, OSError) as exc:
        return Check("skill-tools", WARN, f"not checked: {exc}")
    finally:
        conn.close()
    if gone:
        return Check("skill-tools", WARN,
                     f"{len(gone)} skill(s) unavailable: " + "; ".join(
                         f"{e.ref}: {e.unavailable}" for e in gone[:3]),
                     {"unavailable": [{"skill": e.ref, "reason": e.unavailable}
                                      for e in gone]})
    return Check("skill-tools", OK, "every published skill's required tools can run here")


def check_restore_leftovers(root: Path) -> Check:
    """Folders an interrupted restore left: a staging copy holds a backup's whole database
    (text purged since included), and one in the repository root is what `git add -A` would
    commit."""
    from agentstate.maintenance.restore import restore_leftovers

    found = restore_leftovers(root)
    if not found:
        return Check("restore", OK, "no leftovers of an interrupted restore")
    names = ", ".join(f"{p.parent.name}/{p.name}/" for p in found)
    return Check("restore", WARN, f"an interrupted restore left {names}: {REPAIR_HINT} "
                                  "removes them", {"leftovers": [str(p) for p in found]})


def check_restore_copies(root: Path, settings: Settings) -> Check:
    """The stores `restore --force` replaced and kept inside this one: how many, where, and
    the room they take (each is a whole copy of an older store)."""
    from agentstate.maintenance.restore import aside_copies

    copies = aside_copies(root)
    keep = settings.retention.keep_restore_copies
    total = sum(copy.bytes for copy in copies)
    data = {"copies": [{"path": c.path, "bytes": c.bytes} for c in copies], "bytes": total,
            "keep": keep}
    if not copies:
        return Check("restore-copies", OK, "no replaced store kept aside by restore", data)
    where = ", ".join(Path(c.path).name + "/" for c in copies)
    detail = (f"{len(copies)} replaced store(s) kept aside by restore, "
              f"{total / 1e6:.1f} MB: {where}")
    if len(copies) > keep:
        return Check("restore-copies", WARN, f"{detail} — more than [retention] "
                     f"keep_restore_copies = {keep}: {REPAIR_HINT} removes the oldest", data)
    return Check("restore-copies", OK, detail, data)


def check_sandbox(root: Path, settings: Settings) -> Check:
    """Is there a sandbox under the tool layer (bubblewrap), or is the policy the only line?"""
    from agentstate.tools.policy import resolve_program, search_path
    from agentstate.tools.sandbox import choose_sandbox

    tools = settings.tools
    work_tree = root.parent
    bwrap = resolve_program("bwrap", search_path(tools, work_tree), work_tree)
    choice = choose_sandbox(tools.sandbox, bwrap)
    data = {"sandbox": choice.kind, "setting": tools.sandbox, "network": tools.network}
    if choice.kind == "bwrap" and bwrap is None:
        return Check("sandbox", FAIL, '[tools] sandbox = "bwrap" but bwrap is not on the '
                     "[tools] path: every command is refused (install bubblewrap)", data)
    if choice.kind == "none":
        return Check("sandbox", WARN, str(choice.note), data)
    network = "network allowed" if tools.network else "no network"
    return Check("sandbox", OK, f"commands run under bubblewrap ({bwrap}): writes only in the "
                 f"repository, {network}", data)


def diagnose(root: Path) -> Report:
    """Run every check against the store at `root` (the .agentstate directory)."""
    checks, settings = storage_checks(root)
    checks.insert(-2, check_skills_repo(root))
    checks.append(check_restore_leftovers(root))
    checks.append(check_restore_copies(root, settings))
    if not any(c.status == FAIL and c.name in ("database", "integrity") for c in checks):
        checks += [check_search_indexes(root), check_publishing(root),
                   check_registry_mirror(root, settings), check_skill_tools(root, settings)]
    checks.append(check_sandbox(root, settings))
    checks.append(check_dense_signal(root))
    checks.append(check_install())
    return Report(store=str(root), checks=checks)


# setuptools' default editable install puts an import finder in a .pth file: every Python
# process imports it at start-up (with pathlib, importlib.util, urllib.parse…), and that
# process includes every hook. Measured: `python -c pass` 0.09–0.14 s → 0.38 s.
_EDITABLE_FINDER = "__editable___agentstate_cli"
REINSTALL_HINT = ("reinstall with `pip install --config-settings editable_mode=compat -e PATH` "
                  "(or `pip install PATH`)")


def check_install() -> Check:
    """How agentstate is installed, where that costs every hook its start-up."""
    import sys

    finders = sorted(name for name in sys.modules if name.startswith(_EDITABLE_FINDER))
    if finders:
        return Check("install", WARN, "editable through setuptools' import finder, which every "
                     "Python process loads at start (each hook pays ~0.1–0.3 s for it): "
                     + REINSTALL_HINT, {"finder": finders[0]})
    return Check("install", OK, "no import finder at start-up", {"finder": None})


def check_dense_signal(root: Path) -> Check:
    """Which retrieval signal searches use: lexical only (the dense extra not installed) or
    lexical + dense, with how many events have a vector of the model and how many have one
    of another model (to be embedded again by the next search). Never a failure: the
    lexical path is the working default."""
    from agentstate.memory.dense import vector_models
    from agentstate.memory.dense_model import signal

    active = signal()
    counts: dict[str, int] = {}
    conn = _read_only(root)
    if conn is not None:
        try:
            counts = vector_models(conn)
        except sqlite3.Error:
            counts = {}  # a store older than the vectors table: nothing embedded yet
        finally:
            conn.close()
    detail = active.detail
    if active.dense:
        current = counts.get(active.model, 0)
        stale = sum(n for model, n in counts.items() if model != active.model)
        detail += f"; {current} event vector(s)"
        if stale:
            detail += f", {stale} of another model (embedded again by the next search)"
    data = {"dense": active.dense, "model": active.model, "vectors": counts}
    return Check("retrieval", OK, detail, data)


__all__ = ["FAIL", "OK", "WARN", "Check", "Report", "diagnose"]
