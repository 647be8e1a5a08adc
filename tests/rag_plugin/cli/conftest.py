"""Fixtures for the ragctl tests: a fake portal on loopback and a clean environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.rag_plugin.cli.fake_portal import FakePortal, running_fake_portal


@pytest.fixture(autouse=True)
def _no_ragctl_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's RAG_HOST / RAG_TOKEN must not change what these tests send."""
    monkeypatch.delenv("RAG_HOST", raising=False)
    monkeypatch.delenv("RAG_TOKEN", raising=False)


@pytest.fixture
def fake_portal() -> Iterator[FakePortal]:
    with running_fake_portal() as portal:
        yield portal
