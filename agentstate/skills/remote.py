"""`skill push` / `skill pull`: releases and revocations through a git remote.

This module holds what both share and the push; remote_pull.py holds the pull.

By default the remote is the host repository's own `origin`, under refs that no branch or tag
of the team's uses (agentstate.skills.remote_git names them). What travels:

- a release: its commit, under `refs/agentstate/skills/tags/NAME/vN`. Skills shipped with
  agentstate stay home (every registry installs its own copy at `init`).
- a revocation: a record commit (`revocation.json`) under `refs/agentstate/skills/revoked/
  NAME/vN`, made from the database row the first time a push needs it.

Releases are immutable: a NAME/vN that names different commits here and on the remote is a
conflict, and the whole push or pull is refused with nothing moved or applied. A pulled
release passes the publish gate's content checks here (validation, file checks, secrets,
scaffold leftovers; acceptance commands are not run, as for shipped skills — `skill test
NAME@vN` runs them) and its trust check: text that reads as injected instructions, a pulling
principal that may not approve, or `[skills] approve_pulled = true` make it wait for `skill
pull --approve`. A refused release is listed and left out; the rest is applied. A release that
arrives already revoked is recorded as revoked without those checks: it can never load.

Applying uses the publish journal under the registry lock (tags, then rows with the journal
row's deletion in one transaction), so a crash cannot leave a tag without its row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import CorruptStore, Refused
from agentstate.skills import registry
from agentstate.skills import remote_git as rg
from agentstate.skills.records import registry_lock
from agentstate.store.db import Store
from agentstate.store.refs import make_ref


@dataclass
class Refusal:
    ref: str  # skill:NAME@vN, or the remote ref when it names no release
    reasons: list[str]
    approval_required: bool = False
    conflict: bool = False  # NAME/vN differs here and there (left out with --skip-conflicts)


@dataclass
class RemoteResult:
    remote: str
    dry_run: bool
    pushed: list[str] = field(default_factory=list)  # releases sent (skill:NAME@vN)
    pulled: list[str] = field(default_factory=list)  # releases taken in (published here)
    revoked: list[str] = field(default_factory=list)  # revocations sent / applied here
    refused: list[Refusal] = field(default_factory=list)  # left out, with why
    unchanged: list[str] = field(default_factory=list)  # already the same on both sides
    notes: list[str] = field(default_factory=list)  # drafts refreshed, candidates renumbered


def release_rows(store: Store) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["name"], r["version"]): r for r in store.rows(
        "SELECT * FROM skill_versions ORDER BY name, version")}


def shipped(row: dict[str, Any]) -> bool:
    return json.loads(row["provenance"] or "{}").get("origin") == "shipped"


def checked_registry(store: Store) -> Path:
    """The registry, checked before any git command runs there: without its own .git, git
    would walk up and act on the host repository instead."""
    path = store.skills_path
    if not (path / ".git").is_dir():
        raise CorruptStore(f"the skills registry {path} is not a git repository (run "
                           "`agentstate init` to create it)")
    return path


def refuse_conflicts(verb: str, conflicts: list[tuple[str, str]], skip: bool,
               result: RemoteResult) -> None:
    """Refuse the whole command, or (--skip-conflicts) list each one and go on without it."""
    if not conflicts:
        return
    if skip:
        result.refused += [Refusal(ref, [text], conflict=True) for ref, text in conflicts]
        return
    texts = [text for _, text in conflicts]
    raise Refused(f"skill {verb} refused, nothing was {verb}ed: " + "; ".join(texts)
                  + ". Releases are immutable, so agentstate picks no winner: run `agentstate "
                  f"skill {verb} --skip-conflicts` to move everything else and keep your own "
                  "version; to take the remote's instead, revoke yours (`agentstate skill "
                  "revoke NAME@vN`) and publish the next version (docs/team.md, Conflicts)",
                  details={"conflicts": texts})


def same_release(row: dict[str, Any], commit: str) -> bool:
    """Is `commit` (the remote's) the one this row's release came from? A pulled release is
    kept as a single-skill commit of its own; its provenance names the remote's commit."""
    if row["commit_sha"] == commit:
        return True
    return json.loads(row["provenance"] or "{}").get("commit") == commit


# ---------------------------------------------------------------- push


def push_skills(store: Store, remote: str | None = None, *, dry_run: bool = False,
                skip_conflicts: bool = False) -> RemoteResult:
    """Send every release and revocation the remote lacks, in one atomic push."""
    path = checked_registry(store)
    target = rg.resolve_remote(store.work_tree, remote, push=True)
    result = RemoteResult(remote=target.display, dry_run=dry_run)
    with registry_lock(store):
        theirs = rg.remote_refs(path, target)
        tags = registry.tag_commits(path)
        records = rg.list_refs(path, rg.LOCAL_REVOKED)
        send: dict[str, str] = {}  # remote ref → local ref
        to_record: list[tuple[str, dict[str, Any]]] = []  # revoked rows with no record yet
        conflicts: list[tuple[str, str]] = []
        for row in release_rows(store).values():
            if row["status"] == "candidate":
                continue
            tag, ref = row["tag"] or registry.tag_name(row["name"], row["version"]), \
                make_ref("skill", row["name"], row["version"])
            commit = tags.get(tag)
            if commit is None or commit != row["commit_sha"]:
                continue  # content lost or a damaged registry: `doctor` reports it
            if not shipped(row):
                there = theirs.get(rg.REMOTE_TAGS + tag)
                if there is None:
                    send[rg.REMOTE_TAGS + tag] = f"refs/tags/{tag}"
                    result.pushed.append(ref)
                elif there != commit and not same_release(row, there):
                    conflicts.append((ref, f"{tag} is commit {there[:12]} on the remote and "
                                           f"{commit[:12]} here"))
                    continue  # nor its revocation: it would name content the remote lacks
                else:
                    result.unchanged.append(ref)
            if row["status"] == "revoked" and rg.REMOTE_REVOKED + tag not in theirs:
                send[rg.REMOTE_REVOKED + tag] = rg.LOCAL_REVOKED + tag
                result.revoked.append(ref)
                if tag not in records:
                    to_record.append((tag, row))
        refuse_conflicts("push", conflicts, skip_conflicts, result)
        if dry_run or not send:
            return result
        made = {}
        for tag, row in to_record:
            made[rg.LOCAL_REVOKED + tag] = rg.write_revocation(path, {
                "format": rg.REVOCATION_FORMAT,
                "skill": make_ref("skill", row["name"], row["version"]),
                "name": row["name"], "version": row["version"], "commit": row["commit_sha"],
                "tree": row["tree"], "revoked": row["revoked"] or store.now(),
                "revoked_by": row["revoked_by"] or "unknown", "reason": row["revoke_reason"]
                or "revoked"})
        rg.create_refs(path, made, "agentstate: revocation records")
        rg.push_refs(path, target, send)
    return result
