"""Tables owned by the skills domain. Append new migrations; never rename shipped ones.

- `skill_versions` mirrors the registry (`.agentstate/skills/`, a git repository): one row per
  (name, version). A `candidate` row has no commit yet; `published` has the commit, the git
  tree hash of the skill's folder and the tag `<name>/v<N>`; `revoked` keeps all of that plus
  who revoked it and why (history is never deleted). The catalog columns (description,
  triggers) are copied here so discovery never touches git.
  The commit column is `commit_sha` because `commit` is an SQL keyword.
- `skill_loads` is the skill-instance → skill-version link: every `skill load` (run, version,
  tree, the `skill_load` event).
- `skill_tests` keeps every acceptance run (per tree hash), so publish can tell whether the
  exact content it is about to commit has passed.
- `tool_calls` is the one tool layer's log (allowed or denied, exit code, duration, digest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils costs ~100 ms at start-up
    import sqlite_utils


def m201_skills_registry(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE skill_versions (
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            status TEXT NOT NULL,                  -- candidate | published | revoked
            commit_sha TEXT,                       -- registry commit (NULL for a candidate)
            tree TEXT,                             -- git tree hash of <name>/ (content identity)
            tag TEXT,                              -- <name>/v<N>
            description TEXT NOT NULL DEFAULT '',
            triggers TEXT NOT NULL DEFAULT '[]',   -- JSON list of phrases
            approver TEXT,                         -- who approved an untrusted candidate
            reasons TEXT NOT NULL DEFAULT '[]',    -- JSON: why approval was needed / refusals
            provenance TEXT NOT NULL DEFAULT '{}', -- JSON: origin, run, events, sources
            created TEXT NOT NULL,
            published TEXT,
            revoked TEXT,
            revoked_by TEXT,
            revoke_reason TEXT,
            PRIMARY KEY (name, version)
        );
        CREATE INDEX skill_versions_status ON skill_versions(status, name);
        CREATE TABLE skill_loads (
            id TEXT PRIMARY KEY,
            run TEXT REFERENCES runs(id),
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            tree TEXT NOT NULL,
            event TEXT REFERENCES events(id),
            ts TEXT NOT NULL,
            FOREIGN KEY (name, version) REFERENCES skill_versions(name, version)
        );
        CREATE INDEX skill_loads_version ON skill_loads(name, version);
        CREATE INDEX skill_loads_run ON skill_loads(run);
        CREATE TABLE skill_tests (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            tree TEXT NOT NULL,
            passed INTEGER NOT NULL,
            results TEXT NOT NULL DEFAULT '[]',    -- JSON: one entry per acceptance command
            run TEXT,
            ts TEXT NOT NULL
        );
        CREATE INDEX skill_tests_name_tree ON skill_tests(name, tree);
        CREATE TABLE tool_calls (
            id TEXT PRIMARY KEY,
            event TEXT REFERENCES events(id),      -- NULL when no run was active
            run TEXT REFERENCES runs(id),
            command TEXT NOT NULL,                 -- JSON argv (secrets redacted)
            program TEXT NOT NULL,
            allowed INTEGER NOT NULL,
            reason TEXT,                           -- why denied / not found / timed out
            exit_code INTEGER,
            duration_ms INTEGER,
            timed_out INTEGER NOT NULL DEFAULT 0,
            output_digest TEXT,                    -- sha256 of the full output
            excerpt TEXT,                          -- head and tail, secrets redacted
            cwd TEXT,
            purpose TEXT,                          -- e.g. skill:NAME acceptance
            ts TEXT NOT NULL
        );
        CREATE INDEX tool_calls_run ON tool_calls(run);
        CREATE INDEX tool_calls_event ON tool_calls(event);
        """
    )



def m202_publish_journal(db: sqlite_utils.Database) -> None:
    """`skill_publish_journal`: a publish's intent, written before git is touched and deleted
    in the same transaction as its release rows. A row left behind is an interrupted publish
    (see agentstate.skills.journal): the next command that takes the registry lock finishes
    it (tags made, rows missing) or rolls it back (nothing visible yet)."""
    run_script(
        db,
        """
        CREATE TABLE skill_publish_journal (
            id TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,                  -- the publishing process
            pid_start TEXT,                        -- its start time (a reused pid differs)
            host TEXT NOT NULL,
            started TEXT NOT NULL,
            previous TEXT NOT NULL,                -- registry HEAD before the publish
            commit_sha TEXT,                       -- the release commit, once built
            message TEXT NOT NULL,
            releases TEXT NOT NULL                 -- JSON: name, version, tree, tag, mode, row
        );
        """
    )


def m054_skill_changes(db: sqlite_utils.Database) -> None:
    """One row counting every change to `skill_versions` (a version added, published,
    revoked, renumbered, its description or triggers rewritten, a row deleted), kept by
    triggers: a long-lived process keeps the catalog's scores for a task while the count is
    what it was when it scored them (skills/catalog.py; issue 24), as m043 does for memories."""
    run_script(db, "CREATE TABLE skill_changes (id INTEGER PRIMARY KEY CHECK (id = 1), "
                   "changes INTEGER NOT NULL);\n"
                   "INSERT INTO skill_changes (id, changes) VALUES (1, 0);\n")
    for op in ("INSERT", "UPDATE", "DELETE"):
        db.conn.execute(
            f"CREATE TRIGGER skill_changes_{op.lower()} AFTER {op} ON skill_versions "
            "BEGIN UPDATE skill_changes SET changes = changes + 1 WHERE id = 1; END")
