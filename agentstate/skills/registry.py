"""The skills registry: `.agentstate/skills/` is its own git repository.

This module is the only user of GitPython (imported lazily: it is slow to import).
"""

from __future__ import annotations

from pathlib import Path


def ensure_registry(path: Path) -> bool:
    """Create the registry repository if it is missing. Returns True when it created one."""
    if (path / ".git").exists():
        return False
    import git

    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "agentstate")
        cfg.set_value("user", "email", "agentstate@localhost")
    readme = path / "README.md"
    readme.write_text(
        "# agentstate skills registry\n\nOne folder per skill; each release is a commit tagged "
        "`<name>/v<N>`. Managed by `agentstate skill`.\n",
        encoding="utf-8",
    )
    repo.index.add(["README.md"])
    repo.index.commit("registry: initialise")
    return True
