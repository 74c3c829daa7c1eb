"""`doctor`'s checks of the agent hooks installed in the client's settings.

Apart from agent_config.py (which writes and reads those settings) because the Codex checks
ask codex_trust.py, which builds on agent_config.py: kept there, the two imported each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstate.integrations.agent_config import agent_hooks_status, settings_path
from agentstate.integrations.codex_trust import codex_trust_status
from agentstate.store.integrity import FAIL, OK, WARN, Check


def agent_hook_checks(root: Path) -> list[Any]:
    """`doctor`'s checks of the installed Claude Code and Codex hooks (project and user
    settings): a command whose program this shell would not find fails (the client's every
    hook call would fail, out of sight, recording nothing); Codex hooks it will skip (an
    untrusted project, unreviewed hooks) warn."""
    checks = []
    for agent in ("claude-code", "codex"):
        for scope in ("project", "user"):
            path = settings_path(agent, scope, root)
            status = agent_hooks_status(agent, path)
            if not status["events"]:
                continue
            name = f"hooks:{agent}:{scope}"
            if status["unresolved"]:
                programs = ", ".join(status["unresolved"])
                checks.append(Check(name, FAIL, f"{path}: the hook command's program "
                                    f"{programs} is not found, so every hook call fails and "
                                    f"nothing is recorded; fix: `agentstate hooks install "
                                    f"{agent}{' --user' if scope == 'user' else ''}` from a "
                                    "shell where agentstate runs (it writes the absolute path)",
                                    {"unresolved": status["unresolved"]}))
                continue
            if agent == "codex":
                trust = codex_trust_status(root, path, project_scope=scope == "project")
                if not trust["will_run"]:
                    checks.append(Check(name, WARN, f"{path}: Codex will skip these hooks: "
                                        + "; ".join(trust["reasons"]) + "; fix: `agentstate "
                                        "hooks install codex --trust` or codex's /hooks",
                                        {"reasons": trust["reasons"]}))
                    continue
            checks.append(Check(name, OK, f"{path}: {len(status['events'])} event(s), the "
                                "command resolves"))
    return checks
