"""agentstate: per-repository state for coding agents.

The package's face: the functions of `agentstate.api` (open a store, resume, context,
remember / recall / forget, log, skills) are reachable as `agentstate.NAME`, imported on
first use. Every `import agentstate.…` runs this file, hooks included, and a hook starts as
a process whose start-up is measured: it must not pay for the library it does not use.
"""

from __future__ import annotations

from agentstate.distribution import DISTRIBUTION, __version__, install_hint

# `typing` only for the type checker: every hook process imports this file, and `typing` is
# a measurable share of a hook's start-up (mypy reads any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The names `agentstate.api` exports (its `__all__`; tests/test_api.py checks they agree).
# None is the name of a subpackage (`agentstate.context` is the package, so the function is
# `context_pack`): an imported submodule would hide a function of the same name.
API_NAMES = frozenset({
    "open_store", "resume_pack", "context_pack", "remember", "recall", "forget",
    "start_run", "log_event", "list_skills", "load_skill",
})

__all__ = ["DISTRIBUTION", "__version__", "install_hint", *sorted(API_NAMES)]


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        from agentstate import api

        return getattr(api, name)
    raise AttributeError(f"module 'agentstate' has no attribute {name!r}")
