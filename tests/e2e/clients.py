"""The real agent clients the end-to-end tests drive, pinned in this one place.

To move a pin: change the version below, run `.venv/bin/pytest -m e2e -q` (the first run
installs the new version into the cache, next to the old one), read what changed in the
captured payloads (tests/fixtures/{claude_code,codex}/real-<version>/, see
tests/e2e/capture.py) and update docs/integrations.md's table of hooks per client version.
`npm view @anthropic-ai/claude-code version` / `npm view @openai/codex version` show the
newest releases.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Client:
    name: str  # our target name: `hooks install NAME`, `import NAME`
    package: str  # the npm package
    version: str
    binary: str  # the command the package installs in node_modules/.bin

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def cache_name(self) -> str:
        return f"{self.package.rsplit('/', 1)[-1]}@{self.version}"


CLAUDE_CODE = Client("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = Client("codex", "@openai/codex", "0.171.0", "codex")
CLIENTS = {c.name: c for c in (CLAUDE_CODE, CODEX)}
