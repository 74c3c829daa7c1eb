"""The wheel that `pip install .`, pipx and uv build holds every file the package reads.

An editable install reads the source tree, so a file left out of the package data only shows
when someone installs the ordinary way: `agentstate ui` without its templates, say."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT


def _tracked() -> list[str]:
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [p for p in done.stdout.decode().split("\0") if p]


def _build_wheel(tmp_path: Path) -> set[str]:
    """Built from a copy of the tracked files: the build writes build/ and egg-info folders
    beside its sources, which must not land in the working tree."""
    source = tmp_path / "src"
    for name in _tracked():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        origin = ROOT / name
        if origin.is_symlink():
            target.symlink_to(origin.readlink())
        elif origin.is_file():
            shutil.copy2(origin, target)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "dist"), str(source)],
                   check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("agentstate_cli-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_the_wheel_holds_every_file_of_the_package_and_the_shipped_skills(tmp_path):
    inside = _build_wheel(tmp_path)
    tracked = _tracked()
    expected = {p for p in tracked if p.startswith("agentstate/")
                and not (ROOT / p).is_symlink()}
    expected |= {"agentstate/bundled_skills/" + p.removeprefix("skills/") for p in tracked
                 if p.startswith("skills/")}
    assert any(p.startswith("agentstate/web/templates/") for p in expected)
    assert sorted(expected - inside) == []
    assert not [p for p in inside if p.startswith(("tests/", "bench/", "demo/"))]
