"""The commented `.agentstate/config.toml` that `init` writes: every key with its default
and what it does. The defaults themselves live in one place, config.py's section fields; a test
parses this text and compares, so the two cannot drift."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """\
# agentstate policy for this repository. Commit this file; state.db and skills/ stay local.
# Every key is optional: a missing key takes the default shown here. Every command checks
# the whole file when it reads it: a wrong value or a misspelt key is a one-line error.

[tokens]
# tiktoken encoding used for every budget. cl100k_base ships with the tool (works offline).
encoding = "cl100k_base"
# Multiply counts by this for models whose tokenizer is not tiktoken's (e.g. 1.15).
calibration = 1.0

[resume]
# How many recent event refs a resume pack lists.
recent_events = 12

[principals]
# Who reads and writes memory: AGENTSTATE_PRINCIPAL, else `default` -- but `agent` whenever
# a coding agent (Claude Code, Codex, Gemini CLI, ...) or a hook runs the command. --as (and,
# under an agent, AGENTSTATE_PRINCIPAL) may only name a principal with no more rights.
# Scopes: repo, user, run:REF, branch:NAME, path:GLOB; "*" and trailing ":*" are wildcards.
default = "owner"

[principals.owner]
read = ["*"]
write = ["*"]
# Owner-only operations: approve (publish a skill as approved), revoke (a skill another
# principal made), purge (memories stated by, or vouched for by, the user).
actions = ["approve", "revoke", "purge"]

[principals.agent]
read = ["repo", "branch:*", "path:*", "run:*"]
write = ["run:*", "repo"]
# The sources this principal may claim: an agent cannot write with the user's authority.
sources = ["model", "tool:*", "file:*", "evt:*"]
actions = []

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
# evidence_events = 30     # least event hits from the full-text search (grows with the budget)
# evidence_memories = 30   # memory hits through the read gate
# catalog_skills = 10      # matching published skills listed
# index_reserve = 200      # tokens (at most 5% of the budget) kept for the index
# task_items = 25          # newest items per task-state group
# query_questions = 5      # open questions added to the default query
# query_words = 40         # distinct words kept in the default query
# evidence_terms = 24      # the event search uses the query's rarest N terms

[tools]
# The one tool layer (`agentstate exec`, skill tests and scripts) checks these.
# Rules are command prefixes written like command lines ("git", "git push", "rm -rf /"); a
# rule matches when its words are the first words of the command, the first compared by
# program name (/usr/bin/curl matches "curl"). `deny` wins over `allow`; "*" in `allow`
# allows everything not denied. Commands never run through a shell. A guardrail, not a
# sandbox: an allowed interpreter can still do anything you can.
allow = ["git", "make", "pytest", "python", "python3", "ls", "cat", "echo", "true", "false",
         "grep", "rg", "sed", "find", "npm", "node", "cargo", "go", "ruff", "uv", "tox",
         "agentstate"]
# Deny rules also match through wrappers (env, nice, timeout, sudo, busybox, xargs, sh -c…);
# rm's options are compared as a set, so "rm -rf /" also denies rm -fr /, rm -r -f //.
deny = ["rm -rf /", "curl", "wget", "ssh", "scp"]
# Where programs are looked up, in order; your shell's PATH is never used, so an agent cannot
# put its own `git` first. "~/" is your home; relative entries are inside the repository.
# Add e.g. "~/.cargo/bin" or "~/.local/bin" for tools installed there.
path = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin",
        "/opt/homebrew/bin", ".venv/bin"]
# "auto" (bubblewrap where it is installed and works) or "bwrap" (refuse to run without
# it): file system read-only except the repository (not .agentstate/, .git/hooks,
# .git/config), private /tmp, no network unless `network = true`. "none": no sandbox.
sandbox = "auto"
network = false
# Commands start with PATH (= `path` above), HOME, locale, TERM, TMPDIR, USER and LOGNAME
# only; list more here: "NAME" passes your value, "NAME=value" sets one. Variables that run
# code or choose an editor, pager or config (LD_*, GIT_*, EDITOR, *_WRAPPER…) are refused.
env = []
# Default time limit in seconds (agentstate exec exits 124 when it is reached).
timeout = 600
# Tool definitions shown in the context catalog: [{name = "...", description = "..."}]
# (a name listed here also satisfies a skill's required_tools without being on PATH)
definitions = []

[skills]
# Size limits checked by `skill validate` and `skill publish` (bytes): larger is refused.
# max_file_bytes = 1048576   # any one file of a skill
# max_skill_bytes = 5242880  # all the files of one skill together
# Releases `skill pull` brings from a remote pass the publish checks here; true makes every
# one of them wait for `skill pull --approve` (false: only those the checks flag, or pulled
# by a principal that may not approve).
# approve_pulled = false

[retention]
# `agentstate gc` removes events of finished runs older than this many days (events that a
# memory or a stored context pack cites keep their ref, kind and a hash). 0 keeps everything.
# keep_events_days = 0
# `restore --force` keeps the store it replaced inside the new one (before-restore-STAMP/):
# the newest N such copies are kept, older ones removed. 0 keeps none.
# keep_restore_copies = 2
"""


def write_default_config(path: Path) -> None:
    """Write the commented default config as it stands in TEMPLATE (what `config set` later
    edits with tomlkit, comments intact). Parsing it here first would return the same text,
    at a quarter of `init`'s time."""
    path.write_text(TEMPLATE, encoding="utf-8")
