"""`skill revoke`: withdraw a version (or every version) of a skill. The row, the commit and
the tag stay (history); the version can no longer be loaded, matched or exported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentstate.errors import InvalidInput, NotFound
from agentstate.safety import refuse_secrets
from agentstate.skills.records import (
    current_release,
    get_version,
    parse_target,
    versions_of,
)
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store
from agentstate.store.limits import MAX_REASON_CHARS, check_length
from agentstate.store.principals import Principal, acting
from agentstate.store.refs import make_ref


@dataclass
class RevokeResult:
    revoked: list[str]
    current: str | None  # the version load/match/export use now (None: out of the catalog)
    reason: str
    exports_updated: list[str] = field(default_factory=list)


def revoke_skill(store: Store, target: str, reason: str, *,
                principal: Principal | str) -> RevokeResult:
    """Revoke one version (NAME@vN) or every published version (NAME). History is kept.

    After revoking NAME@vN the current version is the highest remaining published one (the
    previous release, if any); after revoking NAME no version is current and the skill
    leaves the catalog and the exports.
    """
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("--reason is required: say why the skill is withdrawn")
    refuse_secrets(reason, "the reason")
    check_length(reason, MAX_REASON_CHARS, "the reason")
    name, version = parse_target(target)
    if version is not None:
        row = get_version(store, name, version)
        if row.status == SkillStatus.REVOKED:
            raise InvalidInput(f"{row.ref} is already revoked ({row.revoke_reason})")
        if row.status == SkillStatus.CANDIDATE:
            raise InvalidInput(f"{row.ref} is a candidate, not a release; delete or edit the "
                               "draft instead")
        targets = [version]
    else:
        rows = versions_of(store, name)
        if not rows:
            raise NotFound(f"no skill named {name!r}")
        targets = [r.version for r in rows if r.status == SkillStatus.PUBLISHED]
        if not targets:
            raise InvalidInput(f"skill {name!r} has no published version to revoke")
    who = acting(store, principal)
    _check_may_revoke(store, who, name, targets)
    now = store.now()
    with store.transaction() as conn:
        for v in targets:
            conn.execute(
                "UPDATE skill_versions SET status = 'revoked', revoked = ?, revoked_by = ?, "
                "revoke_reason = ? WHERE name = ? AND version = ? AND status = 'published'",
                (now, who.name, reason, name, v),
            )
    current = current_release(store, name)
    from agentstate.skills.export import refresh_existing_exports

    updated = refresh_existing_exports(store)
    return RevokeResult(revoked=[make_ref("skill", name, v) for v in targets],
                        current=current.ref if current else None, reason=reason,
                        exports_updated=updated)


def revocation_refused(store: Store, principal: Principal, name: str, version: int) -> str | None:
    """Why `principal` may not revoke NAME@vVERSION (None when it may): the rule of `skill
    revoke`, applied to a revocation that arrives by `skill pull` as well."""
    from agentstate.errors import Refused

    try:
        _check_may_revoke(store, principal, name, [version])
    except Refused as exc:
        return str(exc)
    return None


def _check_may_revoke(store: Store, who: Principal, name: str, versions: list[int]) -> None:
    """Revoking a version another principal made is the owner-only action `revoke`."""
    if who.may("revoke"):
        return
    for v in versions:
        row = get_version(store, name, v)
        maker = (row.provenance or {}).get("principal")
        if maker != who.name:
            who.check_action("revoke", f"revoke {row.ref}, made by "
                                       f"{maker or 'an unrecorded principal'}")
