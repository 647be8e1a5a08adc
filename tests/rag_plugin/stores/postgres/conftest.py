"""Fixtures of the PostgresStore test modules: a store on the test's own schema."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_plugin.stores.postgres import PostgresStore


@pytest.fixture
def store(dsn: str, pg_schema: str) -> Iterator[PostgresStore]:
    store = PostgresStore(dsn, schema=pg_schema)
    yield store
    store.close()
