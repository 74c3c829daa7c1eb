"""The scanner's mark (memory/scanned.py) changes with every module that holds its rules:
a version an older scanner passed must be scanned again, so a rule edited in the table of
known formats has to change the fingerprint as much as one edited in the scan."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from agentstate import secret_formats, secret_scan
from agentstate.memory import scanned

# agentstate modules secret_scan imports that hold no rule: a lazily compiled pattern's
# wrapper (the pattern itself is written in the rule's module).
PLUMBING = {"agentstate.lazy_re"}


@pytest.fixture
def fresh_fingerprint():
    scanned.scanner_fingerprint.cache_clear()
    yield scanned.scanner_fingerprint
    scanned.scanner_fingerprint.cache_clear()


def _imported_agentstate_modules(module) -> set[str]:
    tree = ast.parse(Path(module.__file__).read_text())
    names = {node.module for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
              for alias in node.names}
    return {n for n in names if n.startswith("agentstate.")}


def test_every_module_the_scan_imports_is_a_rule_module_or_plumbing():
    imported = _imported_agentstate_modules(secret_scan)
    assert "agentstate.secret_formats" in imported  # the check below sees real imports
    hashed = {module.__name__ for module in scanned.scanner_modules()}
    assert imported - PLUMBING <= hashed
    assert "agentstate.secret_scan" in hashed


@pytest.mark.parametrize("module", [secret_scan, secret_formats], ids=lambda m: m.__name__)
def test_a_change_to_any_rule_module_changes_the_mark(module, fresh_fingerprint, tmp_path,
                                                      monkeypatch):
    before = fresh_fingerprint()
    assert fresh_fingerprint() == before  # the same sources, the same fingerprint
    edited = tmp_path / Path(module.__file__).name
    shutil.copyfile(module.__file__, edited)
    with edited.open("a") as handle:
        handle.write("\n# one more rule\n")
    monkeypatch.setattr(module, "__file__", str(edited))
    scanned.scanner_fingerprint.cache_clear()
    assert fresh_fingerprint() != before
    assert len(scanned.scanner_mark()) == scanned.MARK_LENGTH


def test_an_unreadable_source_falls_back_to_the_release(fresh_fingerprint, tmp_path,
                                                        monkeypatch):
    from agentstate.distribution import __version__

    monkeypatch.setattr(secret_formats, "__file__", str(tmp_path / "gone.py"))
    assert fresh_fingerprint() == __version__
