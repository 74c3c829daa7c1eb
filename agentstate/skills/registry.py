"""The skills registry: `.agentstate/skills/` is its own git repository.

One folder per skill; a release is a commit of that folder tagged `<name>/v<N>` (annotated).
The work tree holds drafts and candidates; published content is always read back from the
tag, never from the work tree, so editing a draft cannot change what a version means.

This module and release_files.py (what a release holds, read back) are the only users of
GitPython (imported lazily inside functions: it is slow to import and `agentstate --help`
must not pay for it).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from agentstate.errors import AgentStateError, CorruptStore

if TYPE_CHECKING:
    from git import Repo  # for annotations only: importing GitPython costs start-up time

IGNORED = ("__pycache__", ".DS_Store")
CACHE_DIR = ".releases"  # released versions checked out for load/run/test (not content)
EXCLUDE_LINES = ("__pycache__/", "*.pyc", ".DS_Store", f"/{CACHE_DIR}/")


def ensure_registry(path: Path) -> bool:
    """Create the registry repository if it is missing. Returns True when it created one."""
    if (path / ".git").exists():
        _ensure_exclude(path)
        return False
    import git

    path.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cfg:
        cfg.set_value("user", "name", "agentstate")
        cfg.set_value("user", "email", "agentstate@localhost")
    _ensure_exclude(path)
    readme = path / "README.md"
    readme.write_text(
        "# agentstate skills registry\n\nOne folder per skill; each release is a commit tagged "
        "`<name>/v<N>`. Managed by `agentstate skill`.\n",
        encoding="utf-8",
    )
    repo.index.add(["README.md"])
    repo.index.commit("registry: initialise")
    return True


def _ensure_exclude(path: Path) -> None:
    exclude = path / ".git" / "info" / "exclude"
    try:
        current = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        missing = [line for line in EXCLUDE_LINES if line not in current.splitlines()]
        if missing:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            prefix = "\n" if current and not current.endswith("\n") else ""
            exclude.write_text(current + prefix + "# agentstate: never part of a release\n"
                               + "\n".join(missing) + "\n", encoding="utf-8")
    except OSError:
        pass  # a read-only registry still validates and loads


def open_repo(path: Path) -> Repo:
    import git

    if not (path / ".git").exists():
        raise CorruptStore(f"the skills registry {path} is not a git repository "
                           "(run `agentstate init` to create it)")
    _ensure_exclude(path)  # registries made by older versions get the newer lines too
    try:
        return git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise CorruptStore(f"the skills registry {path} is damaged: {exc}") from exc


def tag_name(name: str, version: int) -> str:
    return f"{name}/v{version}"


# ---------------------------------------------------------------- content identity


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_hash(folder: Path) -> str | None:
    """The git tree hash of a folder, computed without git (None for an empty folder).

    Matches what `git add` + `git write-tree` give for the folder (caches excluded), so a test
    result recorded for a tree applies exactly to the content a publish commits.
    """
    entries = []
    with os.scandir(folder) as it:
        for child in it:
            if child.name in IGNORED or child.name.endswith(".pyc") or child.name == ".git":
                continue
            if child.is_symlink():
                target = os.readlink(child.path).encode()
                entries.append((child.name.encode(), b"120000", _blob_sha(target), False))
            elif child.is_dir():
                sub = tree_hash(Path(child.path))
                if sub is not None:
                    entries.append((child.name.encode(), b"40000", sub, True))
            elif child.is_file():
                mode = os.stat(child.path).st_mode
                kind = b"100755" if mode & stat.S_IXUSR else b"100644"
                entries.append((child.name.encode(), kind, _blob_sha(Path(child.path).read_bytes()),
                                False))
    if not entries:
        return None
    entries.sort(key=lambda e: e[0] + (b"/" if e[3] else b""))
    data = b"".join(
        mode + b" " + name + b"\0" + bytes.fromhex(sha) for name, mode, sha, _ in entries
    )
    return hashlib.sha1(b"tree %d\0" % len(data) + data).hexdigest()


# ---------------------------------------------------------------- releases
#
# A release is built without touching HEAD, the branch or the shared index: the folders are
# staged in a private index, written as a tree and a commit object (objects only), and then
# HEAD's branch and every tag move in ONE `git update-ref --stdin` transaction. A crash can
# therefore leave only (a) nothing visible, or (b) branch + tags moved but no database row;
# the publish journal (agentstate.skills.journal) finishes (b) and cleans up after (a).

PRIVATE_INDEX = "agentstate-index-"  # private index files in .git (one per publishing pid)


def head_commit(path: Path) -> str:
    return open_repo(path).git.rev_parse("HEAD")


def build_release_commit(path: Path, names: list[str], message: str, previous: str
                         ) -> tuple[str, dict[str, str]]:
    """Commit object for `previous` + the named folders as they are in the work tree.

    Returns (commit, {name: tree of its folder}). Nothing a reader sees changes: no ref
    moves and the shared index is not touched (so no `.git/index.lock` is taken).
    """
    import git

    repo = open_repo(path)
    index = Path(repo.git_dir) / f"{PRIVATE_INDEX}{os.getpid()}"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        repo.git.read_tree(previous, env=env)
        repo.git.add("--all", "--", *names, env=env)
        root = repo.git.write_tree(env=env)
        trees: dict[str, str] = {}
        for line in repo.git.ls_tree(root, "--", *names).splitlines():
            meta, _, entry = line.partition("\t")
            trees[entry] = meta.split()[2]
        commit = repo.git.commit_tree(root, "-p", previous, "-m", message)
    except git.GitCommandError as exc:
        raise explain_git_error(path, exc, "building the release commit") from exc
    finally:
        for leftover in (index, index.with_name(index.name + ".lock")):
            leftover.unlink(missing_ok=True)
    return commit, trees


def move_refs(path: Path, previous: str, commit: str, tags: list[str], message: str) -> None:
    """HEAD's branch from `previous` to `commit` and every tag created, all or none."""
    import tempfile

    import git

    repo = open_repo(path)
    script = f"start\nupdate HEAD {commit} {previous}\n" + "".join(
        f"create refs/tags/{tag} {commit}\n" for tag in tags) + "prepare\ncommit\n"
    try:
        with tempfile.TemporaryFile() as stdin:
            stdin.write(script.encode())
            stdin.seek(0)
            repo.git.update_ref("-m", message, "--stdin", istream=stdin)
    except git.GitCommandError as exc:
        raise explain_git_error(path, exc, f"tagging {', '.join(tags)}", tags=tags) from exc


def sync_index(path: Path) -> None:
    """The shared index back to HEAD (what `git reset --mixed` does; the work tree, where
    drafts live, is never touched)."""
    import git

    repo = open_repo(path)
    try:
        repo.git.read_tree("HEAD")
    except git.GitCommandError as exc:
        raise explain_git_error(path, exc, "updating the registry index") from exc
    try:
        repo.git.update_index("-q", "--refresh")  # stat info only; "needs update" is fine
    except git.GitCommandError:
        pass


def rewind(path: Path, commit: str, previous: str, tags: list[str]) -> None:
    """Undo `move_refs`: delete the tags that point at `commit`, HEAD back to `previous` if it
    is still at `commit`, then the index back to HEAD."""
    import git

    repo = open_repo(path)
    pointing = {t for t, c in tag_commits(path).items() if c == commit}
    lines = [f"delete refs/tags/{t} {commit}\n" for t in tags if t in pointing]
    if repo.git.rev_parse("HEAD") == commit:
        lines.append(f"update HEAD {previous} {commit}\n")
    if lines:
        import tempfile

        try:
            with tempfile.TemporaryFile() as stdin:
                stdin.write(("start\n" + "".join(lines) + "prepare\ncommit\n").encode())
                stdin.seek(0)
                repo.git.update_ref("-m", "agentstate: roll back an unfinished publish",
                                    "--stdin", istream=stdin)
        except git.GitCommandError as exc:
            raise explain_git_error(path, exc, "rolling back an unfinished publish") from exc
    sync_index(path)


def tag_commits(path: Path) -> dict[str, str]:
    """{tag: commit it points at} for every tag."""
    repo = open_repo(path)
    out = repo.git.for_each_ref("--format=%(refname:strip=2) %(objectname) %(*objectname)",
                                "refs/tags")
    result = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            result[parts[0]] = parts[2] if len(parts) > 2 else parts[1]
    return result


def commit_exists(path: Path, commit: str) -> bool:
    import git

    try:
        return open_repo(path).git.cat_file("-t", commit) == "commit"
    except git.GitCommandError:
        return False


def folder_tree(path: Path, commit: str, name: str) -> str | None:
    import git

    try:
        return open_repo(path).git.rev_parse(f"{commit}:{name}")
    except git.GitCommandError:
        return None


def create_tag(path: Path, tag: str, commit: str) -> None:
    import git

    try:
        open_repo(path).git.update_ref(f"refs/tags/{tag}", commit, "")
    except git.GitCommandError as exc:
        raise explain_git_error(path, exc, f"tagging {tag}", tags=[tag]) from exc


def delete_tag(path: Path, tag: str) -> None:
    import git

    try:
        open_repo(path).git.update_ref("-d", f"refs/tags/{tag}")
    except git.GitCommandError as exc:
        raise explain_git_error(path, exc, f"deleting tag {tag}") from exc


def untagged_head(path: Path) -> tuple[list[str], str]:
    """Commits at the tip of the branch that no tag reaches (newest first), and the commit
    the branch would be reset to (the newest tagged one, or the registry's first commit).

    Every commit agentstate makes after the first is a tagged release, so an untagged tip is
    a commit left by an interrupted publish of an older agentstate (or made by hand)."""
    repo = open_repo(path)
    untagged = set(repo.git.rev_list("HEAD", "--not", "--tags").split())
    orphans: list[str] = []
    for commit in repo.git.rev_list("--first-parent", "HEAD").split():
        parents = repo.git.rev_list("--parents", "-n", "1", commit).split()[1:]
        if commit not in untagged or not parents:
            return orphans, commit
        orphans.append(commit)
    return orphans, repo.git.rev_parse("HEAD")


def reset_branch(path: Path, target: str, expected: str) -> None:
    """Move HEAD's branch back to `target` (only if it is still at `expected`), then the index;
    the work tree keeps the drafts."""
    import git

    repo = open_repo(path)
    try:
        repo.git.update_ref("-m", "agentstate: drop an unreleased commit", "HEAD", target,
                            expected)
    except git.GitCommandError as exc:
        raise explain_git_error(path, exc, "resetting the registry branch") from exc
    sync_index(path)


# ---------------------------------------------------------------- git locks

LOCK_NAMES = ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock", "ORIG_HEAD.lock")


def git_locks(path: Path) -> list[Path]:
    """Lock files git leaves behind when it is killed while writing (index, HEAD, refs)."""
    git_dir = path / ".git"
    if not git_dir.is_dir():
        return []
    found = [git_dir / n for n in LOCK_NAMES if (git_dir / n).exists()]
    refs = git_dir / "refs"
    if refs.is_dir():
        found += sorted(p for p in refs.rglob("*.lock") if p.is_file())
    return found


def private_indexes(path: Path) -> list[tuple[Path, int]]:
    """Private index files of publishes (and the pid that made each)."""
    git_dir = path / ".git"
    found = []
    for file in git_dir.glob(f"{PRIVATE_INDEX}*") if git_dir.is_dir() else []:
        digits = file.name[len(PRIVATE_INDEX):].removesuffix(".lock")
        if digits.isdigit():
            found.append((file, int(digits)))
    return found


def explain_git_error(path: Path, exc: Exception, what: str,
                      tags: list[str] | None = None) -> AgentStateError:
    """The real cause of a failed git step: a lock file left by a killed git (named, with the
    repair), an existing tag (only when that tag really exists), else git's own message."""
    detail = " ".join(str(getattr(exc, "stderr", "") or exc).split())[:300]
    locks = git_locks(path)
    if locks and ("lock" in detail or "File exists" in detail):
        names = ", ".join(str(p.relative_to(path)) for p in locks)
        return CorruptStore(
            f"skills registry: {what} failed: git's lock file {names} exists (a git process "
            f"is working in {path}, or one was killed). If none is running, `agentstate "
            "doctor --repair` removes it", details={"locks": [str(p) for p in locks]})
    existing = [t for t in tags or [] if t in tag_commits(path)]
    if existing:
        return CorruptStore(
            f"skills registry: the registry already has tag {', '.join(existing)} but the "
            "database has no release for it (a publish interrupted by an older agentstate, or "
            "a replaced state.db); nothing was published. `agentstate doctor --repair` "
            "removes it", details={"tags": existing})
    return AgentStateError(f"skills registry: {what} failed: {detail}")


def list_tags(path: Path) -> list[str]:
    return sorted(open_repo(path).git.tag("-l").split())


def tag_exists(path: Path, name: str, version: int) -> bool:
    return tag_name(name, version) in list_tags(path)
