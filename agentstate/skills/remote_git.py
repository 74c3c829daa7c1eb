"""The git side of `skill push` / `skill pull`: where the remote is, what it holds, and moving
refs to and from it. No database here; agentstate.skills.remote decides what moves.

Namespaces (chosen so that nothing collides with a team's own branches and tags, and so that a
plain `git fetch` / `git clone` of the host repository never downloads them):

- on the remote: `refs/agentstate/skills/tags/NAME/vN` (a release commit) and
  `refs/agentstate/skills/revoked/NAME/vN` (a revocation record commit);
- in the registry: releases are the usual `refs/tags/NAME/vN`; revocation records are
  `refs/agentstate/revoked/NAME/vN`; a pull fetches the remote's refs into
  `refs/agentstate/incoming/…` first and reads them there, so nothing it fetched is visible
  as a release until the checks have passed.

A revocation record is a commit with no parent whose tree holds one file, `revocation.json`
(REVOCATION_FORMAT): which release (name, version, commit, folder tree), when, by whom, why.

Git runs as a subprocess (GitPython stays in registry.py and release_files.py) with LC_ALL=C,
so its messages can be matched, and GIT_TERMINAL_PROMPT=0, so a remote that wants a password
fails instead of waiting on a terminal an agent does not have (credential helpers still
answer).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstate.errors import AgentStateError, InvalidInput, NotFound, Refused

REMOTE_TAGS = "refs/agentstate/skills/tags/"
REMOTE_REVOKED = "refs/agentstate/skills/revoked/"
LOCAL_REVOKED = "refs/agentstate/revoked/"
INCOMING = "refs/agentstate/incoming/"
INCOMING_TAGS = INCOMING + "tags/"
INCOMING_REVOKED = INCOMING + "revoked/"
RECORD_FILE = "revocation.json"
REVOCATION_FORMAT = "agentstate.skill-revocation/1"
MAX_RECORD_BYTES = 64 * 1024
# At most nine digits: a version SQLite stores as an integer (a ref `NAME/v99999999999999999999`
# once raised OverflowError on every pull from that remote).
RELEASE_PATH = re.compile(r"^([a-z0-9-]{1,64})/v([1-9][0-9]{0,8})$")
MAX_REMOTE_REFS = 10_000  # refs a pull looks at; a remote with more is refused whole
ACCEPTED = "refs/agentstate/accepted/"  # in the quarantine: what the registry copies


class GitFailed(Exception):
    """A git command exited non-zero (stderr kept for the caller to explain)."""

    def __init__(self, args: list[str], stderr: str, stdout: str = "") -> None:
        super().__init__(stderr)
        self.args_ = args
        self.stderr = stderr
        self.stdout = stdout


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    done = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, env=env)
    if done.returncode != 0:
        raise GitFailed(list(args), done.stderr.decode("utf-8", errors="replace"),
                        done.stdout.decode("utf-8", errors="replace"))
    return done.stdout.decode("utf-8", errors="replace").strip()


# scheme://user:password@host: everything up to the *last* "@" before the host's first "/"
# is user information (a password may hold an "@" of its own).
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)[^/\s]*@", re.IGNORECASE)


def one_line(text: str, limit: int = 300) -> str:
    """git's stderr as one line (hints and progress dropped)."""
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.startswith("hint:")]
    # git quotes URLs as configured: a user:token@ in one never reaches a message.
    flat = _USERINFO.sub(r"\1", " ".join(lines))
    return flat[:limit] or "git gave no message"


# ---------------------------------------------------------------- which remote


@dataclass
class Remote:
    url: str  # what git is given (a local path made absolute)
    display: str  # for messages and provenance: no user:password@
    name: str | None  # the host repository's remote name, when one was used


def _strip_userinfo(url: str) -> str:
    return re.sub("^" + _USERINFO.pattern, r"\1", url, flags=re.IGNORECASE)


def _is_url(text: str) -> bool:
    # scheme://…, or git's scp-like user@host:path / host:path (a colon before any slash)
    return "://" in text or bool(re.match(r"^[^/:]+:", text)) and not os.path.exists(text)


def resolve_remote(host: Path, given: str | None, *, push: bool) -> Remote:
    """REMOTE as the user gave it: a remote name of the host repository, a URL or a path;
    None = the host repository's `origin`. Missing ones are one clear NotFound/InvalidInput."""
    if given is not None and not given.strip():
        raise InvalidInput("the remote is empty: give a remote name, a URL or a path")
    if given is not None:
        _check_remote_text(given)
    name = given if given is not None else "origin"
    looks_like_name = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) is not None
    if looks_like_name:
        try:
            args = ["remote", "get-url", *(["--push"] if push else []), name]
            url = git(host, *args)
        except (GitFailed, OSError):
            url = None
        if url:
            _check_remote_text(url)
            if not _is_url(url) and not Path(url).is_absolute():
                url = str((host / url).resolve())  # git reads it relative to the work tree
            return Remote(url=url, display=_strip_userinfo(url), name=name)
        if given is None:
            raise InvalidInput(
                f"the repository {host} has no remote `origin` to share skills through: add "
                "one (`git remote add origin URL`) or name one (`agentstate skill "
                f"{'push' if push else 'pull'} REMOTE`, a remote name, URL or path)")
    if _is_url(name):
        return Remote(url=name, display=_strip_userinfo(name), name=None)
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    if not path.exists():
        raise NotFound(f"no remote {name!r}: it is not a remote of {host} and no such path "
                       "exists")
    return Remote(url=str(path.resolve()), display=str(path.resolve()), name=None)


def _check_remote_text(text: str) -> None:
    # A leading "-" would reach git as an option (--upload-pack=… runs a command).
    if text.startswith("-"):
        raise InvalidInput(f"not a remote: {text[:80]!r} (a remote never starts with '-')")
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise InvalidInput(f"not a remote: {text[:80]!r} (control characters or undecodable "
                           "bytes)")


def _transport_error(remote: Remote, exc: GitFailed, what: str) -> AgentStateError:
    detail = one_line(exc.stderr)
    unreachable = ("does not appear to be a git repository", "Could not read from remote",
                   "not found", "Repository not found", "unable to access",
                   "Could not resolve host", "No such file or directory")
    if any(text in detail for text in unreachable):
        return NotFound(f"remote {remote.display} cannot be reached or is not a git "
                        f"repository: {detail}")
    return AgentStateError(f"{what} {remote.display} failed: {detail}")


# ---------------------------------------------------------------- reading refs


def list_refs(path: Path, prefix: str) -> dict[str, str]:
    """{name below `prefix`: object id} of the registry's refs under `prefix`."""
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    refs = {}
    for line in out.splitlines():
        ref, _, sha = line.partition(" ")
        refs[ref[len(prefix):]] = sha
    return refs


def remote_refs(path: Path, remote: Remote) -> dict[str, str]:
    """{full ref name: object id} of the remote's refs under refs/agentstate/skills/."""
    try:
        out = git(path, "ls-remote", remote.url, "refs/agentstate/skills/*")
    except GitFailed as exc:
        raise _transport_error(remote, exc, "reading") from exc
    refs = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        refs[ref] = sha
    return refs


def make_quarantine(registry: Path, where: Path) -> Path:
    """A scratch git repository that reads the registry's objects (alternates) but writes its
    own: a pull fetches into it, so what it refuses never enters the registry's objects."""
    git(where, "init", "--quiet", str(where))
    alternates = where / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(str((registry / ".git" / "objects").resolve()) + "\n")
    return where


def fetch_incoming(path: Path, remote: Remote) -> list[str]:
    """The remote's release and revocation refs, copied under INCOMING of `path` (the
    quarantine). Ref names are checked from `ls-remote` before anything is fetched: only
    NAME/vN refs are fetched; the others are returned (the caller lists them as refused)."""
    clear_incoming(path)
    wanted, bad = [], []
    refs = remote_refs(path, remote)
    if len(refs) > MAX_REMOTE_REFS:
        raise Refused(f"the remote {remote.display} has {len(refs)} refs under "
                      f"refs/agentstate/skills/ (at most {MAX_REMOTE_REFS}): nothing was fetched")
    for ref in sorted(refs):
        for prefix, local in ((REMOTE_TAGS, INCOMING_TAGS), (REMOTE_REVOKED, INCOMING_REVOKED)):
            if ref.startswith(prefix):
                if RELEASE_PATH.match(ref[len(prefix):]):
                    wanted.append(f"+{ref}:{local}{ref[len(prefix):]}")
                else:
                    bad.append(ref)
                break
    if not wanted:
        return bad
    try:
        git(path, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--stdin",
            remote.url, input="".join(f"{spec}\n" for spec in wanted).encode())
    except GitFailed as exc:
        clear_incoming(path)
        raise _transport_error(remote, exc, "fetching from") from exc
    return bad


def single_skill_commit(path: Path, commit: str, name: str, tree: str) -> str:
    """A commit (in `path`) whose tree holds only `name/` with `tree`, with no parent: what the
    registry keeps of a pulled release, so nothing else of the remote's commit (sibling
    folders, history) becomes reachable there. Author, committer and dates are the release
    commit's, so every registry that pulls the same release makes the same commit."""
    fields = git(path, "log", "-1", "--format=%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd",
                 "--date=raw", commit).split("\0")
    root = git(path, "mktree", input=f"040000 tree {tree}\t{name}\n".encode())
    env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    if len(fields) == 6:
        env.update(GIT_AUTHOR_NAME=fields[0], GIT_AUTHOR_EMAIL=fields[1],
                   GIT_AUTHOR_DATE=fields[2], GIT_COMMITTER_NAME=fields[3],
                   GIT_COMMITTER_EMAIL=fields[4], GIT_COMMITTER_DATE=fields[5])
    done = subprocess.run(["git", "commit-tree", root, "-m", f"{name}: pulled release "
                           f"(remote commit {commit})"], cwd=path, capture_output=True, env=env)
    if done.returncode != 0:
        raise GitFailed(["commit-tree"], done.stderr.decode("utf-8", errors="replace"))
    return done.stdout.decode().strip()


def copy_accepted(registry: Path, quarantine: Path, objects: dict[str, str]) -> None:
    """Copy into the registry the objects reachable from `objects` (quarantine ref name below
    ACCEPTED → commit): the accepted releases' single-skill commits and revocation records.
    They arrive under INCOMING of the registry, which the caller clears once tags name them."""
    if not objects:
        return
    script = "".join(f"update {ACCEPTED}{ref} {sha}\n" for ref, sha in objects.items())
    git(quarantine, "update-ref", "--stdin", input=script.encode())
    git(registry, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", str(quarantine),
        f"+{ACCEPTED}*:{INCOMING}accepted/*")


def clear_incoming(path: Path) -> None:
    stale = list_refs(path, INCOMING)
    if stale:
        script = "".join(f"delete {INCOMING}{name}\n" for name in stale)
        git(path, "update-ref", "--stdin", input=script.encode())


def folder_tree(path: Path, commit: str, name: str) -> str | None:
    try:
        return git(path, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}:{name}")
    except GitFailed:
        return None


FILE_MODES = ("100644", "100755", "120000")  # what `skill publish` ever commits


def release_problems(path: Path, commit: str, name: str, *, max_file_bytes: int,
                     max_skill_bytes: int) -> list[str]:
    """Why the `name/` folder of a fetched commit must not be written out to be checked:
    entries no checkout could hold (`..`, `.git`, a backslash), submodules, or files over the
    size limits. Read from git's tree listing, so a hostile remote's tree costs no disk and
    no memory before it is refused."""
    try:
        out = git(path, "ls-tree", "-r", "-l", "-z", commit, "--", name)
    except GitFailed as exc:
        return [f"its tree cannot be read: {one_line(exc.stderr)}"]
    problems, total = [], 0
    for record in filter(None, out.split("\0")):
        meta, _, rel = record.partition("\t")
        parts = meta.split()
        if len(parts) != 4:
            continue
        mode, _kind, _sha, size = parts
        shown = rel[:120].encode("unicode_escape").decode("ascii")
        if any(part in ("", ".", "..") or "\\" in part
               or part.rstrip(" .").lower() in (".git", "git~1") for part in rel.split("/")):
            problems.append(f"{shown}: a path no checkout may hold")
        elif mode not in FILE_MODES:
            problems.append(f"{shown}: not a file or symlink (git mode {mode})")
        elif size.isdigit():
            total += int(size)
            if int(size) > max_file_bytes:
                problems.append(f"{shown} is {size} bytes (at most {max_file_bytes})")
        if len(problems) >= 5:
            break
    if total > max_skill_bytes:
        problems.append(f"its files hold {total} bytes (at most {max_skill_bytes})")
    return problems


def commit_of(path: Path, sha: str) -> str | None:
    try:
        return git(path, "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}")
    except GitFailed:
        return None


# ---------------------------------------------------------------- writing refs


def create_refs(path: Path, refs: dict[str, str], message: str) -> None:
    """Create every ref (full name → object), all or none; an existing one fails the lot."""
    if not refs:
        return
    script = "start\n" + "".join(f"create {ref} {sha}\n" for ref, sha in refs.items())
    try:
        git(path, "update-ref", "-m", message, "--stdin",
            input=(script + "prepare\ncommit\n").encode())
    except GitFailed as exc:
        raise AgentStateError(f"skills registry: creating {', '.join(refs)} failed: "
                              f"{one_line(exc.stderr)}") from exc


def delete_refs(path: Path, refs: dict[str, str]) -> None:
    """Delete each ref that still points at the given object (others are left alone)."""
    current = {}
    for ref in refs:
        try:
            current[ref] = git(path, "rev-parse", "--verify", "--quiet", ref)
        except GitFailed:
            continue
    doomed = {ref: sha for ref, sha in refs.items() if current.get(ref) == sha}
    if doomed:
        script = "".join(f"delete {ref} {sha}\n" for ref, sha in doomed.items())
        git(path, "update-ref", "--stdin", input=script.encode())


def push_refs(path: Path, remote: Remote, refs: dict[str, str]) -> None:
    """Create each remote ref (remote name → local ref) in one atomic push; each must not
    exist on the remote yet (a lease on "absent"), so a release there is never moved."""
    args = ["push", "--atomic", "--porcelain", "--no-verify"]
    args += [f"--force-with-lease={dst}:" for dst in refs]
    args += [remote.url, *(f"{src}:{dst}" for dst, src in refs.items())]
    try:
        git(path, *args)
    except GitFailed as exc:
        # --porcelain: one line per ref on stdout, "!" marking a rejected one with git's
        # reason in brackets and parentheses; the remote's own words are on stderr.
        rejected = [line.split("\t")[-1].strip() for line in exc.stdout.splitlines()
                    if line.startswith("!")]
        if rejected:
            said = [line[len("remote:"):].strip() for line in exc.stderr.splitlines()
                    if line.startswith("remote:") and line[len("remote:"):].strip()]
            why = "; ".join(dict.fromkeys(rejected)) + (f" ({' '.join(said)})" if said else "")
            raise Refused(f"the remote {remote.display} rejected the push, nothing was pushed:"
                          f" {why[:300]}. If a teammate pushed the same version first, "
                          "`agentstate skill pull` shows the conflict; a rule or hook of the "
                          "remote that refuses refs/agentstate/* must allow them") from exc
        raise _transport_error(remote, exc, "pushing to") from exc


# ---------------------------------------------------------------- revocation records


def write_revocation(path: Path, record: dict[str, Any]) -> str:
    """A revocation record commit (objects only; no ref moves). Returns its id."""
    data = (json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()
    blob = git(path, "hash-object", "-w", "--stdin", input=data)
    tree = git(path, "mktree", input=f"100644 blob {blob}\t{RECORD_FILE}\n".encode())
    message = f"revoke {record['name']} v{record['version']}: {record['reason']}"[:200]
    return git(path, "commit-tree", tree, "-m", message)


def read_revocation(path: Path, sha: str) -> dict[str, Any]:
    """The record a revocation commit holds; InvalidInput naming what is wrong."""
    try:
        size = int(git(path, "cat-file", "-s", f"{sha}:{RECORD_FILE}"))
    except (GitFailed, ValueError) as exc:
        raise InvalidInput(f"no {RECORD_FILE} in it") from exc
    if size > MAX_RECORD_BYTES:
        raise InvalidInput(f"{RECORD_FILE} is {size} bytes (at most {MAX_RECORD_BYTES})")
    try:
        record = json.loads(git(path, "cat-file", "blob", f"{sha}:{RECORD_FILE}"))
    except ValueError as exc:
        raise InvalidInput(f"{RECORD_FILE} is not valid JSON ({exc})") from exc
    if not isinstance(record, dict):
        raise InvalidInput(f"{RECORD_FILE} is not a JSON object")
    if record.get("format") != REVOCATION_FORMAT:
        raise InvalidInput(f"unknown record format {str(record.get('format'))[:60]!r} "
                           f"(this agentstate reads {REVOCATION_FORMAT})")
    for key in ("name", "reason", "tree", "revoked_by", "revoked"):
        if not isinstance(record.get(key), str) or not record[key]:
            raise InvalidInput(f"{RECORD_FILE} has no {key}")
    if not isinstance(record.get("version"), int) or isinstance(record["version"], bool):
        raise InvalidInput(f"{RECORD_FILE} has no version number")
    return record
