"""Database fixtures for the store tests: one DSN per session, a fresh schema per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from portal.embedded_db import database_url

from .pg_helpers import drop_schema


@pytest.fixture(scope="session")
def dsn() -> str:
    """``DATABASE_URL`` or the embedded PostgreSQL (pgvector, pg_trgm in ``public``)."""
    return database_url()


@pytest.fixture
def pg_schema(dsn: str) -> Iterator[str]:
    """A uniquely named schema (created by the store under test), dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    yield name
    drop_schema(dsn, name)
