"""The skills registry: `.agentstate/skills/` is its own git repository.

One folder per skill; a release is a commit of that folder tagged `<name>/v<N>` (annotated).
The work tree holds drafts and candidates; published content is always read back from the
tag, never from the work tree, so editing a draft cannot change what a version means.

This module is the only user of GitPython (imported lazily inside functions: it is slow to
import and `agentstate --help` must not pay for it).
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from agentstate.errors import AgentStateError, CorruptStore, NotFound

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


def _repo(path: Path):
    import git

    if not (path / ".git").exists():
        raise CorruptStore(f"the skills registry {path} is not a git repository "
                           "(run `agentstate init` to create it)")
    _ensure_exclude(path)  # registries made by older versions get the newer lines too
    try:
        return git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise CorruptStore(f"the skills registry {path} is damaged: {exc}") from exc


def _git_error(exc: Exception, what: str) -> AgentStateError:
    detail = getattr(exc, "stderr", "") or str(exc)
    detail = " ".join(str(detail).split())[:300]
    return AgentStateError(f"skills registry: {what} failed: {detail}")


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


def head_commit(path: Path) -> str:
    return _repo(path).git.rev_parse("HEAD")


def commit_release(path: Path, name: str, version: int, message: str) -> tuple[str, str]:
    """Commit the skill's folder and tag it `<name>/v<N>`. Returns (commit, tree of folder)."""
    commit, trees, _ = commit_releases(path, [(name, version)], message)
    return commit, trees[name]


def commit_releases(
    path: Path, releases: list[tuple[str, int]], message: str
) -> tuple[str, dict[str, str], str]:
    """Commit the named skill folders in one commit and tag each `<name>/v<N>`.

    Returns (commit, {name: tree hash of its folder}, previous HEAD). All or nothing on the
    git side: the tags are created in one `git update-ref --stdin` transaction (all or none;
    an existing tag fails it), and if the commit or the tags fail, HEAD and the index are put
    back (the work tree, i.e. the drafts, is never touched). Tags are lightweight: the
    release commit carries the message. Few git processes on purpose: `init` installs the
    shipped skills through here.
    """
    import tempfile

    import git

    repo = _repo(path)
    names = [name for name, _ in releases]
    previous = repo.git.rev_parse("HEAD")
    committed = False
    try:
        repo.git.add("--all", "--", *names)
        repo.git.commit("-q", "-m", message, "--no-verify", "--", *names)
        committed = True
        commit = repo.git.rev_parse("HEAD")
        trees = {}
        for line in repo.git.ls_tree(commit, "--", *names).splitlines():
            meta, _, entry = line.partition("\t")
            trees[entry] = meta.split()[2]
        script = "start\n" + "".join(
            f"create refs/tags/{tag_name(n, v)} {commit}\n" for n, v in releases
        ) + "prepare\ncommit\n"
        with tempfile.TemporaryFile() as stdin:
            stdin.write(script.encode())
            stdin.seek(0)
            repo.git.update_ref("--stdin", istream=stdin)
    except git.GitCommandError as exc:
        _restore(repo, previous if committed else None, [])
        detail = str(getattr(exc, "stderr", "") or "")
        tags = ", ".join(tag_name(*r) for r in releases)
        if "exists" in detail:
            existing = [t for t in (tag_name(*r) for r in releases) if t in list_tags(path)]
            named = ", ".join(existing) or tags
            raise CorruptStore(
                f"the registry already has tag {named} but the database has no release for it "
                "(a publish interrupted after tagging, or a replaced state.db); nothing was "
                f"published. Inspect it with `git -C {path} show {named.split(', ')[0]}`; "
                "delete it with `git tag -d` there to publish this version again") from exc
        raise _git_error(exc, f"publishing {tags}") from exc
    except BaseException:
        _restore(repo, previous if committed else None, [])
        raise
    return commit, trees, previous


def _restore(repo, previous: str | None, tags: list[str]) -> None:
    import git

    for tag in tags:
        try:
            repo.git.tag("-d", tag)
        except git.GitCommandError:
            pass  # already gone
    if previous is not None:
        # --mixed: HEAD and index back to `previous`; the work tree (the draft) stays as is.
        repo.git.reset("--mixed", "-q", previous)
    else:
        try:
            repo.git.reset("-q")  # unstage whatever `git add` staged
        except git.GitCommandError:
            pass


def undo_releases(path: Path, releases: list[tuple[str, int]], previous: str) -> None:
    """Roll the git side of releases back (used when the database write fails after it)."""
    _restore(_repo(path), previous, [tag_name(n, v) for n, v in releases])


def undo_release(path: Path, name: str, version: int, previous: str) -> None:
    undo_releases(path, [(name, version)], previous)


def list_tags(path: Path) -> list[str]:
    return sorted(_repo(path).git.tag("-l").split())


def tag_exists(path: Path, name: str, version: int) -> bool:
    return tag_name(name, version) in list_tags(path)


def tag_target(path: Path, name: str, version: int) -> tuple[str, str | None]:
    """(commit a release tag points at, tree of the skill's folder in it)."""
    import git

    repo = _repo(path)
    tag = tag_name(name, version)
    commit = repo.git.rev_parse(f"{tag}^{{commit}}")
    try:
        tree = repo.git.rev_parse(f"{commit}:{name}")
    except git.GitCommandError:
        tree = None
    return commit, tree


def version_files(path: Path, name: str, version: int) -> list[str]:
    """Paths (relative to the skill folder) in a released version."""
    import git

    repo = _repo(path)
    try:
        out = repo.git.ls_tree("-r", "--name-only", tag_name(name, version), "--", f"{name}/")
    except git.GitCommandError as exc:
        raise NotFound(f"no release {tag_name(name, version)} in the registry") from exc
    prefix = f"{name}/"
    return [line[len(prefix):] for line in out.splitlines() if line.startswith(prefix)]


def read_version_file(path: Path, name: str, version: int, rel: str) -> bytes:
    import git

    repo = _repo(path)
    try:
        blob = repo.commit(tag_name(name, version)).tree / name / rel
    except (KeyError, git.BadName, ValueError) as exc:
        raise NotFound(f"{rel} is not in {tag_name(name, version)}") from exc
    return blob.data_stream.read()


def materialize(path: Path, name: str, version: int, dest: Path, *,
                links: bool = True) -> list[str]:
    """Write a released version's files into `dest` (replacing it). Returns the files.

    `links=False` (exports into agent folders) never writes a symlink: a link to a file of
    the same skill is written as a copy of that file, any other link is left out.
    """
    import posixpath
    import shutil

    repo = _repo(path)
    try:
        tree = repo.commit(tag_name(name, version)).tree / name
    except Exception as exc:  # noqa: BLE001 - GitPython raises several unrelated types here
        raise NotFound(f"no release {tag_name(name, version)} in the registry") from exc
    staging = dest.with_name(dest.name + ".tmp-agentstate")
    shutil.rmtree(staging, ignore_errors=True)
    blobs = {Path(b.path).relative_to(name).as_posix(): (b.mode, b.data_stream.read())
             for b in tree.traverse() if b.type == "blob"}
    files = []
    for rel, (mode, data) in blobs.items():
        if mode == 0o120000 and not links:
            seen = rel
            for _ in range(8):  # a chain of links inside the skill, never a loop
                seen = posixpath.normpath(posixpath.join(posixpath.dirname(seen),
                                                         blobs[seen][1].decode()))
                if seen not in blobs or blobs[seen][0] != 0o120000:
                    break
            if seen not in blobs or blobs[seen][0] == 0o120000:
                continue  # leaves the skill (or dangles): not written
            mode, data = blobs[seen]
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == 0o120000:
            os.symlink(data.decode(), target)
        else:
            target.write_bytes(data)
            if mode & 0o100:
                target.chmod(0o755)
        files.append(rel)
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(dest)
    return sorted(files)


def diff_versions(path: Path, name: str, va: int, vb: int) -> str:
    import git

    repo = _repo(path)
    try:
        return repo.git.diff(tag_name(name, va), tag_name(name, vb), "--", f"{name}/")
    except git.GitCommandError as exc:
        raise _git_error(exc, f"diff {tag_name(name, va)}..{tag_name(name, vb)}") from exc


def log_commits(path: Path, name: str) -> list[dict[str, str]]:
    """Commits that touched the skill's folder, newest first."""
    repo = _repo(path)
    return [
        {"commit": c.hexsha, "message": c.message.strip(), "date": c.committed_datetime.isoformat()}
        for c in repo.iter_commits(paths=f"{name}/")
    ]
