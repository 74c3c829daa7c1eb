"""`skill pull`: the remote's releases and revocations judged, then taken in.

What travels and the rules are in remote.py's docstring. A pull fetches into a quarantine,
plans (each release unchanged, conflicting, refused or taken in; each revocation applied or
refused), and only then copies what the plan accepted into the registry and writes its rows
through the publish journal, under the registry lock.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.safety import redact_secrets
from agentstate.skills import journal, registry, release_files, skill_md
from agentstate.skills import remote_git as rg
from agentstate.skills import skill_file as mf
from agentstate.skills.records import candidate_version, current_release, draft_path, registry_lock
from agentstate.skills.remote import (
    Refusal,
    RemoteResult,
    checked_registry,
    refuse_conflicts,
    release_rows,
    same_release,
    shipped,
)
from agentstate.skills.revocation import revocation_refused
from agentstate.store.db import Store
from agentstate.store.principals import Principal, acting
from agentstate.store.refs import make_ref


@dataclass
class _Incoming:
    name: str
    version: int
    commit: str
    tree: str
    row: dict[str, Any]
    record: str | None = None  # the revocation record commit, when it arrives revoked

    @property
    def tag(self) -> str:
        return registry.tag_name(self.name, self.version)


@dataclass
class _Plan:
    releases: list[_Incoming] = field(default_factory=list)
    revocations: list[tuple[str, int, dict[str, Any], str]] = field(default_factory=list)
    records: dict[str, str] = field(default_factory=dict)  # local record refs to create
    conflicts: list[tuple[str, str]] = field(default_factory=list)  # (ref, what differs)


def pull_skills(store: Store, remote: str | None = None, *, approve: bool = False,
                dry_run: bool = False, skip_conflicts: bool = False,
                principal: Principal | str) -> RemoteResult:
    """Take in every release and revocation the remote has and this registry lacks."""
    path = checked_registry(store)
    source = rg.resolve_remote(store.work_tree, remote, push=False)
    result = RemoteResult(remote=source.display, dry_run=dry_run)
    with registry_lock(store), tempfile.TemporaryDirectory(prefix="agentstate-pull-") as tmp:
        # Fetched into a quarantine: the registry only ever receives, object by object, what
        # the checks accepted (a refused release, its 300 MB blob or its secret, goes with
        # the temporary directory).
        quarantine = rg.make_quarantine(path, Path(tmp))
        for bad in rg.fetch_incoming(quarantine, source):
            result.refused.append(Refusal(bad[:200].encode("unicode_escape").decode("ascii"), [
                "not a release or revocation name (expected NAME/vN, N of at most nine "
                "digits): not fetched"]))
        try:
            plan = _plan_pull(store, quarantine, source, approve, result,
                              acting(store, principal))
            refuse_conflicts("pull", plan.conflicts, skip_conflicts, result)
            result.pulled = [make_ref("skill", i.name, i.version) for i in plan.releases
                             if i.record is None]
            result.revoked = [make_ref("skill", n, v) for n, v, _, _ in plan.revocations]
            result.revoked += [make_ref("skill", i.name, i.version) for i in plan.releases
                               if i.record is not None]
            if not dry_run:
                _copy_accepted(path, quarantine, plan)
                _apply(store, plan, result)
        finally:
            rg.clear_incoming(path)
    return result


def _copy_accepted(path: Path, quarantine: Path, plan: _Plan) -> None:
    """Each accepted release becomes a commit holding its folder only; it and the revocation
    records the plan keeps are copied from the quarantine into the registry."""
    objects: dict[str, str] = {}
    for item in plan.releases:
        item.commit = rg.single_skill_commit(quarantine, item.commit, item.name, item.tree)
        objects[f"tags/{item.tag}"] = item.commit
    for ref, sha in plan.records.items():
        objects["revoked/" + ref[len(rg.LOCAL_REVOKED):]] = sha
    rg.copy_accepted(path, quarantine, objects)


def _plan_pull(store: Store, quarantine: Path, source: rg.Remote, approve: bool,
               result: RemoteResult, principal: Principal) -> _Plan:
    plan = _Plan()
    rows = release_rows(store)
    records, unreadable = _incoming_records(quarantine, result)
    who = principal.name, principal.may("approve")
    _plan_releases(store, quarantine, source, approve, result, plan, rows, records,
                   unreadable, who)
    # The records left were not taken in with a release above: revocations of releases
    # this registry may already hold.
    _plan_revocations(store, result, plan, rows, records, principal)
    return plan


def _plan_releases(store: Store, quarantine: Path, source: rg.Remote, approve: bool,
                   result: RemoteResult, plan: _Plan,
                   rows: dict[tuple[str, int], dict[str, Any]],
                   records: dict[str, tuple[dict[str, Any], str]], unreadable: set[str],
                   who: tuple[str, bool]) -> None:
    """The remote's releases: unchanged, conflicting, refused, or to take in (each checked
    by the publish gate, with its revocation record if the remote has one)."""
    tags = registry.tag_commits(store.skills_path)
    for tag, sha in sorted(rg.list_refs(quarantine, rg.INCOMING_TAGS).items()):
        parsed = _release_name(tag)
        commit = rg.commit_of(quarantine, sha)
        if parsed is None or commit is None:
            result.refused.append(Refusal(rg.REMOTE_TAGS + tag, [
                "not a release (expected refs/agentstate/skills/tags/NAME/vN naming a "
                "commit)"]))
            continue
        name, version = parsed
        ref = make_ref("skill", name, version)
        row = rows.get((name, version))
        if row is not None and row["status"] != "candidate":
            if same_release(row, commit) or (
                    shipped(row) and rg.folder_tree(quarantine, commit, name) == row["tree"]):
                result.unchanged.append(ref)
            else:
                plan.conflicts.append((ref, f"{tag} is commit {commit[:12]} on the remote "
                                            f"and {str(row['commit_sha'])[:12]} here"))
            continue
        if tag in tags:
            plan.conflicts.append((ref, f"this registry has a tag {tag} with no release row "
                                        "(an interrupted publish): run `agentstate doctor "
                                        "--repair` first"))
            continue
        tree = rg.folder_tree(quarantine, commit, name)
        if tree is None:
            result.refused.append(Refusal(ref, [f"its commit {commit[:12]} has no {name}/ "
                                                "folder"]))
            continue
        if tag in unreadable:  # it may well be revoked: never take it in as loadable
            result.refused.append(Refusal(ref, ["the remote has a revocation record for it "
                                                "that cannot be read (listed above)"]))
            continue
        record = records.pop(tag, None)
        if record is not None and record[0]["tree"] != tree:
            plan.conflicts.append((ref, f"the remote's revocation of {tag} names folder "
                                        f"tree {record[0]['tree'][:12]}, its release has "
                                        f"{tree[:12]}"))
            continue
        item = _check_release(store, quarantine, source, name, version, commit, tree, rows,
                              record, approve, who, result)
        if item is not None:
            plan.releases.append(item)
            if record is not None:
                plan.records[rg.LOCAL_REVOKED + tag] = record[1]


def _plan_revocations(store: Store, result: RemoteResult, plan: _Plan,
                      rows: dict[tuple[str, int], dict[str, Any]],
                      records: dict[str, tuple[dict[str, Any], str]],
                      principal: Principal) -> None:
    """The remote's revocation records of releases this registry has: applied only where
    the principal pulling may revoke that version itself."""
    path = store.skills_path
    local_records = rg.list_refs(path, rg.LOCAL_REVOKED)
    for tag, (revocation, sha) in sorted(records.items()):
        name, version = revocation["name"], revocation["version"]
        row = rows.get((name, version))
        if row is None or row["status"] == "candidate":
            result.refused.append(Refusal(make_ref("skill", name, version), [
                "the remote revokes a release this registry does not have (nothing to "
                "block here)"]))
            continue
        if row["tree"] != revocation["tree"]:
            plan.conflicts.append((make_ref("skill", name, version),
                                   f"the remote's revocation of {tag} names folder tree "
                                   f"{revocation['tree'][:12]}, this registry's release has "
                                   f"{str(row['tree'])[:12]}"))
            continue
        if row["status"] != "revoked":
            # A remote is as trusted as whoever could write it: its revocation applies only
            # where the principal pulling may revoke that version itself (`skill revoke`).
            refusal = revocation_refused(store, principal, name, version)
            if refusal is not None:
                result.refused.append(Refusal(make_ref("skill", name, version), [
                    f"the remote revokes it, but {refusal}; run `agentstate skill pull` "
                    "from your own terminal to take the revocation in"]))
                continue
        if tag not in local_records:
            plan.records[rg.LOCAL_REVOKED + tag] = sha
        if row["status"] == "revoked":
            continue
        plan.revocations.append((name, version, revocation, sha))


def _release_name(tag: str) -> tuple[str, int] | None:
    match = rg.RELEASE_PATH.match(tag)
    if not match or skill_md.check_name(match.group(1)):
        return None
    return match.group(1), int(match.group(2))


def _incoming_records(path: Path, result: RemoteResult
                      ) -> tuple[dict[str, tuple[dict[str, Any], str]], set[str]]:
    """{NAME/vN: (record, record commit)} of the remote's readable revocation records, and
    the NAME/vN of those that cannot be read (each listed in `refused`)."""
    found, unreadable = {}, set()
    for tag, sha in sorted(rg.list_refs(path, rg.INCOMING_REVOKED).items()):
        parsed = _release_name(tag)
        if parsed is None:
            result.refused.append(Refusal(rg.REMOTE_REVOKED + tag, ["not a revocation of a "
                                                                     "release (NAME/vN)"]))
            continue
        try:
            record = rg.read_revocation(path, sha)
        except (InvalidInput, rg.GitFailed) as exc:
            problem = exc.message if isinstance(exc, InvalidInput) else rg.one_line(exc.stderr)
            result.refused.append(Refusal(make_ref("skill", *parsed), [
                f"unreadable revocation record {rg.REMOTE_REVOKED + tag}: {problem}"]))
            unreadable.add(tag)
            continue
        if (record["name"], record["version"]) != parsed:
            result.refused.append(Refusal(make_ref("skill", *parsed), [
                f"the revocation record under {tag} is for {record['name']} "
                f"v{record['version']}"]))
            unreadable.add(tag)
            continue
        found[tag] = (record, sha)
    return found, unreadable


def _check_release(store: Store, quarantine: Path, source: rg.Remote, name: str,
                   version: int, commit: str,
                   tree: str, rows: dict[tuple[str, int], dict[str, Any]],
                   record: tuple[dict[str, Any], str] | None, approve: bool,
                   who: tuple[str, bool], result: RemoteResult) -> _Incoming | None:
    """The publish gate's checks on a pulled release; None (and a Refusal) when it fails."""
    from agentstate.skills.authoring import scaffold_leftovers

    ref, (principal, may_approve) = make_ref("skill", name, version), who
    limits = store.settings.skills
    unsafe = rg.release_problems(quarantine, commit, name,
                                 max_file_bytes=limits.max_file_bytes,
                                 max_skill_bytes=limits.max_skill_bytes)
    if unsafe:  # refused before a byte is written (revoked or not: it gets no tag)
        result.refused.append(Refusal(ref, unsafe))
        return None
    with tempfile.TemporaryDirectory(prefix="agentstate-pull-") as tmp:
        folder_path = Path(tmp) / name
        try:
            release_files.materialize(quarantine, name, version, folder_path, rev=commit)
        except (ValueError, OSError) as exc:  # a tree entry GitPython will not read
            result.refused.append(Refusal(ref, [f"its files cannot be read: {exc}"[:300]]))
            return None
        folder = mf.load_folder(folder_path)
        row: dict[str, Any] = {
            "description": folder.description,
            "triggers": json.dumps(folder.contract.triggers if folder.contract else []),
            "approver": None, "reasons": "[]",
            "provenance": json.dumps({"origin": "pulled", "remote": source.display,
                                      "commit": commit, "principal": principal,
                                      "acceptance_test": ""}, sort_keys=True),
        }
        if record is not None:  # arrives revoked: recorded as history, never loadable
            row.update(status="revoked", revoked=record[0]["revoked"][:40],
                       revoked_by=redact_secrets(record[0]["revoked_by"][:100]) + " (pulled)",
                       revoke_reason=redact_secrets(record[0]["reason"][:500]))
            return _Incoming(name, version, commit, tree, row, record[1])
        report = mf.validate_folder(folder_path, store.settings.tools, check_tools=False,
                                    display=f"{name}@v{version}",
                                    limits=store.settings.skills)
        reasons = [str(p) for p in report.errors] + scaffold_leftovers(folder_path, name)
    revoked_same = [r for r in rows.values() if r["name"] == name and r["tree"] == tree
                    and r["status"] == "revoked"]
    if revoked_same:
        reasons.append(f"this content was revoked here as skill:{name}@v"
                       f"{revoked_same[0]['version']} ({revoked_same[0]['revoke_reason']})")
    if reasons:
        result.refused.append(Refusal(ref, reasons))
        return None
    trust = [p.message for p in report.warnings if p.rule == "injection"]
    if store.settings.skills.approve_pulled:
        trust.append("every pulled release needs --approve ([skills] approve_pulled = true)")
    if not may_approve:
        trust.append(f"pulled by principal {principal!r}, which may not approve skills")
    if trust and (not approve or not may_approve):
        result.refused.append(Refusal(ref, trust, approval_required=True))
        return None
    if (trust or approve) and may_approve:
        row.update(approver=principal, reasons=json.dumps(trust))
    return _Incoming(name, version, commit, tree, row)


def _apply(store: Store, plan: _Plan, result: RemoteResult) -> None:
    """Rows and refs for the plan (the registry lock is held)."""
    path = store.skills_path
    _renumber_candidates(store, plan, result)
    if plan.releases:
        entry = journal.begin(store, registry.head_commit(path),
                              f"pull from {result.remote}", [
            {"name": i.name, "version": i.version, "tree": i.tree, "tag": i.tag,
             "mode": "pull", "commit": i.commit, "row": i.row} for i in plan.releases])
        with journal.undone_on_failure(store, entry):
            journal.kill_point("journal")
            rg.create_refs(path, {f"refs/tags/{i.tag}": i.commit for i in plan.releases},
                           f"agentstate: pull from {result.remote}")
            journal.kill_point("tag")
            journal.complete(store, entry)
    if plan.revocations:
        # The database first: a crash before the record refs leaves the version blocked
        # here (the safe side); the next push or pull makes or adopts the record.
        with store.transaction() as conn:
            for name, version, record, _ in plan.revocations:
                conn.execute(
                    "UPDATE skill_versions SET status = 'revoked', revoked = ?, "
                    "revoked_by = ?, revoke_reason = ? WHERE name = ? AND version = ? "
                    "AND status = 'published'",
                    (record["revoked"][:40],
                     redact_secrets(record["revoked_by"][:100]) + " (pulled)",
                     redact_secrets(record["reason"][:500]), name, version))
    existing = rg.list_refs(path, rg.LOCAL_REVOKED)
    rg.create_refs(path, {ref: sha for ref, sha in plan.records.items()
                          if ref[len(rg.LOCAL_REVOKED):] not in existing},
                   "agentstate: pulled revocation records")
    _refresh_drafts(store, {i.name for i in plan.releases if i.record is None}, result)
    if plan.releases or plan.revocations:
        from agentstate.skills.export import refresh_existing_exports

        result.notes += [f"export {t} updated" for t in refresh_existing_exports(store)]


def _renumber_candidates(store: Store, plan: _Plan, result: RemoteResult) -> None:
    """A local draft's candidate row holding a number a pulled release takes moves up."""
    taken = {(i.name, i.version) for i in plan.releases}
    for name in sorted({n for n, _ in taken}):
        row = candidate_version(store, name)
        if row is None or (name, row.version) not in taken:
            continue
        top = max([v for n, v in taken if n == name] + [row.version])
        with store.transaction() as conn:
            conn.execute("UPDATE skill_versions SET version = ? WHERE name = ? AND version = ? "
                         "AND status = 'candidate'", (top + 1, name, row.version))
        result.notes.append(f"the draft of {name} is now candidate v{top + 1} (v"
                            f"{row.version} came from the remote)")


def _refresh_drafts(store: Store, names: set[str], result: RemoteResult) -> None:
    """The work-tree folder of a pulled skill follows its current release while nobody has
    edited it (absent, or the content of one of its releases): edit it to make the next
    version. An edited draft is never touched."""
    for name in sorted(names):
        current = current_release(store, name)
        folder = draft_path(store, name)
        if current is None or candidate_version(store, name) is not None:
            continue
        if folder.exists():
            trees = {r["tree"] for r in release_rows(store).values() if r["name"] == name}
            if not folder.is_dir() or registry.tree_hash(folder) not in trees \
                    or registry.tree_hash(folder) == current.tree:
                continue
        release_files.materialize(store.skills_path, name, current.version, folder)
        result.notes.append(f"draft {name}/ now holds {current.ref}")
