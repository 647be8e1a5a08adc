"""PostgresStore's migrations 4 to 15: each carries the data of an older schema forward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from rag_plugin.filters import filters_from_json
from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import SCHEMA_VERSION, PostgresStore
from rag_plugin.stores.postgres.schema import current_version, ensure_schema

from ..pg_helpers import (
    downgrade_to_version_9,
    downgrade_to_version_11,
    downgrade_to_version_12,
    downgrade_to_version_13,
    downgrade_to_version_14,
    statistics_mismatches,
)
from ..store_contract import chunk_inputs


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
