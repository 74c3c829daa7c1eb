"""The storage layer's health checks: config, database (schema, integrity, WAL), writable,
tokenizer, git on PATH, hook errors. Each returns ok / warn / fail with a one-line detail and
changes nothing (pending migrations are reported, not applied). The domains' checks and the
whole report live in agentstate.maintenance.doctor.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.config import CONFIG_NAME, Settings, TokenSettings, load_settings
from agentstate.errors import AgentStateError
from agentstate.store.db import DB_NAME

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass
class Check:
    name: str
    status: str
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    store: str
    checks: list[Check]

    @property
    def healthy(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL]


def check_config(root: Path) -> tuple[Check, Settings]:
    """Whether config.toml loads; the settings the other checks use (the defaults if not)."""
    path = root / CONFIG_NAME
    if not path.exists():
        return Check("config", WARN, f"{CONFIG_NAME} missing; defaults in use"), Settings()
    try:
        settings = load_settings(path)
    except AgentStateError as exc:
        return Check("config", FAIL, f"{exc.message} (the other checks use the defaults)"), \
            Settings()
    return Check("config", OK, f"{CONFIG_NAME} parses and its settings are valid"), settings


def check_principal(settings: Any) -> Check:
    """Which principal a command run here acts as, and why (agentstate.store.principals)."""
    from agentstate.errors import AgentStateError
    from agentstate.store.principals import principal_from_environment

    try:
        env = principal_from_environment(settings.principals)
    except AgentStateError as exc:
        return Check("principal", FAIL, exc.message)
    who = env.principal
    return Check("principal", OK, f"{who.name} ({env.decided_by}); --as may only narrow it",
                 {"principal": who.name, "decided_by": env.decided_by, "agent": env.agent,
                  "actions": who.allowed_actions()})


def check_database(root: Path) -> list[Check]:
    from agentstate.store.migrations import all_migrations, applied_migrations

    db_path = root / DB_NAME
    try:
        # mode=ro: the doctor must not create, migrate or checkpoint anything.
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, isolation_level=None)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        text = str(exc)
        if "readonly" in text or "unable to open" in text:
            return [Check("database", FAIL, f"cannot open {db_path}: the store is read-only or "
                                            f"not accessible ({exc})")]
        return [Check("database", FAIL, f"{db_path} is not a usable SQLite database ({exc})")]
    checks = []
    try:
        import sqlite_utils

        db = sqlite_utils.Database(conn)
        applied = applied_migrations(db)
        known = [name for name, _ in all_migrations()]
        pending = [n for n in known if n not in applied]
        unknown = [n for n in applied if n not in known]
        version = applied[-1] if applied else "(blank)"
        data = {"version": version, "applied": len(applied), "pending": pending,
                "unknown": unknown}
        if unknown:
            checks.append(Check("schema", WARN, f"{version}; applied by a newer agentstate: "
                                                f"{', '.join(unknown)}", data))
        elif pending:
            checks.append(Check("schema", WARN, f"{version}; {len(pending)} pending migration(s) "
                                                f"(applied by the next command): "
                                                f"{', '.join(pending)}", data))
        else:
            checks.append(Check("schema", OK, f"{version} ({len(applied)} migrations, none "
                                              f"pending)", data))
        result = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
        if result == ["ok"]:
            checks.append(Check("integrity", OK, "PRAGMA integrity_check: ok"))
        else:
            checks.append(Check("integrity", FAIL, "; ".join(result[:3]), {"result": result}))
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode == "wal":
            checks.append(Check("wal", OK, "journal_mode = wal"))
        else:
            checks.append(Check("wal", FAIL, f"journal_mode = {mode} (expected wal; concurrent "
                                             f"agents would block each other)"))
    except sqlite3.DatabaseError as exc:
        checks.append(Check("database", FAIL, f"the database is damaged ({exc})"))
    finally:
        conn.close()
    return checks


def check_tokenizer(settings: TokenSettings) -> Check:
    from agentstate.tokens import (
        CL100K_SHA256,
        DEFAULT_ENCODING,
        bundled_bpe_path,
        counter_for,
    )

    try:
        counter = counter_for(settings)
        detail = f"{counter.encoding} loads offline"
        data: dict[str, Any] = {"encoding": counter.encoding, "calibration": counter.calibration}
        if counter.encoding == DEFAULT_ENCODING:
            digest = hashlib.sha256(Path(bundled_bpe_path()).read_bytes()).hexdigest()
            if digest != CL100K_SHA256:
                return Check("tokenizer", FAIL, "bundled cl100k_base file fails its SHA-256 check")
            detail += " (bundled BPE file, SHA-256 verified)"
            from agentstate.tokens import check_count_cache, count_memo_path

            problems = check_count_cache()
            data["count_cache"] = str(count_memo_path())
            if problems:
                return Check("tokenizer", FAIL,
                             f"the token-count cache {count_memo_path()} is damaged: "
                             f"{'; '.join(problems)} (delete it; it is rebuilt on demand)",
                             data)
        tokens = counter.count("agentstate doctor")
        data["sample_tokens"] = tokens
        return Check("tokenizer", OK, detail, data)
    except AgentStateError as exc:
        return Check("tokenizer", FAIL, exc.message)
    except Exception as exc:  # tiktoken raises plain exceptions (e.g. a failed fetch)
        return Check("tokenizer", FAIL, f"cannot load the tokenizer offline: {exc}")


def check_git() -> Check:
    """git is needed for work-tree versions and drift, and for the skills registry."""
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return Check("git", FAIL, "git is not on PATH (work-tree drift and skills need it)")
    return Check("git", OK, out.stdout.strip() or "git found")


def check_writable(root: Path) -> Check:
    """A read-only store fails every write; say so up front."""
    import os

    blocked = [p.name for p in (root, root / DB_NAME) if p.exists() and not os.access(p, os.W_OK)]
    if blocked:
        return Check("writable", FAIL, f"not writable: {', '.join(blocked)}")
    return Check("writable", OK, "the store directory and database are writable")


def check_hook_errors(root: Path) -> Check:
    """What agent and git hooks could not record lately (they never fail the agent, so this
    is where their problems show up)."""
    from agentstate.store.hooklog import last_hook_errors

    errors = last_hook_errors(root, limit=3)
    if not errors:
        return Check("hooks", OK, "no hook errors recorded")
    last = errors[-1]
    return Check("hooks", WARN, f"{len(errors)} recent hook error(s); last at {last.get('ts')}: "
                                f"{last.get('agent')} {last.get('event')}: {last.get('error')} "
                                f"(log: {last.get('log')}); fix its cause, then check with "
                                "`agentstate hooks status`", {"errors": errors})


def storage_checks(root: Path) -> tuple[list[Check], Settings]:
    """The storage layer's own checks (agentstate.maintenance.doctor adds the domains')."""
    config_check, settings = check_config(root)
    checks = [config_check, check_principal(settings), *check_database(root),
              check_writable(root), check_tokenizer(settings.tokens), check_git(),
              check_hook_errors(root)]
    return checks, settings
