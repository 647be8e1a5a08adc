"""PostgresStore: the shared store and usage contracts, with the default plan and through HNSW."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_plugin.stores.base import Store
from rag_plugin.stores.postgres import PostgresStore

from ..store_contract import StoreContract
from ..usage_contract import UsageContract


class TestPostgresStore(StoreContract, UsageContract):
    """The contract with the default plan choice (exact for these small collections)."""

    @pytest.fixture
    def store(self, dsn: str, pg_schema: str) -> Iterator[Store]:
        store = PostgresStore(dsn, schema=pg_schema)
        yield store
        store.close()


class TestPostgresStoreThroughHnsw(StoreContract):
    """The contract again with every dense query sent to the HNSW index first."""

    @pytest.fixture
    def store(self, dsn: str, pg_schema: str) -> Iterator[Store]:
        store = PostgresStore(dsn, schema=pg_schema, exact_search_below=0)
        yield store
        store.close()
