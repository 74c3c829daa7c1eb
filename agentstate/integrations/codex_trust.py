"""What Codex CLI needs before it runs the hooks in a `hooks.json`, and recording it.

Codex (0.171) runs a hook only when both hold:
- the layer holding it is enabled: a project's `.codex/` folder is read only when the user's
  config.toml trusts the project (`[projects."<root>"] trust_level = "trusted"`); `codex exec`
  otherwise skips the project's configuration;
- the hook was reviewed: its `/hooks` review stores, in the user's config.toml,
  `[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:…"`,
  the SHA-256 of the handler's normalised identity (event, matcher, type, command, timeout,
  async) as canonical JSON. A new or changed hook has no matching hash and is skipped,
  silently.

`hooks install codex --trust` records both, for our own entries only, the same way the review
does; `hooks status` reads them back to say whether the hooks will run. This module never
touches anything but those two kinds of keys in the user's Codex config.toml.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.integrations.agent_config import (
    _our_handlers,
    read_settings,
    write_atomic,
)

# Codex's names for hook events in trust keys and hashes.
EVENT_LABELS = {
    "SessionStart": "session_start", "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit", "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use", "PreCompact": "pre_compact", "PostCompact": "post_compact",
    "Stop": "stop", "SubagentStop": "subagent_stop", "PermissionRequest": "permission_request",
}
# Events whose matcher Codex uses (it drops the matcher of the others before hashing).
MATCHER_EVENTS = {"SessionStart", "PreToolUse", "PostToolUse", "PermissionRequest"}
DEFAULT_TIMEOUT_S = 600  # what Codex assumes for a handler without `timeout`


def codex_config_path() -> Path:
    """The user's Codex config: $CODEX_HOME/config.toml, else ~/.codex/config.toml."""
    base = os.environ.get("CODEX_HOME")
    return (Path(base) if base else Path.home() / ".codex") / "config.toml"


def handler_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """The `trusted_hash` Codex's review records for one command handler."""
    timeout = handler.get("timeout", handler.get("timeout_sec"))
    identity_handler: dict[str, Any] = {
        "type": "command", "command": handler.get("command", ""),
        "timeout": max(1, int(timeout)) if isinstance(timeout, int) else DEFAULT_TIMEOUT_S,
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        identity_handler["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": EVENT_LABELS.get(event, event),
                                "hooks": [identity_handler]}
    if matcher is not None and event in MATCHER_EVENTS:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def our_hook_keys(hooks_path: Path) -> list[dict[str, str]]:
    """Our handlers in a Codex hooks.json: event, trust key and the hash a review records."""
    data = read_settings(hooks_path)
    where = str(hooks_path.resolve())
    found = []
    for event, groups in (data.get("hooks") or {}).items():
        for group_index, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            ours = _our_handlers([group], "codex")
            for handler_index, handler in enumerate(group["hooks"]):
                if not any(handler is o for o in ours):
                    continue
                matcher = group.get("matcher") if isinstance(group.get("matcher"), str) else None
                label = EVENT_LABELS.get(event, event)
                found.append({"event": event,
                              "key": f"{where}:{label}:{group_index}:{handler_index}",
                              "hash": handler_hash(event, matcher, handler)})
    return found


def _load(config_path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        text = config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InvalidInput(f"{config_path} is not valid TOML ({exc}); fix it first, nothing "
                           "was changed") from exc


def _project_key(root: Path) -> str:
    return str(root.resolve())


def codex_trust_status(root: Path, hooks_path: Path, *, project_scope: bool = True,
                       config_path: Path | None = None) -> dict[str, Any]:
    """Will Codex run our hooks in `hooks_path`? Project trust (for the project's file),
    each hook's review, and `[features] hooks = false`."""
    config_path = config_path or codex_config_path()
    try:
        doc = _load(config_path).unwrap()
        hooks = our_hook_keys(hooks_path)
    except InvalidInput as exc:
        return {"config": str(config_path), "error": exc.message, "will_run": False,
                "reasons": [exc.message]}
    projects = doc.get("projects") if isinstance(doc.get("projects"), dict) else {}
    entry = projects.get(_project_key(root)) or {}
    trusted = isinstance(entry, dict) and entry.get("trust_level") == "trusted"
    states = ((doc.get("hooks") or {}).get("state") or {}) if isinstance(
        doc.get("hooks"), dict) else {}
    reviewed, unreviewed, modified = [], [], []
    for hook in hooks:
        state = states.get(hook["key"]) if isinstance(states, dict) else None
        recorded = state.get("trusted_hash") if isinstance(state, dict) else None
        disabled = isinstance(state, dict) and state.get("enabled") is False
        if disabled or recorded is None:
            unreviewed.append(hook["event"])
        elif recorded != hook["hash"]:
            modified.append(hook["event"])
        else:
            reviewed.append(hook["event"])
    features = doc.get("features") if isinstance(doc.get("features"), dict) else {}
    reasons = []
    if features.get("hooks") is False:
        reasons.append(f"[features] hooks = false in {config_path}")
    if project_scope and not trusted:
        reasons.append(f"the project {_project_key(root)} is not trusted in {config_path}")
    if unreviewed:
        reasons.append(f"not reviewed: {', '.join(unreviewed)}")
    if modified:
        reasons.append(f"changed since their review: {', '.join(modified)}")
    return {"config": str(config_path), "project_trusted": trusted, "reviewed": reviewed,
            "unreviewed": unreviewed, "modified": modified,
            "will_run": bool(hooks) and not reasons, "reasons": reasons}


def trust_codex_hooks(root: Path, hooks_path: Path, *, project_scope: bool = True,
                      config_path: Path | None = None) -> dict[str, Any]:
    """Record in the user's Codex config what Codex's own trust prompt and `/hooks` review
    would: the project as trusted (project scope) and the hash of each of our hooks. Other
    keys, comments and foreign hooks' states are left as they are. Returns the path and one
    line per key written."""
    import tomlkit

    config_path = config_path or codex_config_path()
    doc = _load(config_path)
    written: list[str] = []
    if project_scope:
        projects = doc.get("projects")
        if projects is None:
            projects = tomlkit.table(is_super_table=True)
            doc["projects"] = projects
        key = _project_key(root)
        entry = projects.get(key)
        if entry is None:
            entry = tomlkit.table()
            projects[key] = entry
        if entry.get("trust_level") != "trusted":
            entry["trust_level"] = "trusted"
            written.append(f'[projects.{json.dumps(key)}] trust_level = "trusted"')
    hooks_table = doc.get("hooks")
    if hooks_table is None:
        hooks_table = tomlkit.table(is_super_table=True)
        doc["hooks"] = hooks_table
    states = hooks_table.get("state")
    if states is None:
        states = tomlkit.table(is_super_table=True)
        hooks_table["state"] = states
    for hook in our_hook_keys(hooks_path):
        state = states.get(hook["key"])
        if state is None:
            state = tomlkit.table()
            states[hook["key"]] = state
        if state.get("trusted_hash") != hook["hash"]:
            state["trusted_hash"] = hook["hash"]
            written.append(f'[hooks.state.{json.dumps(hook["key"])}] trusted_hash = '
                           f'"{hook["hash"]}"')
    if written:
        write_atomic(config_path, tomlkit.dumps(doc))
    return {"config": str(config_path), "written": written}
