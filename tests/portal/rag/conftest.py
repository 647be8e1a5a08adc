"""Fixtures of the business-layer tests that run in the demo tenant's schema."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django_tenants.utils import schema_context

from tenants.models import RagSource


@pytest.fixture
def fake_embedder(settings: Any) -> None:
    """The deterministic fake embedder, for tests where the vector values don't matter."""
    settings.RAG = {**settings.RAG, "EMBEDDER": "fake"}


@pytest.fixture
def acme(demo_tenants: Any) -> Iterator[None]:
    """Inside the demo tenant acme's schema."""
    with schema_context("acme"):
        yield


@pytest.fixture
def source(acme: None) -> str:
    """A fresh source name of acme's allowlist, enabled (its ``src_`` prefix is fixed)."""
    name = f"src_{uuid.uuid4().hex[:10]}"
    RagSource.objects.create(name=name, enabled=True)
    return name
