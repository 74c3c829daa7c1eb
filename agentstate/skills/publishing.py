"""Publishing: validate, test, check trust, then commit + tag + row together (or nothing).

Trust: a candidate needs an explicit human `--approve` when its content came from untrusted
sources (tool output, files, fetched documents; see store.sources.is_untrusted), when any of
its text reads as injected instructions (safety.find_injection), or when nothing records where
the draft came from (files that simply appeared in the registry). Only a principal allowed to
write every scope (`write = ["*"]`, the owner by default) may approve; the approval is
recorded with the version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstate.errors import CorruptStore, InvalidInput, NotFound, Refused
from agentstate.skills import journal, registry
from agentstate.skills import problems as skill_problems
from agentstate.skills import skill_file as mf
from agentstate.skills.acceptance import last_test, run_acceptance
from agentstate.skills.authoring import scaffold_leftovers
from agentstate.skills.records import (
    SkillVersion,
    candidate_version,
    current_release,
    draft_path,
    get_version,
    next_version_number,
    parse_target,
    principal_name,
    registry_lock,
    versions_of,
)
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref


@dataclass
class PublishResult:
    ref: str
    name: str
    version: int
    commit: str
    tree: str
    tag: str
    approver: str | None
    reasons: list[str]  # why approval was needed (empty when it was not)
    test: str  # the skill_tests id whose pass allowed the publish


def approval_reasons(store: Store, name: str, folder: Path, candidate: SkillVersion | None,
                     report: skill_problems.ValidationReport | None = None, *,
                     principal: Principal | str) -> list[str]:
    """Why this draft needs a human --approve (empty: it does not)."""
    reasons: list[str] = []
    current = current_release(store, name)
    if candidate is None:
        if current is None:
            reasons.append("nothing records where this draft came from (not created by "
                           "`skill new` or `skill propose`): treat its files as untrusted")
        else:
            principal, may_approve = principal_name(store, principal)
            if not may_approve:
                reasons.append(f"the draft was edited after {current.ref} and is being "
                               f"published by principal {principal!r}, which may not approve "
                               "skills")
    provenance = dict(candidate.provenance) if candidate else {}
    creator = provenance.get("principal")
    if creator and provenance.get("principal_may_approve") is False:
        reasons.append(f"created by principal {creator!r}, which may not approve skills")
    for item in provenance.get("untrusted", []):
        reasons.append(f"content came from an untrusted source: {item}")
    for item in provenance.get("injection", []):
        reasons.append(f"the source run read text that reads as injected instructions: {item}")
    # The same check `skill validate` reports as a warning (skills.file_checks): every file,
    # any encoding.
    if report is None:
        report = mf.validate_folder(folder, store.settings.tools, check_tools=False,
                                    limits=store.settings.skills)
    reasons += [p.message for p in report.warnings if p.rule == "injection"]
    return reasons


def _release_row(folder: mf.SkillFolder, approver: str | None, reasons: list[str],
                 provenance: dict[str, Any]) -> dict[str, Any]:
    """The columns of a release row known before git is touched (kept in the journal, so an
    interrupted publish can be finished by another process)."""
    return {
        "description": folder.description,
        "triggers": json.dumps(folder.contract.triggers if folder.contract else []),
        "approver": approver, "reasons": json.dumps(reasons),
        "provenance": json.dumps(provenance, sort_keys=True),
    }


def publish_skill(store: Store, target: str, *, approve: bool = False,
                  run_ref: str | None = None, params: dict[str, str] | None = None,
                  principal: Principal | str) -> PublishResult:
    """Validate, test (unless this exact tree already passed), check trust, then commit + tag
    + row together. Refused (exit 3) with every reason when anything is missing."""
    name, version = parse_target(target)
    if version is not None:
        row = get_version(store, name, version)  # NotFound for an unknown version
        if row.status == SkillStatus.REVOKED:
            raise Refused(f"{row.ref} is revoked ({row.revoke_reason}); a revoked version is "
                          "never published again — change the draft and publish a new version")
        if row.status == SkillStatus.PUBLISHED:
            raise InvalidInput(f"{row.ref} is already published")
    folder_path = draft_path(store, name)
    if not folder_path.is_dir():
        if versions_of(store, name):
            raise NotFound(f"skill {name!r} has no draft in {store.skills_path} to publish")
        raise NotFound(f"no skill named {name!r} (create one with `agentstate skill new "
                       f"{name}` or `skill propose`)")
    with registry_lock(store):
        return _publish_locked(store, name, folder_path, approve=approve, run_ref=run_ref,
                               params=params, principal=principal)


def _publish_locked(store: Store, name: str, folder_path: Path, *, approve: bool,
                    run_ref: str | None, params: dict[str, str] | None,
                    principal: Principal | str) -> PublishResult:
    # The one check `skill validate` runs too (secrets in files of any encoding included).
    report = mf.validate_folder(folder_path, store.settings.tools, display=f"skills/{name}",
                                limits=store.settings.skills)
    reasons = [str(p) for p in report.errors] + scaffold_leftovers(folder_path, name)
    tree = registry.tree_hash(folder_path)
    if tree is None:
        raise InvalidInput(f"the draft {folder_path} is empty")
    same = [r for r in versions_of(store, name)
            if r.tree == tree and r.status != SkillStatus.CANDIDATE]
    if same:
        row = same[-1]
        if row.status == SkillStatus.REVOKED:
            raise Refused(f"this content was published as {row.ref} and revoked "
                          f"({row.revoke_reason}); change it before publishing again")
        raise InvalidInput(f"nothing to publish: the draft is identical to {row.ref}")
    secrets = [p for p in report.errors if p.rule == "secret"]
    if secrets:
        raise Refused(f"publish {name} refused: " + "; ".join(p.message for p in secrets),
                      details={"reasons": [str(p) for p in secrets]})
    # Trust before anything runs: an untrusted candidate's acceptance commands are not
    # executed by publish until a human has approved it.
    candidate = candidate_version(store, name)
    trust = approval_reasons(store, name, folder_path, candidate, report,
                             principal=principal)
    principal, may_approve = principal_name(store, principal)
    approver = None
    if trust:
        if not approve:
            raise Refused(
                f"publish {name} needs a human --approve: " + "; ".join(reasons + trust),
                details={"reasons": reasons + trust, "approval_required": True})
        if not may_approve:
            raise Refused(
                f"principal {principal!r} may not approve skills (only a principal with "
                "write = [\"*\"] may): " + "; ".join(reasons + trust),
                details={"reasons": reasons + trust, "approval_required": True})
        approver = principal
    elif approve and may_approve:
        approver = principal
    test_id = ""
    if not reasons:
        passed = last_test(store, name, tree)
        if passed and passed.passed:
            test_id = passed.id
        else:
            report_ = run_acceptance(store, name, run_ref=run_ref, params=params)
            test_id = report_.id
            if report_.tree != tree:
                reasons.append("the draft changed while it was being tested")
            for result in report_.results:
                if not result.ok:
                    reasons.append(f"acceptance failed: {result.command} → {result.status}"
                                   f" (expected exit {result.expected})")
    if reasons:
        raise Refused(f"publish {name} refused: " + "; ".join(reasons),
                      details={"reasons": reasons})
    folder = mf.load_folder(folder_path)
    version = candidate.version if candidate else next_version_number(store, name)
    current = current_release(store, name)
    provenance = dict(candidate.provenance) if candidate else {
        "origin": "edited", "principal": principal,
        "previous": current.ref if current else None,
    }
    # Which recorded acceptance run (skill_tests.id) let this content through.
    provenance = {**provenance, "acceptance_test": test_id}
    prepared = PreparedRelease(name=name, version=version, tree=tree, folder=folder,
                               approver=approver, reasons=trust, provenance=provenance,
                               test=test_id)
    return release(store, [prepared])[0]


@dataclass
class PreparedRelease:
    """A draft that passed every check, ready to be released."""

    name: str
    version: int
    tree: str
    folder: mf.SkillFolder
    approver: str | None
    reasons: list[str]
    provenance: dict[str, Any]
    test: str
    # "restore": re-commit and re-tag an existing row's content (a deleted registry); the row
    # keeps its status, so a revoked version is never brought back.
    mode: str = "publish"


def release(store: Store, items: list[PreparedRelease]) -> list[PublishResult]:
    """Commit + tag + rows for checked drafts, all together or not at all (call it with the
    registry lock held).

    The intent goes into the publish journal first; then the commit object is built on a
    private index, the branch and the tags move in one git transaction, and the rows go in
    with the journal row's deletion in one database transaction (see skills.journal). An
    error on the way rolls the git side back; a killed process leaves the journal, and the
    next command that takes the registry lock finishes or rolls back what it reached.
    """
    path = store.skills_path
    if len(items) == 1:
        item = items[0]
        message = f"{item.name} v{item.version}: {item.folder.description[:60]}"
    else:
        message = "release " + ", ".join(f"{i.name} v{i.version}" for i in items)
    locks = registry.git_locks(path)
    if locks:
        # Checked before the journal: a lock seen while recovering a journal entry can then
        # only be that publish's own.
        raise CorruptStore(
            f"cannot publish: git's lock file {', '.join(str(p.relative_to(path)) for p in locks)}"
            f" exists in {path} (a git process is working there, or one was killed). If none "
            "is running, `agentstate doctor --repair` removes it",
            details={"locks": [str(p) for p in locks]})
    previous = registry.head_commit(path)
    entry = journal.begin(store, previous, message, [
        {"name": i.name, "version": i.version, "tree": i.tree,
         "tag": registry.tag_name(i.name, i.version), "mode": i.mode,
         "row": _release_row(i.folder, i.approver, i.reasons, i.provenance)}
        for i in items
    ])
    with journal.undone_on_failure(store, entry):
        journal.kill_point("journal")
        commit, trees = registry.build_release_commit(path, [i.name for i in items], message,
                                                      previous)
        for item in items:
            if trees.get(item.name) != item.tree:
                raise CorruptStore(
                    f"committed tree of {item.name} ({str(trees.get(item.name))[:12]}) differs "
                    f"from the checked tree {item.tree[:12]}; nothing was published")
        journal.set_commit(store, entry, commit)
        journal.kill_point("commit")
        registry.move_refs(path, previous, commit, entry.tags, f"agentstate: {message}")
        journal.kill_point("tag")
        registry.sync_index(path)
        journal.complete(store, entry)
    return [
        PublishResult(ref=make_ref("skill", i.name, i.version), name=i.name, version=i.version,
                      commit=commit, tree=i.tree, tag=registry.tag_name(i.name, i.version),
                      approver=i.approver, reasons=i.reasons, test=i.test)
        for i in items
    ]
