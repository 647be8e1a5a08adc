"""The term blocks' shape: merges by level, full blocks kept, deletes thin one block."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from rag_plugin.stores.base import CollectionInfo, DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres import blocks as term_blocks
from rag_plugin.stores.postgres.block_reads import decode_int_array
from rag_plugin.stores.postgres.rows import Tables

from ..pg_helpers import statistics_mismatches
from ..store_contract import chunk_inputs


@pytest.fixture
def store(dsn: str, pg_schema: str) -> Iterator[PostgresStore]:
    store = PostgresStore(dsn, schema=pg_schema)
    yield store
    store.close()


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 8 postings, full at level 1."""
    monkeypatch.setattr(term_blocks, "FULL_LEVEL", 1)
    monkeypatch.setattr(term_blocks, "BLOCK_SIZE", 8)


def blocks_of(dsn: str, schema: str, term: str) -> list[tuple[int, int, list[int]]]:
    """(block, level, chunk ids) of every block of ``term``, in block order."""
    with psycopg.connect(dsn) as conn:
        return [
            (int(block), int(level), list(ids))
            for block, level, ids in conn.execute(
                sql.SQL(
                    "SELECT block, level, chunk_ids FROM {} WHERE term = %s ORDER BY block"
                ).format(sql.Identifier(schema, "rag_term_blocks")),
                (term,),
            ).fetchall()
        ]


def write(store: PostgresStore, collection: CollectionInfo, source: str, texts: list[str]) -> str:
    _, chunks = chunk_inputs(texts, [[1.0, 0.0]] * len(texts))
    return store.upsert_document(collection, DocumentInput(source=source), chunks).id


def test_one_posting_a_write_is_merged_by_level(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    for number in range(100):
        write(store, collection, f"d{number}", ["common word"])
    found = blocks_of(dsn, pg_schema, "common")
    # Fewer than FANOUT blocks of each level remain, so a term's rows grow with the log of its
    # postings: 9 rows, not 100.
    levels = Counter(level for _, level, _ in found)
    assert max(levels.values()) < term_blocks.FANOUT
    assert sorted(levels) == [0, 1, 2]
    assert len(found) < 12
    assert len({i for _, _, ids in found for i in ids}) == sum(len(ids) for _, _, ids in found)
    assert sum(len(ids) for _, _, ids in found) == 100
    assert statistics_mismatches(dsn, pg_schema, "docs") == []


@pytest.mark.usefixtures("small_blocks")
def test_a_write_is_cut_into_full_blocks_that_are_never_merged_again(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    write(store, collection, "big", ["alpha"] * 20)  # 20 postings: 8 + 8 + 4
    assert [len(ids) for _, _, ids in blocks_of(dsn, pg_schema, "alpha")] == [8, 8, 4]
    full = [block for block, _, ids in blocks_of(dsn, pg_schema, "alpha") if len(ids) == 8]
    for number in range(30):
        write(store, collection, f"d{number}", ["alpha"])
    after = blocks_of(dsn, pg_schema, "alpha")
    assert [block for block, _, ids in after][:2] == full  # untouched by every merge
    assert sum(len(ids) for _, _, ids in after) == 50
    assert all(len(ids) <= 8 for _, _, ids in after)
    assert statistics_mismatches(dsn, pg_schema, "docs") == []


@pytest.mark.usefixtures("small_blocks")
def test_a_delete_thins_only_the_block_that_holds_the_chunk(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    write(store, collection, "first", ["alpha"] * 16)  # two full blocks
    second = write(store, collection, "second", ["alpha beta"] * 3)
    before = blocks_of(dsn, pg_schema, "alpha")
    store.delete_document(collection, second)
    assert blocks_of(dsn, pg_schema, "alpha") == before[:2]
    assert blocks_of(dsn, pg_schema, "beta") == []
    write(store, collection, "first", ["gamma"])  # replaces all 16 alpha chunks
    assert blocks_of(dsn, pg_schema, "alpha") == []
    assert [len(ids) for _, _, ids in blocks_of(dsn, pg_schema, "gamma")] == [1]
    assert statistics_mismatches(dsn, pg_schema, "docs") == []


def test_a_merge_reads_the_touched_keys_once_in_a_collection_the_statistics_do_not_know(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    """Issue 31: analysed while only another collection had blocks, PostgreSQL expects one
    block of a new collection; the merge's per-key levels must still be read once, not once
    per block of the collection (which made a 10-document write take seconds)."""
    known = store.create_collection("known", dimensions=2, embedding_model="m")
    write(store, known, "k", ["alpha beta"])
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(pg_schema, "rag_word_blocks")))
    new = store.create_collection("new", dimensions=2, embedding_model="m")
    words = [f"w{number}" for number in range(60)]
    for number in range(6):
        write(store, new, f"d{number}", [" ".join(words)])
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            sql.SQL("SELECT id FROM {} WHERE name = 'new'").format(
                sql.Identifier(pg_schema, "rag_collections")
            )
        ).fetchone()
        assert row is not None
        statement = term_blocks.WORDS.sql(Tables(pg_schema), term_blocks._MERGE)
        explained = conn.execute(
            sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) {}").format(statement),
            {**term_blocks._shape(row[0]), "keys": words},
        ).fetchone()
        conn.rollback()
    assert explained is not None

    def level_counts(node: dict[str, Any]) -> Iterator[int]:
        """How often each count of a key's blocks by level (the HAVING) ran."""
        if "count(*)" in node.get("Filter", ""):
            yield int(node["Actual Loops"])
        for child in node.get("Plans", []):
            yield from level_counts(child)

    assert list(level_counts(explained[0][0]["Plan"])) == [1]


def test_array_send_is_decoded_with_and_without_elements(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT array_send(ARRAY[]::bigint[]), array_send(ARRAY[3, -1, 9000000000]::bigint[]),"
            " array_send(ARRAY[7, 0]::integer[])",
            binary=True,
        ).fetchone()
    assert rows is not None
    assert decode_int_array(rows[0], wide=True).tolist() == []
    assert decode_int_array(rows[1], wide=True).tolist() == [3, -1, 9_000_000_000]
    assert decode_int_array(rows[2], wide=False).tolist() == [7, 0]


SIZES = [1, 2, 7, 8, 9, 63, 64, 65, 511, 512, 513, 4095, 4096, 4097, 30_000]


def test_a_write_cuts_its_blocks_at_the_levels_a_merge_gives_them(dsn: str) -> None:
    # A write's new blocks are cut in Python, a merge's in SQL (_LEVEL): one rule for both.
    query = sql.SQL("SELECT n, (SELECT {} FROM generate_series(1, n)) FROM unnest(%(sizes)s) n")
    params = {"sizes": SIZES, "full_level": term_blocks.FULL_LEVEL}
    with psycopg.connect(dsn) as conn:
        in_sql = dict(conn.execute(query.format(sql.SQL(term_blocks._LEVEL)), params).fetchall())
    assert {size: term_blocks.block_level(size) for size in SIZES} == in_sql
    assert [term_blocks.block_level(size) for size in (7, 8, 64, 512, 4096, 30_000)] == [
        0,
        1,
        2,
        3,
        4,
        4,
    ]


def test_chunk_ids_grow_with_the_writes_of_a_collection(
    store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    write(store, collection, "first", ["alpha beta", "alpha"])
    write(store, collection, "second", ["alpha gamma"])
    write(store, collection, "first", ["alpha delta"])  # replaced: new chunks, new ids
    found = blocks_of(dsn, pg_schema, "alpha")
    ids = [i for _, _, chunk_ids in found for i in chunk_ids]
    assert ids == sorted(ids)
    assert len(ids) == 2
    with psycopg.connect(dsn) as conn:
        stored = conn.execute(
            sql.SQL("SELECT document_id, idx, id FROM {} ORDER BY id").format(
                sql.Identifier(pg_schema, "rag_chunks")
            )
        ).fetchall()
    assert [(row[1], row[2]) for row in stored] == [(0, ids[0]), (0, ids[1])]
    assert statistics_mismatches(dsn, pg_schema, "docs") == []
