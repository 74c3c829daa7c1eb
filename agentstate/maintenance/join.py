"""Joining a repository that already shares state: the store is made on first use.

After `git clone` (or a pull) of a repository whose `.agentstate/` holds what a teammate
committed (`shared/`, perhaps `config.toml`), there is a `.agentstate/` folder but no
database: the database, the skills registry and the key are per clone and never committed.
Every command then does what `agentstate init` would, from what came with the repository
(a committed config.toml is kept as it is), and imports the shared facts, instead of failing
with "run agentstate init first" about a folder the user can see.

The shared folder is read and checked before anything is created: one from a newer
agentstate (an unknown format version or field) stops the command with the reason and
leaves the clone as it was. Composition above the domains (like init): store/ knows nothing
of this.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentstate.errors import AgentStateError, StoreMissing

if TYPE_CHECKING:
    from agentstate.store.db import Store


@dataclass
class Joined:
    """What the first command in a fresh clone did before its own work."""

    root: Path
    created: list[str] = field(default_factory=list)
    imported: int = 0
    contested: int = 0
    tombstoned: int = 0
    skipped: int = 0

    def facts(self) -> str:
        facts = f"{self.imported} shared fact{'' if self.imported == 1 else 's'} imported"
        extra = [f"{n} {what}" for n, what in ((self.contested, "contested"),
                                                (self.tombstoned, "forgotten"),
                                                (self.skipped, "skipped")) if n]
        return facts + (f" ({', '.join(extra)})" if extra else "")

    def summary(self) -> str:
        return (f"set up this clone's store in {self.root} from what came with the "
                f"repository (as `agentstate init` would): {self.facts()}")


def joinable(override: str | Path | None = None, start: Path | None = None) -> Path | None:
    """The `.agentstate` folder that came with the repository but has no database yet."""
    from agentstate.config import CONFIG_NAME
    from agentstate.store.db import DB_NAME, STORE_DIR
    from agentstate.sync.records import SHARED_DIR

    def committed(root: Path) -> bool:
        return root.is_dir() and not (root / DB_NAME).exists() and (
            (root / SHARED_DIR).is_dir() or (root / CONFIG_NAME).is_file())

    explicit = override if override is not None else os.environ.get("AGENTSTATE_DIR")
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if path.name != STORE_DIR:
            path = path / STORE_DIR
        return path if committed(path) else None
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        root = candidate / STORE_DIR
        if (root / DB_NAME).exists():
            return None  # a store up the tree: find_store's business, not ours
        if committed(root):
            return root
    return None


def join(root: Path) -> Joined:
    """Create the store in `root` (a committed `.agentstate` folder) and import its shared
    facts. Nothing is created when the shared folder or config.toml cannot be read."""
    from agentstate.config import CONFIG_NAME, load_settings
    from agentstate.maintenance.init import init_store
    from agentstate.store.db import open_store
    from agentstate.store.principals import environment_principal
    from agentstate.sync import sync
    from agentstate.sync.records import SHARED_DIR
    from agentstate.sync.shared_files import read_folder

    where = f"{root} came with the repository but this clone has no store yet"
    try:
        if (root / CONFIG_NAME).is_file():
            load_settings(root / CONFIG_NAME)
        if (root / SHARED_DIR).is_dir():
            read_folder(root / SHARED_DIR, skip=set())  # the whole folder, before any write
    except AgentStateError as exc:
        raise _reworded(exc, f"{where}, and it cannot be used: {exc.message} (nothing was "
                             "created here)") from exc
    made = init_store(target=root.parent)
    joined = Joined(root=root, created=list(made.created))
    if not (root / SHARED_DIR).is_dir():
        return joined
    store = open_store(root)
    try:
        # A fresh clone joins as whoever opens it: the environment's principal, named here
        # because this runs inside every entry point's store opening, before any --as.
        result = sync(store, do_export=False,
                      principal=environment_principal(store).principal)
    except AgentStateError as exc:
        raise _reworded(exc, f"created the store in {root}, but importing "
                             f"{root / SHARED_DIR} failed: {exc.message}; fix that, then run "
                             "`agentstate sync --import-only`") from exc
    finally:
        store.close()
    joined.imported, joined.contested = result.imported, result.contested
    joined.tombstoned, joined.skipped = result.tombstoned, result.skipped
    return joined


def _reworded(exc: AgentStateError, message: str) -> AgentStateError:
    """The same kind of error (same exit code and code), saying which step failed."""
    try:
        return type(exc)(message, details=exc.details)
    except TypeError:  # a subclass with its own constructor
        plain = AgentStateError(message, details=exc.details)
        plain.exit_code, plain.code = exc.exit_code, exc.code
        return plain


def open_or_join(override: str | Path | None = None, *, start: Path | None = None,
                 migrate: bool = True) -> tuple[Store, Joined | None]:
    """open_store, or — in a clone whose `.agentstate/` came without a database — join first.
    A folder with nothing committed in it (or none at all) still raises StoreMissing."""
    from agentstate.store.db import open_store

    try:
        return open_store(override, start=start, migrate=migrate), None
    except StoreMissing:
        root = joinable(override, start)
        if root is None:
            raise
    joined = join(root)
    return open_store(root, migrate=migrate), joined
