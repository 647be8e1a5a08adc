"""Fixtures for API tests: a fresh allowlisted source per test and database snapshots."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql

from tests.conftest import PortalServer


@pytest.fixture
def source(portal_server: PortalServer) -> str:
    """A collection name allowlisted in acme and globex for this test only."""
    return portal_server.new_source()


@pytest.fixture
def set_source(portal_server: PortalServer) -> Callable[[str, str, bool], None]:
    """Enable or disable an allowlist entry of a tenant."""
    return portal_server.set_source


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
