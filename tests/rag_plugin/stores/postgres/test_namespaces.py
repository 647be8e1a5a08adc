"""The PostgreSQL store's lifecycle on the ``Store`` contract: a store per schema from one
pool (``for_namespace``), its embedding cache, and its tables dropped (``drop_namespace``)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.stores.postgres import PostgresEmbeddingCache, PostgresStore
from rag_plugin.testing import FakeEmbedder

from ..pg_helpers import drop_schema
from ..store_contract import chunk_inputs

EMBEDDER = FakeEmbedder(dimensions=8)


def _tables(dsn: str, schema: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (schema,)
        ).fetchall()
    return [name for (name,) in rows]


def test_a_namespace_is_a_schema_on_the_same_pool_and_settings(dsn: str) -> None:
    schemas = [f"test_ns_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    pool: ConnectionPool = ConnectionPool(
        dsn, min_size=1, max_size=2, kwargs={"autocommit": True}, open=True
    )
    root = PostgresStore(pool, schema="public", create_schema=False, ef_search=77)
    try:
        acme, globex = (root.for_namespace(name) for name in schemas)
        assert isinstance(acme, PostgresStore)
        assert (acme.schema, globex.schema, acme.ef_search) == (schemas[0], schemas[1], 77)
        assert "rag_collections" in _tables(dsn, schemas[0])  # created, migrated
        collection = acme.create_collection("docs", dimensions=8, embedding_model="fake-8")
        _, chunks = chunk_inputs(["otters hold hands"], EMBEDDER.embed(["otters hold hands"]))
        acme.upsert_document(collection, DocumentInput(source="a.md"), chunks)
        assert globex.list_collections() == []
        assert [hit.chunk.content for hit in acme.bm25(collection, "otters", 5)] == [
            "otters hold hands"
        ]

        cache = acme.embedding_cache()
        assert isinstance(cache, PostgresEmbeddingCache)
        cache.put_many("fake-8", {"hash": [1.0, 2.0]})
        assert cache.get_many("fake-8", ["hash"]) == {"hash": [1.0, 2.0]}
        assert globex.embedding_cache().get_many("fake-8", ["hash"]) == {}

        acme.close()  # a namespace's store lends the pool: closing it leaves the pool open
        assert globex.list_collections() == []
        assert root.drop_namespace(schemas[0]) == 1
        assert _tables(dsn, schemas[0]) == []  # the schema stays, the store's tables go
        assert "rag_collections" in _tables(dsn, schemas[1])
        assert root.drop_namespace(schemas[0]) == 0  # nothing left
        assert root.drop_namespace("test_ns_never_made") == 0
    finally:
        root.close()
        pool.close()
        for name in schemas:
            drop_schema(dsn, name)


def test_a_namespace_name_is_checked_before_any_sql(dsn: str) -> None:
    root = PostgresStore(dsn, schema="public", create_schema=False)
    try:
        with pytest.raises(InvalidInputError, match="Schema name"):
            root.drop_namespace('acme"; DROP TABLE x; --')
    finally:
        root.close()


def test_the_memory_store_has_no_namespaces() -> None:
    store = MemoryStore()
    with pytest.raises(ConfigurationError, match="no namespaces"):
        store.for_namespace("acme")
    with pytest.raises(ConfigurationError, match="no namespaces"):
        store.drop_namespace("acme")
    assert store.embedding_cache() is None
