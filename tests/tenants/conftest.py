"""Fixtures of the in-process tenant-admin tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django_tenants.utils import schema_context

from tests.conftest import DemoTenant


@pytest.fixture
def acme(demo_tenants: dict[str, DemoTenant]) -> Iterator[None]:
    """Run the test's ORM calls in acme's schema (the client's requests switch on their own)."""
    with schema_context("acme"):
        yield
