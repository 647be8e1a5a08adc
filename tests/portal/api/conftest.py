"""Fixtures for API tests: a fresh allowlisted source per test and database snapshots."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql

from tests.conftest import PortalServer


@pytest.fixture
def source(portal_server: PortalServer, django_db_blocker: pytest.FixtureRequest) -> Iterator[str]:
    """A collection name allowlisted in acme and globex for this test only."""
    from tenants.services import rag_source_set

    name = f"src_{uuid.uuid4().hex[:10]}"
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        for schema in ("acme", "globex"):
            rag_source_set(schema_name=schema, name=name, enabled=True, actor="tests")
    return name


@pytest.fixture
def set_source(
    portal_server: PortalServer, django_db_blocker: pytest.FixtureRequest
) -> Callable[[str, str, bool], None]:
    """Enable or disable an allowlist entry, as the tenant admin's form would."""
    from tenants.services import rag_source_set

    def set_(schema: str, name: str, enabled: bool) -> None:
        with django_db_blocker.unblock():  # type: ignore[attr-defined]
            rag_source_set(schema_name=schema, name=name, enabled=enabled, actor="tests")

    return set_


@pytest.fixture
def snapshot(portal_server: PortalServer) -> Callable[[], dict[str, int]]:
    """Row counts of every table in the acme and globex schemas: 'database unchanged'."""

    def take() -> dict[str, int]:
        counts = {}
        with psycopg.connect(portal_server.database_url, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema IN ('acme', 'globex') AND table_type = 'BASE TABLE' "
                "AND table_name NOT LIKE 'django_session%%' ORDER BY 1, 2"
            ).fetchall()
            for schema, table in tables:
                query = sql.SQL("SELECT count(*) FROM {}.{}").format(
                    sql.Identifier(schema), sql.Identifier(table)
                )
                counts[f"{schema}.{table}"] = conn.execute(query).fetchone()[0]
        return counts

    return take
