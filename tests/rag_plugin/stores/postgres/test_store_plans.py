"""PostgresStore's query plans: shared filter reads, exact or HNSW, ef_search, partial indexes."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres import lexical as postgres_lexical
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric

from ..store_contract import chunk_inputs


def test_the_legs_of_a_hybrid_search_read_the_filters_matching_ids_once(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert store.concurrent_legs  # the legs run at once, in threads
    embedder = FakeEmbedder(dimensions=8)
    collection = store.create_collection("docs", dimensions=8, embedding_model=embedder.model_name)
    texts = ["alpha beta", "alpha gamma", "beta gamma", "alpha delta", "gamma delta"]
    _, chunks = chunk_inputs(
        texts, embedder.embed(texts), [{"topic": "ab"[i % 2]} for i in range(len(texts))]
    )
    store.upsert_document(collection, DocumentInput(source="a"), chunks)
    reads: list[int] = []
    decode = postgres_lexical.decode_int_array

    def counted(data: bytes, wide: bool) -> Any:
        reads.append(1)
        return decode(data, wide)

    monkeypatch.setattr(postgres_lexical, "decode_int_array", counted)
    searcher = CollectionSearcher(store, embedder)
    outcome = searcher.search(collection, "alpha", top_k=5, filters={"topic": "a"})
    assert len(reads) == 1  # the BM25 and fuzzy legs share one read (dense has its own)
    assert sorted(hit.chunk.content for hit in outcome.hits) == [
        "alpha beta",
        "beta gamma",
        "gamma delta",
    ]  # the chunks of topic a (the dense leg ranks every one)
    store.bm25(collection, "alpha", 5, {"topic": "a"})
    store.fuzzy(collection, "alpha", 5, {"topic": "a"})
    assert len(reads) == 3  # legs called on their own each read them


def _index_scans(conn: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes"
        " WHERE schemaname = %s AND indexrelname LIKE 'rag_chunks_hnsw_%%'",
        (schema,),
    ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize(
    ("exact_below", "plan", "uses_hnsw"), [(1000, "exact", False), (10, "hnsw", True)]
)
def test_dense_plan_follows_the_collection_size(
    dsn: str, pg_schema: str, exact_below: int, plan: str, uses_hnsw: bool
) -> None:
    embedder = FakeEmbedder(dimensions=8)
    with psycopg.connect(dsn, autocommit=True) as conn:
        store = PostgresStore(conn, schema=pg_schema, exact_search_below=exact_below)
        collection = store.create_collection("docs", dimensions=8, embedding_model="m")
        texts = [f"chunk number {i}" for i in range(40)]
        _, chunks = chunk_inputs(texts, embedder.embed(texts))
        store.upsert_document(collection, DocumentInput(), chunks)
        before = _index_scans(conn, pg_schema)
        hits = store.dense(collection, embedder.embed_query("chunk number 7"), 5)
        assert (store.last_dense_plan, _index_scans(conn, pg_schema) > before) == (
            plan,
            uses_hnsw,
        )
    assert hits[0].chunk.content == "chunk number 7"
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize(("ef_search", "expected"), [(12, "48"), (5, "20"), (400, "1000")])
def test_ef_search_is_widened_by_the_collections_share_of_the_index(
    dsn: str, pg_schema: str, ef_search: int, expected: str
) -> None:
    # 30 + 10 chunks share one (dimension, metric) index: "small" is a quarter of it, so each
    # pass needs 4 × ef_search candidates (at least n, at most pgvector's 1,000).
    embedder = FakeEmbedder(dimensions=8)
    with psycopg.connect(dsn) as conn:
        store = PostgresStore(conn, schema=pg_schema, exact_search_below=0, ef_search=ef_search)
        for name, count in (("large", 30), ("small", 10)):
            collection = store.create_collection(name, dimensions=8, embedding_model="m")
            texts = [f"{name} chunk {i}" for i in range(count)]
            _, chunks = chunk_inputs(texts, embedder.embed(texts))
            store.upsert_document(collection, DocumentInput(), chunks)
        # Inside one outer transaction the store's is a savepoint: its local setting shows.
        with conn.transaction():
            store.dense(store.get_collection("small"), embedder.embed_query("small chunk 3"), 3)
            assert store.last_dense_plan == "hnsw"
            assert conn.execute("SHOW hnsw.ef_search").fetchone() == (expected,)


def test_metric_and_dimension_get_their_own_partial_index(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    for metric in DistanceMetric:
        store.create_collection(
            f"c_{metric.value}", dimensions=3, embedding_model="m", metric=metric
        )
    store.create_collection("wide", dimensions=3000, embedding_model="m")
    with psycopg.connect(dsn) as conn:
        names = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE %s"
            " ORDER BY indexname",
            (pg_schema, "rag_chunks_hnsw_%"),
        ).fetchall()
    assert names == [
        ("rag_chunks_hnsw_cosine_3",),
        ("rag_chunks_hnsw_inner_product_3",),
        ("rag_chunks_hnsw_l2_3",),
    ]
