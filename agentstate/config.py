"""Policy lives in `.agentstate/config.toml`, written with tomlkit so comments survive edits.

Reading uses the standard library's tomllib (fast, read-only) and deep-merges the file over
DEFAULTS, so a config written by an older version still works. Each domain validates the
section it owns when it reads it.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput

CONFIG_NAME = "config.toml"

DEFAULTS: dict[str, Any] = {
    "tokens": {"encoding": "cl100k_base", "calibration": 1.0},
    "resume": {"recent_events": 12},
    "principals": {
        "default": "owner",
        "owner": {"read": ["*"], "write": ["*"]},
        "agent": {
            "read": ["repo", "branch:*", "path:*", "run:*"],
            "write": ["run:*", "repo"],
            # An agent cannot claim the user's authority for what it writes.
            "sources": ["model", "tool:*", "file:*", "evt:*"],
        },
    },
    "memory": {"max_chars": 4000, "min_relevance": 0.2},
    "context": {
        "system_file": "",
        "default_budget": 8000,
        "recent_full_events": 8,
        "classes": ["pinned", "task", "catalog", "evidence", "trajectory", "index"],
        # Bounds on what one pack considers (see agentstate.context.sources.ContextSettings).
        "trajectory_window": 40,
        "evidence_events": 30,
        "evidence_memories": 30,
        "catalog_skills": 10,
        "index_reserve": 200,
        "task_items": 25,
        "query_questions": 5,
        "query_words": 40,
        "evidence_terms": 8,
    },
    "tools": {
        "allow": ["git", "make", "pytest", "python", "python3", "ls", "cat", "echo", "true",
                  "false", "grep", "rg", "npm", "cargo", "go", "ruff", "agentstate"],
        "deny": ["rm -rf /", "curl", "wget", "ssh", "scp"],
        "timeout": 600,
        "definitions": [],
    },
}

TEMPLATE = """\
# agentstate policy for this repository. Commit this file; state.db and skills/ stay local.
# Every key is optional: a missing key takes the default shown here.

[tokens]
# tiktoken encoding used for every budget. cl100k_base ships with the tool (works offline).
encoding = "cl100k_base"
# Multiply counts by this for models whose tokenizer is not tiktoken's (e.g. 1.15).
calibration = 1.0

[resume]
# How many recent event refs a resume pack lists.
recent_events = 12

[principals]
# Who reads and writes memory. The principal comes from --as, AGENTSTATE_PRINCIPAL or `default`.
# Scopes: repo, user, run:REF, branch:NAME, path:GLOB; "*" and trailing ":*" are wildcards.
default = "owner"

[principals.owner]
read = ["*"]
write = ["*"]

[principals.agent]
read = ["repo", "branch:*", "path:*", "run:*"]
write = ["run:*", "repo"]
# The sources this principal may claim: an agent cannot write with the user's authority.
sources = ["model", "tool:*", "file:*", "evt:*"]

[memory]
# Longest memory text accepted by the write gate, in characters.
max_chars = 4000
# Hits scoring below this fraction of the best hit are cut by the read gate.
min_relevance = 0.2

[context]
# A file of system instructions, pinned at the top of every context pack ("" for none).
system_file = ""
default_budget = 8000
# The newest N events of the run's trajectory are kept whole; older ones become one line.
recent_full_events = 8
# Priority classes, highest first.
classes = ["pinned", "task", "catalog", "evidence", "trajectory", "index"]
# Bounds on what one pack considers, so assembly costs the same on any store size:
# trajectory_window = 40   # newest events of the run looked at (older: an index hint)
# evidence_events = 30     # event hits from the full-text search (every run)
# evidence_memories = 30   # memory hits through the read gate
# catalog_skills = 10      # matching published skills listed
# index_reserve = 200      # tokens (at most 5% of the budget) kept for the index
# task_items = 25          # newest items per task-state group
# query_questions = 5      # open questions added to the default query
# query_words = 40         # distinct words kept in the default query
# evidence_terms = 8       # the event search uses the query's rarest N terms

[tools]
# The one tool layer (`agentstate exec`, skill tests and scripts) checks these.
# Rules are command prefixes written like command lines ("git", "git push", "rm -rf /"); a
# rule matches when its words are the first words of the command, the first compared by
# program name (/usr/bin/curl matches "curl"). `deny` wins over `allow`; "*" in `allow`
# allows everything not denied. Commands never run through a shell. A guardrail, not a
# sandbox: an allowed interpreter can still do anything you can.
allow = ["git", "make", "pytest", "python", "python3", "ls", "cat", "echo", "true", "false",
         "grep", "rg", "npm", "cargo", "go", "ruff", "agentstate"]
deny = ["rm -rf /", "curl", "wget", "ssh", "scp"]
# Default time limit in seconds (agentstate exec exits 124 when it is reached).
timeout = 600
# Tool definitions shown in the context catalog: [{name = "...", description = "..."}]
# (a name listed here also satisfies a skill's required_tools without being on PATH)
definitions = []
"""


def deep_merge(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(path: Path) -> dict[str, Any]:
    """Defaults merged with the file at `path` (missing file = defaults)."""
    if not path.exists():
        return copy.deepcopy(DEFAULTS)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: not valid TOML ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text") from exc
    return deep_merge(DEFAULTS, data)


def write_default_config(path: Path) -> None:
    """Write the commented default config (tomlkit round-trips it with comments intact)."""
    import tomlkit

    document = tomlkit.parse(TEMPLATE)
    path.write_text(tomlkit.dumps(document), encoding="utf-8")
