"""The PostgreSQL schema of the query benches (bench/store_query.py, bench/real_query.py): the
collections a kept schema (``--schema``) holds between runs, the HNSW index dropped for a bulk
load and built once after it, and a bench's own schema dropped at the end.

Every collection of these benches has :data:`DIMENSIONS`-d cosine vectors, so the collections of
one schema share one HNSW index.
"""

from __future__ import annotations

import time

import psycopg
from psycopg import sql

from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres.schema import ensure_vector_index, vector_index_name
from rag_plugin.vectors import DistanceMetric

DIMENSIONS = 384


def kept_collection(store: PostgresStore, name: str, size: int) -> CollectionInfo | None:
    """The collection a kept schema already holds at this size, or None (dropped if partial)."""
    try:
        found = store.get_collection(name)
    except CollectionNotFoundError:
        return None
    if found.chunk_count == size:
        return found
    store.delete_collection(name)  # an interrupted load
    return None


def drop_vector_index(store: PostgresStore, dsn: str) -> None:
    """Drop the schema's HNSW index before a bulk load (:func:`build_index` builds it after)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP INDEX IF EXISTS {}").format(
                sql.Identifier(store.schema, vector_index_name(DIMENSIONS, DistanceMetric.COSINE))
            )
        )


def build_index(store: PostgresStore, dsn: str) -> float:
    """Build the schema's HNSW index (after a bulk load) and analyze its chunks; seconds."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        ensure_vector_index(
            conn,
            store.schema,
            DIMENSIONS,
            DistanceMetric.COSINE,
            m=store.hnsw_m,
            ef_construction=store.hnsw_ef_construction,
        )
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(store.schema, "rag_chunks")))
    return time.perf_counter() - started


def drop_schema(dsn: str, schema: str) -> None:
    """Drop a bench's own schema with everything in it (not one kept with ``--schema``)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
