"""PostgresStore: the shared store contract, schema versioning, the cache, plans and scoping."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql
from psycopg_pool import ConnectionPool

from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.filters import filters_from_json
from rag_plugin.stores.base import CollectionInfo, DocumentInput, Store
from rag_plugin.stores.postgres import (
    SCHEMA_VERSION,
    PostgresEmbeddingCache,
    PostgresStore,
    validate_schema_name,
)
from rag_plugin.stores.postgres import lexical as postgres_lexical
from rag_plugin.stores.postgres.schema import MIGRATIONS, Migration, current_version, ensure_schema
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric

from ..pg_helpers import (
    downgrade_to_version_9,
    downgrade_to_version_11,
    downgrade_to_version_12,
    downgrade_to_version_13,
    downgrade_to_version_14,
    statistics_mismatches,
)
from ..store_contract import CORPUS, StoreContract, chunk_inputs
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


@pytest.fixture
def store(dsn: str, pg_schema: str) -> Iterator[PostgresStore]:
    store = PostgresStore(dsn, schema=pg_schema)
    yield store
    store.close()


# -- schema ------------------------------------------------------------------------------


def test_ensure_schema_is_idempotent_and_records_the_version(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    assert store.ensure_schema() == SCHEMA_VERSION
    assert PostgresStore(dsn, schema=pg_schema).ensure_schema() == SCHEMA_VERSION
    with psycopg.connect(dsn) as conn:
        versions = conn.execute(
            sql.SQL("SELECT version FROM {} ORDER BY version").format(
                sql.Identifier(pg_schema, "rag_schema_version")
            )
        ).fetchall()
    assert versions == [(m.version,) for m in MIGRATIONS]


def test_a_later_migration_changes_existing_data_in_place(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    _, chunks = chunk_inputs(["kept through the migration"], [[1.0, 0.0]])
    document = store.upsert_document(collection, DocumentInput(source="a"), chunks).id
    later = Migration(
        SCHEMA_VERSION + 1,
        "documents get a language",
        (
            "ALTER TABLE {schema}.rag_documents ADD COLUMN language text",
            "UPDATE {schema}.rag_documents SET language = 'en'",
        ),
    )
    with psycopg.connect(dsn) as conn:
        assert ensure_schema(conn, pg_schema, (*MIGRATIONS, later)) == SCHEMA_VERSION + 1
        assert ensure_schema(conn, pg_schema, (*MIGRATIONS, later)) == SCHEMA_VERSION + 1
        rows = conn.execute(
            sql.SQL("SELECT id, language FROM {}").format(
                sql.Identifier(pg_schema, "rag_documents")
            )
        ).fetchall()
    assert rows == [(document, "en")]
    assert [h.chunk.document_id for h in store.bm25(collection, "migration", 5)] == [document]


def test_migration_4_backfills_the_word_postings_of_existing_chunks(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    texts = ["Straße ÉCOLE école", "the  quick\tbrown\u2028fox x", "quikc brown"]
    _, chunks = chunk_inputs(texts, [[1.0, 0.0]] * 3)
    store.upsert_document(collection, DocumentInput(source="a"), chunks)
    expected = [(h.chunk.id, h.score) for h in store.fuzzy(collection, "quick ecole", 10)]
    with psycopg.connect(dsn) as conn:
        # Back to version 3: no word tables (and none of the later migrations).
        downgrade_to_version_9(conn, pg_schema)
        for name in ("rag_words", "rag_word_vocabulary"):
            conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(pg_schema, name)))
        for index in ("rag_postings_by_impact", "rag_chunks_key_by_id", "rag_vocabulary_trigrams"):
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(pg_schema, index)))
        conn.execute(
            sql.SQL("DELETE FROM {} WHERE version >= 4").format(
                sql.Identifier(pg_schema, "rag_schema_version")
            )
        )
        conn.commit()
        assert ensure_schema(conn, pg_schema) == SCHEMA_VERSION
    assert statistics_mismatches(dsn, pg_schema, "docs") == []
    got = [(h.chunk.id, h.score) for h in store.fuzzy(collection, "quick ecole", 10)]
    assert got == expected
    assert [chunk_id.rsplit("_", 1)[1] for chunk_id, _ in got] == ["1", "0", "2"]


def test_migration_10_moves_the_postings_into_blocks(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    texts = ["alpha beta beta", "beta gamma", "", "delta alpha alpha alpha"]
    for number in range(3):
        _, chunks = chunk_inputs(texts[number:], [[1.0, 0.0]] * len(texts[number:]))
        store.upsert_document(collection, DocumentInput(source=f"d{number}"), chunks)
    expected = [(h.chunk.id, h.score) for h in store.bm25(collection, "alpha beta", 10)]
    expected_fuzzy = [(h.chunk.id, h.score) for h in store.fuzzy(collection, "alpah gama", 10)]
    with psycopg.connect(dsn) as conn:
        downgrade_to_version_9(conn, pg_schema)
        conn.commit()
        assert current_version(conn, pg_schema) == 9
        assert ensure_schema(conn, pg_schema) == SCHEMA_VERSION
        remaining = conn.execute(
            "SELECT to_regclass(format('%%I.rag_postings', %s::text)),"
            " to_regclass(format('%%I.rag_words', %s::text))",
            (pg_schema, pg_schema),
        ).fetchone()
    assert remaining == (None, None)
    assert statistics_mismatches(dsn, pg_schema, "docs") == []
    assert [(h.chunk.id, h.score) for h in store.bm25(collection, "alpha beta", 10)] == expected
    assert [(h.chunk.id, h.score) for h in store.fuzzy(collection, "alpah gama", 10)] == (
        expected_fuzzy
    )
    assert (len(expected), len(expected_fuzzy)) == (6, 6)


def test_migration_12_keys_the_long_entries_and_drops_the_trigram_indexes(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    texts = ["internationalization internal", "internationalisation interval", "intern x"]
    _, chunks = chunk_inputs(texts, [[1.0, 0.0]] * 3)
    store.upsert_document(collection, DocumentInput(source="a"), chunks)
    expected = [(h.chunk.id, h.score) for h in store.fuzzy(collection, "internationalizaton", 10)]
    with psycopg.connect(dsn) as conn:
        downgrade_to_version_11(conn, pg_schema)
        conn.commit()
        assert statistics_mismatches(dsn, pg_schema, "docs") != []  # long entries have no keys
        assert ensure_schema(conn, pg_schema) == SCHEMA_VERSION
        trigram_indexes = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = %s AND indexname LIKE %s",
            (pg_schema, "%trigrams"),
        ).fetchone()
    assert trigram_indexes == (0,)
    assert statistics_mismatches(dsn, pg_schema, "docs") == []
    assert [(h.chunk.id, h.score) for h in store.fuzzy(collection, "internationalizaton", 10)] == (
        expected
    )
    assert len(expected) == 2


def filter_rows_after_migrating(
    dsn: str,
    schema: str,
    downgrade: Callable[[psycopg.Connection[Any], str], None],
    query: str,
) -> list[tuple[Any, ...]]:
    """Undo the newest migrations with ``downgrade``, migrate to the newest version again, and
    return the rows of ``query`` (``{filters}``: the schema's filter table)."""
    with psycopg.connect(dsn) as conn:
        downgrade(conn, schema)
        conn.commit()
        assert ensure_schema(conn, schema) == SCHEMA_VERSION
        return conn.execute(
            sql.SQL(query).format(filters=sql.Identifier(schema, "rag_chunk_filters"))
        ).fetchall()


def test_migration_13_copies_every_chunks_metadata_into_the_filter_table(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    texts = ["alpha beta", "beta gamma", "gamma alpha", "alpha"]
    metadata = [{"year": 2020 + i, "topic": ["a", "b"][i % 2]} for i in range(4)]
    _, chunks = chunk_inputs(texts, [[1.0, float(i)] for i in range(4)], metadata)
    store.upsert_document(collection, DocumentInput(source="a"), chunks)
    other = store.create_collection("other", dimensions=2, embedding_model="m")
    _, chunks = chunk_inputs(["alpha"], [[1.0, 0.0]], [{"topic": "a"}])
    store.upsert_document(other, DocumentInput(source="b"), chunks)
    where = filters_from_json(
        {
            "condition": "or",
            "filters": [
                {"key": "year", "operator": ">", "value": 2022},
                {"key": "topic", "value": "b"},
            ],
        }
    )

    def answers() -> list[list[str]]:
        return [
            [h.chunk.id for h in store.dense(collection, [1.0, 0.5], 10, where)],
            [h.chunk.id for h in store.bm25(collection, "alpha", 10, where)],
            [h.chunk.id for h in store.fuzzy(collection, "alpah", 10, where)],
        ]

    expected = answers()
    copied = filter_rows_after_migrating(
        dsn, pg_schema, downgrade_to_version_12, "SELECT count(*) FROM {filters}"
    )
    assert copied == [(5,)]
    assert statistics_mismatches(dsn, pg_schema, "docs") == []
    assert statistics_mismatches(dsn, pg_schema, "other") == []
    assert answers() == expected
    assert [len(ids) for ids in expected] == [2, 1, 1]


def test_migration_14_gives_every_filter_row_its_vectors_signature(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=3, embedding_model="m")
    vectors = [[1.0, -2.0, 0.5], [-1.0, 2.0, 3.0], [0.5, 0.5, -0.5]]
    _, chunks = chunk_inputs(["a", "b", "c"], vectors, [{"n": i} for i in range(3)])
    store.upsert_document(collection, DocumentInput(source="a"), chunks)
    signatures = filter_rows_after_migrating(
        dsn,
        pg_schema,
        downgrade_to_version_13,
        "SELECT signature::text FROM {filters} ORDER BY chunk_id",
    )
    assert signatures == [("101",), ("011",), ("110",)]  # a bit per dimension: its sign
    assert statistics_mismatches(dsn, pg_schema, "docs") == []
    where = filters_from_json({"filters": [{"key": "n", "operator": "in", "value": [0, 2]}]})
    hits = store.dense(collection, [1.0, 0.0, 0.0], 2, where)
    assert [h.chunk.content for h in hits] == ["c", "a"]


def test_migration_15_counts_the_text_bytes_each_collection_holds(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    texts = ["naïve café", "plain", "ünïcödé text"]
    for name, owner in (("docs", "user:1"), ("docs", None), ("empty", None)):
        collection = store.create_collection(name, dimensions=2, embedding_model="m", owner=owner)
        if name == "docs":
            _, chunks = chunk_inputs(texts, [[1.0, float(i)] for i in range(3)])
            store.upsert_document(collection, DocumentInput(source="a"), chunks)
    filter_rows_after_migrating(dsn, pg_schema, downgrade_to_version_14, "SELECT 1")
    expected = sum(len(t.encode()) for t in texts)
    assert store.usage(owner="user:1").text_bytes == expected
    assert store.usage(everyone=True).text_bytes == 2 * expected
    assert statistics_mismatches(dsn, pg_schema, "docs", "user:1") == []
    assert statistics_mismatches(dsn, pg_schema, "empty") == []


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


def test_a_schema_newer_than_the_code_is_refused(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {} (version, description) VALUES (%s, 'from the future')").format(
                sql.Identifier(pg_schema, "rag_schema_version")
            ),
            (SCHEMA_VERSION + 5,),
        )
        conn.commit()
    with pytest.raises(ConfigurationError, match=f"version {SCHEMA_VERSION + 5}"):
        store.ensure_schema()


@pytest.mark.parametrize("name", ["", "pg_catalog", "x; DROP SCHEMA public", 'a"b', "s" * 64, "é"])
def test_invalid_schema_names_are_rejected(name: str) -> None:
    with pytest.raises(InvalidInputError, match="Schema name"):
        validate_schema_name(name)
    with pytest.raises(InvalidInputError, match="Schema name"):
        PostgresStore("postgresql://nowhere.invalid/db", schema=name)


# -- connections and scoping -------------------------------------------------------------


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


# -- dense plans -------------------------------------------------------------------------


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


# -- embedding cache ---------------------------------------------------------------------


def test_cache_round_trips_vectors_per_model(dsn: str, pg_schema: str) -> None:
    cache = PostgresEmbeddingCache(dsn, pg_schema)
    try:
        cache.put_many("m1", {"h1": [0.5, -0.25], "h2": [1.0, 0.0]})
        cache.put_many("m2", {"h1": [0.0, 1.0]})
        cache.put_many("m1", {"h2": [0.0, -1.0]})
        assert cache.get_many("m1", ["h1", "h2", "h3"]) == {"h1": [0.5, -0.25], "h2": [0.0, -1.0]}
        assert cache.get_many("m2", ["h1", "h2"]) == {"h1": [0.0, 1.0]}
        assert cache.get_many("m1", []) == {}
        assert len(cache) == 3
    finally:
        cache.close()


def test_cache_keeps_every_digit_a_real_holds_and_refuses_mixed_lengths(
    dsn: str, pg_schema: str
) -> None:
    cache = PostgresEmbeddingCache(dsn, pg_schema)
    vector = [0.1, -1 / 3, 2.5e-8, 123.456]
    try:
        cache.put_many("m", {"a": vector, "b": list(reversed(vector))})
        # pgvector stores float4: each value comes back as its nearest float4, read as the
        # shortest decimal that names that float4.
        as_real = [float(str(np.float32(x))) for x in vector]
        assert cache.get_many("m", ["a", "b"]) == {"a": as_real, "b": as_real[::-1]}
        with pytest.raises(InvalidInputError, match=r"one non-zero length, got lengths \[1, 2\]"):
            cache.put_many("m", {"c": [1.0], "d": [1.0, 2.0]})
        assert cache.get_many("m", ["c", "d"]) == {}
    finally:
        cache.close()


def test_reingesting_an_unchanged_document_embeds_nothing(dsn: str, pg_schema: str) -> None:
    store = PostgresStore(dsn, schema=pg_schema)
    texts = [*CORPUS, CORPUS[0]]
    try:
        collection = store.create_collection("docs", dimensions=16, embedding_model="fake-16")
        sent: list[list[list[str]]] = []
        for _ in range(2):
            # A new embedder and cache object each time: as a new request or another process.
            cache = PostgresEmbeddingCache(dsn, pg_schema)
            embedder = FakeEmbedder(dimensions=16, cache=cache)
            _, chunks = chunk_inputs(texts, embedder.embed(texts))
            store.upsert_document(collection, DocumentInput(source="corpus.txt"), chunks)
            sent.append(embedder.batches)
            cache.close()
        assert sent == [[CORPUS], []]
        assert store.get_collection("docs").chunk_count == len(texts)
        assert statistics_mismatches(dsn, pg_schema, "docs") == []
    finally:
        store.close()


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
