"""What a released version holds, read from its tag: its files, one file, a diff, its log.

Published content is read back from git, never from the registry's work tree, so editing
a draft cannot change what a version means (registry.py). GitPython is imported inside the
functions, as in registry.py; `read_tree_files` runs the plain git command instead, since
the catalog asks it on every pack and hook.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentstate.errors import NotFound
from agentstate.skills.registry import explain_git_error, open_repo, tag_name


def tag_target(path: Path, name: str, version: int) -> tuple[str, str | None]:
    """(commit a release tag points at, tree of the skill's folder in it)."""
    import git

    repo = open_repo(path)
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

    repo = open_repo(path)
    try:
        out = repo.git.ls_tree("-r", "--name-only", tag_name(name, version), "--", f"{name}/")
    except git.GitCommandError as exc:
        raise NotFound(f"no release {tag_name(name, version)} in the registry") from exc
    prefix = f"{name}/"
    return [line[len(prefix):] for line in out.splitlines() if line.startswith(prefix)]


def read_version_file(path: Path, name: str, version: int, rel: str) -> bytes:
    import git

    repo = open_repo(path)
    try:
        blob = repo.commit(tag_name(name, version)).tree / name / rel
    except (KeyError, git.BadName, ValueError) as exc:
        raise NotFound(f"{rel} is not in {tag_name(name, version)}") from exc
    return blob.data_stream.read()


def materialize(path: Path, name: str, version: int, dest: Path, *,
                links: bool = True, rev: str | None = None) -> list[str]:
    """Write a released version's files into `dest` (replacing it). Returns the files.

    `links=False` (exports into agent folders) never writes a symlink: a link to a file of
    the same skill is written as a copy of that file, any other link is left out. `rev`
    reads the folder from that commit instead of the tag (a pulled release being checked).
    """
    import posixpath
    import shutil

    repo = open_repo(path)
    try:
        tree = repo.commit(rev or tag_name(name, version)).tree / name
    except Exception as exc:  # noqa: BLE001 - GitPython raises several unrelated types here
        raise NotFound(f"no release {tag_name(name, version)} in the registry") from exc
    staging = dest.with_name(dest.name + ".tmp-agentstate")
    shutil.rmtree(staging, ignore_errors=True)
    from git.objects import Blob

    blobs = {Path(b.path).relative_to(name).as_posix(): (b.mode, b.data_stream.read())
             for b in tree.traverse() if isinstance(b, Blob)}
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

    repo = open_repo(path)
    try:
        return repo.git.diff(tag_name(name, va), tag_name(name, vb), "--", f"{name}/")
    except git.GitCommandError as exc:
        what = f"diff {tag_name(name, va)}..{tag_name(name, vb)}"
        raise explain_git_error(path, exc, what) from exc


def _text(message: str | bytes) -> str:
    """A commit message as text: GitPython gives bytes when it could not decode one."""
    return message if isinstance(message, str) else message.decode("utf-8", "replace")


def log_commits(path: Path, name: str) -> list[dict[str, str]]:
    """Commits that touched the skill's folder, newest first."""
    repo = open_repo(path)
    return [
        {"commit": c.hexsha, "message": _text(c.message).strip(),
         "date": c.committed_datetime.isoformat()}
        for c in repo.iter_commits(paths=f"{name}/")
    ]


def read_tree_files(path: Path, trees: list[str], rel: str) -> dict[str, bytes | None]:
    """`rel` inside each of these folder trees (release tree hashes), None where it is
    missing, read with ONE `git cat-file --batch` call.

    The plain git command line, not GitPython: the catalog asks this on every context pack
    and SessionStart hook, where importing GitPython alone would cost more than the answer.
    A tree hash names content, so callers may keep the answer as long as they like.
    """
    import subprocess

    wanted = list(dict.fromkeys(t for t in trees if t))
    if not wanted:
        return {}
    git_dir = path / ".git"
    if not git_dir.exists():  # without its own .git, git would read the host repository
        return dict.fromkeys(wanted)
    request = "".join(f"{tree}:{rel}\n" for tree in wanted).encode()
    try:
        done = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                              input=request, capture_output=True, check=False)
    except OSError:
        return dict.fromkeys(wanted)
    out, at = done.stdout, 0
    found: dict[str, bytes | None] = {}
    for tree in wanted:
        end = out.find(b"\n", at)
        if end < 0:
            found[tree] = None
            continue
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found[tree] = out[at:at + size]
            at += size + 1  # the content is followed by a newline
        else:  # "<name> missing" (or not a blob): nothing to read
            found[tree] = None
    return found
