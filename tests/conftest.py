"""Fixtures shared by the whole suite: the demo tenants in the test database."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class DemoTenant:
    schema_name: str
    host: str


DEMO_TENANTS = (DemoTenant("acme", "acme.localhost"), DemoTenant("globex", "globex.localhost"))


@pytest.fixture(scope="session")
def demo_tenants(
    django_db_setup: None, django_db_blocker: pytest.FixtureRequest
) -> dict[str, DemoTenant]:
    """Create the public tenant and acme/globex once per test session (schemas are slow)."""
    from tenants.services import tenant_ensure

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        tenant_ensure(schema_name="public", name="Platform", domains=["localhost", "testserver"])
        for tenant in DEMO_TENANTS:
            tenant_ensure(
                schema_name=tenant.schema_name,
                name=tenant.schema_name.title(),
                domains=[tenant.host],
            )
    return {tenant.schema_name: tenant for tenant in DEMO_TENANTS}


@pytest.fixture(autouse=True)
def _public_schema_after_test() -> Iterator[None]:
    """Leave the connection on the public schema whatever a request switched it to."""
    yield
    from django.db import connection

    if hasattr(connection, "set_schema_to_public"):
        connection.set_schema_to_public()
