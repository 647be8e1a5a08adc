"""The store's schema against the Citus layout of the README ("Scale-out"): checked on what
``PostgresStore`` creates, so the layout cannot drift. Citus itself is not installable here.

Layout: each tenant schema is a Citus *distributed schema* (schema-based sharding, Citus 12+):
its tables live together on one node, so a collection's search and every other query of the
store stays on one node without a shard key. That holds while the store

1. creates nothing outside its schema (tables, sequences, indexes, types, functions);
2. has no foreign key leaving its schema, or entering it from another;
3. reads and writes only its own schema's tables (a search, an ingest, a delete);

For a tenant too large for one node, its collections would be distributed by row on
``collection_id`` instead; what that needs (every primary key and unique constraint holding
``collection_id``) is listed in ``ROW_SHARDING_CHANGES``, which this test keeps true.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder

from ..pg_helpers import drop_schema
from ..store_contract import chunk_inputs

# Unique constraints (primary keys included) without collection_id, by table: what row-based
# sharding on collection_id would have to change (the README's "Scale-out" lists them).
ROW_SHARDING_CHANGES = {
    "rag_chunk_filters": ["rag_chunk_filters_pkey (chunk_id)"],
    "rag_chunk_terms": ["rag_chunk_terms_pkey (chunk_id)"],
    "rag_chunks": ["rag_chunks_document_id_idx_key (document_id, idx)", "rag_chunks_pkey (id)"],
    "rag_collections": [
        "rag_collections_name_owner (name, owner)",
        "rag_collections_pkey (id)",
    ],
    "rag_documents": ["rag_documents_pkey (id)"],
    "rag_embedding_cache": ["rag_embedding_cache_pkey (model, content_hash)"],
    # The schema's near-entry index (near.py): keyed by text alone, a reference table.
    "rag_near_keys": ["rag_near_keys_pkey (key, entry)"],
    "rag_schema_version": ["rag_schema_version_pkey (version)"],
}

EMBEDDER = FakeEmbedder(dimensions=8)


@pytest.fixture
def two_stores(dsn: str) -> Iterator[tuple[PostgresStore, str, str]]:
    """A store in a fresh schema and another schema beside it, both with data."""
    names = [f"citus_{n}_{time.monotonic_ns()}" for n in ("a", "b")]
    for name in names:
        with psycopg.connect(dsn, autocommit=True) as conn:
            store = PostgresStore(conn, schema=name)
            collection = store.create_collection("docs", dimensions=8, embedding_model="fake-8")
            _, chunks = chunk_inputs(["alpha beta gamma"], EMBEDDER.embed(["alpha beta gamma"]))
            store.upsert_document(collection, DocumentInput(source="seed.md"), chunks)
    store = PostgresStore(dsn, schema=names[0])
    try:
        yield store, names[0], names[1]
    finally:
        store.close()
        for name in names:
            drop_schema(dsn, name)


def objects_outside(conn: psycopg.Connection[object], schema: str) -> set[str]:
    """Relations, types and functions owned by no extension, outside ``schema`` and the
    catalogs (the store adds none: it relies on the vector and pg_trgm extensions only)."""
    rows = conn.execute(
        """
        SELECT 'relation ' || c.relname FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public'
           AND NOT EXISTS (SELECT 1 FROM pg_depend d
                            WHERE d.objid = c.oid AND d.deptype = 'e')
        UNION ALL
        SELECT 'function ' || p.proname FROM pg_proc p
          JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'public'
           AND NOT EXISTS (SELECT 1 FROM pg_depend d
                            WHERE d.objid = p.oid AND d.deptype = 'e')
        """
    ).fetchall()
    return {row[0] for row in rows}


def test_the_store_creates_nothing_outside_its_schema(dsn: str) -> None:
    name = f"citus_alone_{time.monotonic_ns()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = objects_outside(conn, name)
        store = PostgresStore(dsn, schema=name)
        try:
            store.create_collection("docs", dimensions=8, embedding_model="fake-8")
            store.create_collection("other", dimensions=12, embedding_model="fake-12")
            assert objects_outside(conn, name) == before
            kinds = conn.execute(
                "SELECT DISTINCT c.relkind::text FROM pg_class c JOIN pg_namespace n"
                " ON n.oid = c.relnamespace WHERE n.nspname = %s",
                (name,),
            ).fetchall()
            # Tables, their indexes and the bigserial sequences: all colocated in the schema.
            assert {k for (k,) in kinds} <= {"r", "i", "S"}
        finally:
            store.close()
            drop_schema(dsn, name)


def test_no_foreign_key_crosses_the_schema(
    two_stores: tuple[PostgresStore, str, str], dsn: str
) -> None:
    _, schema, _ = two_stores
    with psycopg.connect(dsn, autocommit=True) as conn:
        crossing = conn.execute(
            """
            SELECT conname, src.nspname, dst.nspname FROM pg_constraint k
              JOIN pg_class s ON s.oid = k.conrelid
              JOIN pg_namespace src ON src.oid = s.relnamespace
              JOIN pg_class d ON d.oid = k.confrelid
              JOIN pg_namespace dst ON dst.oid = d.relnamespace
             WHERE k.contype = 'f' AND (src.nspname = %s OR dst.nspname = %s)
               AND src.nspname <> dst.nspname
            """,
            (schema, schema),
        ).fetchall()
        inside = conn.execute(
            "SELECT count(*) FROM pg_constraint k JOIN pg_class s ON s.oid = k.conrelid"
            " JOIN pg_namespace n ON n.oid = s.relnamespace"
            " WHERE k.contype = 'f' AND n.nspname = %s",
            (schema,),
        ).fetchone()
    assert crossing == []
    assert inside is not None
    assert inside[0] >= 2  # documents → collections, chunks → documents


def table_activity(conn: psycopg.Connection[object]) -> set[tuple[str, str]]:
    """The user tables read or written so far in ``conn``'s open transaction, by (schema,
    table): its own statistics, so other sessions (parallel test workers) never show."""
    rows = conn.execute(
        "SELECT schemaname, relname FROM pg_stat_xact_user_tables"
        " WHERE coalesce(seq_scan, 0) + coalesce(idx_scan, 0)"
        " + n_tup_ins + n_tup_upd + n_tup_del > 0"
    ).fetchall()
    return {(schema, table) for schema, table in rows}


def test_searches_and_writes_touch_only_the_stores_schema(
    two_stores: tuple[PostgresStore, str, str], dsn: str
) -> None:
    _, schema, other = two_stores
    # Everything in one transaction of one connection, whose own statistics are read before
    # it ends: the cluster-wide ones also counted other sessions' work (a CI run saw another
    # worker's test schema, and late flushes of the set-up).
    with psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        assert table_activity(conn) == set()
        store = PostgresStore(conn, schema=schema, create_schema=False)
        collection = store.get_collection("docs")
        texts = ["delta epsilon zeta", "eta theta iota"]
        _, chunks = chunk_inputs(texts, EMBEDDER.embed(texts))
        document = store.upsert_document(collection, DocumentInput(source="new.md"), chunks)
        store.dense(collection, EMBEDDER.embed_query("delta"), 5)
        store.bm25(collection, "delta theta", 5)
        store.fuzzy(collection, "delat", 5)
        store.correct_query(collection, "thetta")
        store.list_documents(collection)
        store.document_chunks(collection, document.id)
        store.delete_document(collection, document.id)
        touched = table_activity(conn)
    assert {s for s, _ in touched} == {schema}, sorted(touched)
    assert not any(s == other for s, _ in touched)
    # The legs and the write reached the store's own tables (the check can see them).
    assert {"rag_chunks", "rag_documents", "rag_collections"} <= {t for _, t in touched}


def test_what_row_based_sharding_would_change_is_listed(
    two_stores: tuple[PostgresStore, str, str], dsn: str
) -> None:
    _, schema, _ = two_stores
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            """
            SELECT c.relname, k.conname,
                   array_agg(a.attname ORDER BY array_position(k.conkey, a.attnum))
              FROM pg_constraint k
              JOIN pg_class c ON c.oid = k.conrelid
              JOIN pg_namespace n ON n.oid = c.relnamespace
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (k.conkey)
             WHERE n.nspname = %s AND k.contype IN ('p', 'u')
             GROUP BY c.relname, k.conname
            """,
            (schema,),
        ).fetchall()
        indexes = conn.execute(
            """
            SELECT t.relname, i.relname, array_agg(a.attname ORDER BY k.ordinality)
              FROM pg_index x
              JOIN pg_class i ON i.oid = x.indexrelid
              JOIN pg_class t ON t.oid = x.indrelid
              JOIN pg_namespace n ON n.oid = t.relnamespace
              CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ordinality)
              JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
             WHERE n.nspname = %s AND x.indisunique
               AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)
             GROUP BY t.relname, i.relname
            """,
            (schema,),
        ).fetchall()
    needing: dict[str, list[str]] = {}
    for table, name, columns in [*rows, *indexes]:
        if "collection_id" not in columns:
            needing.setdefault(table, []).append(f"{name} ({', '.join(columns)})")
    assert {table: sorted(names) for table, names in needing.items()} == ROW_SHARDING_CHANGES
