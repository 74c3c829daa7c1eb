"""Fixtures of the memory tests."""

from __future__ import annotations

import pytest

from agentstate.memory import dense_model


@pytest.fixture
def embedder(monkeypatch):
    """The installed dense model (loaded from the package alone: a hub client looking for
    it online would fail here rather than download)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    found = dense_model.load_embedder()
    assert found is not None, "the dense extra is part of [dev]: wordllama must be installed"
    return found
