"""PostgresStore's connections and scoping: names checked before SQL, lent connections and pools."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.base import CollectionInfo, DocumentInput
from rag_plugin.stores.postgres import PostgresStore

from ..store_contract import chunk_inputs


@pytest.mark.parametrize(
    "name", ["x; DROP TABLE rag_chunks", "x'; --", 'q"uote', "n" * 64, "naïve", "名前"]
)
def test_hostile_collection_names_fail_before_any_sql(dsn: str, pg_schema: str, name: str) -> None:
    # The store's only connection is closed: any SQL would raise StoreError, not this.
    conn = psycopg.connect(dsn, autocommit=True)
    store = PostgresStore(conn, schema=pg_schema)
    conn.close()
    info = CollectionInfo(name, None, 2, "m")
    calls: list[Callable[[], object]] = [
        lambda: store.create_collection(name, dimensions=2, embedding_model="m"),
        lambda: store.get_collection(name),
        lambda: store.delete_collection(name),
        lambda: store.upsert_document(info, DocumentInput(), []),
        lambda: store.dense(info, [1.0, 0.0], 3),
        lambda: store.bm25(info, "x", 3),
        lambda: store.fuzzy(info, "x", 3),
        lambda: store.correct_query(info, "x"),
        lambda: store.list_documents(info),
        lambda: store.delete_document(info, "d"),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match="collection name"):
            call()


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "in_a_transaction"])
def test_a_lent_connection_keeps_its_search_path(
    dsn: str, pg_schema: str, autocommit: bool
) -> None:
    with psycopg.connect(dsn, autocommit=autocommit) as conn:
        conn.execute("SET search_path TO pg_catalog, public")
        store = PostgresStore(conn, schema=pg_schema)
        collection = store.create_collection("docs", dimensions=2, embedding_model="m")
        _, chunks = chunk_inputs(["lent connection text"], [[0.0, 1.0]])
        store.upsert_document(collection, DocumentInput(), chunks)
        assert [h.chunk.content for h in store.bm25(collection, "lent", 3)] == [
            "lent connection text"
        ]
        assert conn.execute("SHOW search_path").fetchone() == ("pg_catalog, public",)
        conn.commit()


def test_a_lent_pool_serves_two_tenant_schemas_apart(dsn: str, pg_schema: str) -> None:
    other = f"{pg_schema}_b"
    with ConnectionPool(dsn, min_size=1, max_size=2, open=True) as pool:
        try:
            first = PostgresStore(pool, schema=pg_schema)
            second = PostgresStore(pool, schema=other)
            for store, text in ((first, "tenant one words"), (second, "tenant two words")):
                collection = store.create_collection("docs", dimensions=2, embedding_model="m")
                _, chunks = chunk_inputs([text], [[1.0, 1.0]])
                store.upsert_document(collection, DocumentInput(), chunks)
            shared = first.get_collection("docs")
            assert [h.chunk.content for h in first.bm25(shared, "words", 5)] == ["tenant one words"]
            assert [h.chunk.content for h in second.bm25(shared, "words", 5)] == [
                "tenant two words"
            ]
        finally:
            with pool.connection() as conn:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(other))
                )
