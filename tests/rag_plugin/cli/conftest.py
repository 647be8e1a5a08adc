"""Fixtures for the ragctl tests: a fake portal on loopback, fake time, a clean environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_plugin.cli.waiting import Pacer
from tests.rag_plugin.cli.fake_portal import FakePortal, running_fake_portal


class FakeTime:
    """A clock that moves only when ragctl sleeps: polls cost no time and timeouts are exact."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture(autouse=True)
def _no_ragctl_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's RAG_HOST / RAG_TOKEN must not change what these tests send."""
    monkeypatch.delenv("RAG_HOST", raising=False)
    monkeypatch.delenv("RAG_TOKEN", raising=False)


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    """Swap the pacer's clock and sleep (its seams) for a :class:`FakeTime`."""
    time = FakeTime()
    monkeypatch.setattr(Pacer, "clock", staticmethod(time.clock))
    monkeypatch.setattr(Pacer, "sleep", staticmethod(time.sleep))
    return time


@pytest.fixture
def fake_portal(fake_time: FakeTime) -> Iterator[FakePortal]:
    """A fresh fake portal; ragctl's waits against it take no real time."""
    with running_fake_portal() as portal:
        yield portal
