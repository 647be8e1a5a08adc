"""PostgresStore's round trips: pipelined writes, one-trip reads, and what they must not change."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from rag_plugin.chunking import ChunkerConfig, TextChunker
from rag_plugin.exceptions import CollectionNotFoundError, StoreError
from rag_plugin.ingest import StoredSource, ingest_text
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, DocumentInput, DocumentRecord
from rag_plugin.stores.postgres import PostgresEmbeddingCache, PostgresStore, writes
from rag_plugin.stores.postgres.connection import Database
from rag_plugin.testing import FakeEmbedder

from ..pg_helpers import statistics_mismatches
from ..store_contract import chunk_inputs

TEXTS = ["alpha beta gamma", "beta gamma delta", "gamma delta epsilon"]
TEXT = (
    "alpha bravo charlie delta echo foxtrot golf hotel "
    "india juliet kilo lima mike november oscar papa"
)
WORDS_4 = TextChunker(ChunkerConfig.for_word(4, 0))
VECTOR_INDEX_TRIPS = 8  # ensure_vector_index: its own transaction, checks, CREATE INDEX
EMBEDDER = FakeEmbedder(dimensions=4)


def round_trips(conn: psycopg.Connection[Any], call: Callable[[], object]) -> int:
    """How many times ``call`` waits for the server on ``conn``: each turn from sending
    (libpq trace lines marked F) to receiving (B) is one round trip."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace"
        with path.open("wb") as trace:
            conn.pgconn.trace(trace.fileno())
            try:
                call()
            finally:
                conn.pgconn.untrace()
        directions = [line.split(b"\t")[1] for line in path.read_bytes().splitlines()]
    return sum(1 for turn in itertools.pairwise(directions) if turn == (b"F", b"B"))


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """One autocommit connection, lent to the store as a pool's would be."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def store(conn: psycopg.Connection[Any], pg_schema: str) -> PostgresStore:
    return PostgresStore(conn, schema=pg_schema)


@pytest.fixture
def collection(store: PostgresStore) -> CollectionInfo:
    return store.create_collection("docs", dimensions=4, embedding_model="fake-4", owner="u")


def write(store: PostgresStore, collection: CollectionInfo, texts: list[str]) -> str:
    _, chunks = chunk_inputs(texts, EMBEDDER.embed(texts))
    return store.upsert_document(collection, DocumentInput(source="a.txt"), chunks).id


def test_a_document_write_is_three_round_trips_new_or_replaced(
    conn: psycopg.Connection[Any],
    store: PostgresStore,
    collection: CollectionInfo,
    dsn: str,
    pg_schema: str,
) -> None:
    # Lock with lookup; every write; COMMIT only once the writes are done (see the crash test).
    assert round_trips(conn, lambda: write(store, collection, TEXTS)) == 3
    assert round_trips(conn, lambda: write(store, collection, TEXTS[:2])) == 3
    assert statistics_mismatches(dsn, pg_schema, "docs", owner="u") == []


def test_a_write_that_may_create_its_collection_is_still_three_round_trips(
    conn: psycopg.Connection[Any], store: PostgresStore, dsn: str, pg_schema: str
) -> None:
    planned = CollectionInfo("made", "u", 4, "fake-4")
    _, chunks = chunk_inputs(TEXTS, EMBEDDER.embed(TEXTS))

    def upsert(source: str) -> None:
        store.upsert_document(planned, DocumentInput(source=source), chunks, create=True)

    # The insert leads the lock's batch; a new collection adds its vector index afterwards.
    first = round_trips(conn, lambda: upsert("a.txt"))
    assert round_trips(conn, lambda: upsert("b.txt")) == 3
    assert first == 3 + VECTOR_INDEX_TRIPS
    assert store.get_collection("made", owner="u").document_count == 2
    assert statistics_mismatches(dsn, pg_schema, "made", owner="u") == []


def test_a_batch_of_documents_is_three_round_trips_whatever_its_size(
    conn: psycopg.Connection[Any],
    store: PostgresStore,
    collection: CollectionInfo,
    dsn: str,
    pg_schema: str,
) -> None:
    def batch(count: int) -> None:
        documents = []
        for number in range(count):
            texts = [f"{text} doc{number}" for text in TEXTS[: 1 + number % 3]]
            chunks = chunk_inputs(texts, EMBEDDER.embed(texts))[1]
            documents.append((DocumentInput(source=f"{number}.txt"), chunks))
        store.upsert_documents(collection, documents)

    assert round_trips(conn, lambda: batch(2)) == 3
    # Twenty documents, two of them replacing the first batch's.
    assert round_trips(conn, lambda: batch(20)) == 3
    assert store.get_collection("docs", owner="u").document_count == 20
    assert statistics_mismatches(dsn, pg_schema, "docs", owner="u") == []


def find_one(
    store: PostgresStore, owner: str | None, source: str
) -> tuple[CollectionInfo, DocumentRecord | None, list[ChunkRecord]]:
    """``find_sources`` for one source: the collection, the document (or None), its chunks."""
    info, found = store.find_sources("docs", owner=owner, sources=[source])
    document, chunks = found.get(source, (None, []))
    return info, document, chunks


def test_reads_and_cache_calls_are_one_round_trip_each(
    conn: psycopg.Connection[Any], store: PostgresStore, collection: CollectionInfo, pg_schema: str
) -> None:
    document_id = write(store, collection, TEXTS)
    cache = PostgresEmbeddingCache(conn, pg_schema, create_schema=False)
    calls: list[Callable[[], object]] = [
        lambda: store.get_collection("docs", owner="u"),
        lambda: find_one(store, "u", "a.txt"),
        lambda: store.find_document(collection, source="a.txt"),
        lambda: store.get_document(collection, document_id),
        lambda: store.document_chunks(collection, document_id),
        lambda: store.list_documents(collection),
        lambda: cache.put_many("m", {"h": [1.0, 0.0]}),
        lambda: cache.get_many("m", ["h"]),
    ]
    assert [round_trips(conn, call) for call in calls] == [1] * len(calls)


def test_find_sources_returns_the_collection_document_and_chunks(
    store: PostgresStore, collection: CollectionInfo
) -> None:
    document_id = write(store, collection, TEXTS)
    info, document, chunks = find_one(store, "u", "a.txt")
    assert info == store.get_collection("docs", owner="u")
    assert document == store.get_document(collection, document_id)
    assert chunks == store.document_chunks(collection, document_id)
    assert [c.id for c in chunks] == [f"{document_id}_{i}" for i in range(3)]


@pytest.mark.parametrize("source", ["b.txt", ""])
def test_find_sources_without_a_document_there_returns_the_collection_alone(
    store: PostgresStore, collection: CollectionInfo, source: str
) -> None:
    write(store, collection, TEXTS)
    assert find_one(store, "u", source) == (
        store.get_collection("docs", owner="u"),
        None,
        [],
    )


@pytest.mark.parametrize("owner", [None, "other"])
def test_find_sources_in_another_owners_collection_finds_no_collection(
    store: PostgresStore, collection: CollectionInfo, owner: str | None
) -> None:
    write(store, collection, TEXTS)
    with pytest.raises(CollectionNotFoundError):
        find_one(store, owner, "a.txt")


def test_ingest_result_chunks_are_the_stored_ones_without_reading_them_back(
    conn: psycopg.Connection[Any], store: PostgresStore, collection: CollectionInfo
) -> None:
    document = DocumentInput(source="a.txt", title="T", tags=("x", "y"), metadata={"k": 1.5})
    trips: list[int] = []
    results = []
    for _ in range(2):
        trips.append(
            round_trips(
                conn,
                lambda: results.append(
                    ingest_text(
                        store, EMBEDDER, collection, TEXT, document=document, chunker=WORDS_4
                    )
                ),
            )
        )
    first, again = results
    assert first.chunks == tuple(store.document_chunks(collection, first.document.id))
    assert (first.unchanged, again.unchanged, again.chunks) == (False, True, first.chunks)
    # First: the source lookup and the write. Again: the lookup and the chunks.
    assert trips == [1 + 3, 1 + 1]


def test_a_stored_source_read_with_the_collection_makes_reingest_one_round_trip(
    conn: psycopg.Connection[Any], store: PostgresStore, collection: CollectionInfo
) -> None:
    document = DocumentInput(source="a.txt")
    ingest_text(store, EMBEDDER, collection, TEXT, document=document, chunker=WORDS_4)

    def reingest() -> None:
        info, stored, chunks = find_one(store, "u", "a.txt")
        result = ingest_text(
            store,
            EMBEDDER,
            info,
            TEXT,
            document=document,
            chunker=WORDS_4,
            stored=StoredSource(stored, tuple(chunks)),
        )
        assert result.unchanged

    assert round_trips(conn, reingest) == 1


# -- pipelined transactions ----------------------------------------------------------------


@pytest.fixture
def table(conn: psycopg.Connection[Any], pg_schema: str) -> sql.Composed:
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(pg_schema)))
    name = sql.Identifier(pg_schema, "t")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY)").format(name))
    return sql.SQL("INSERT INTO {} VALUES (%s)").format(name)


def count(conn: psycopg.Connection[Any], pg_schema: str) -> int:
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(pg_schema, "t"))
    ).fetchone()
    return int(row[0]) if row else -1


def insert_in_one_transaction(
    database: Database, table: sql.Composed, keys: list[int], *, then_raise: bool = False
) -> None:
    with database.transaction(pipeline=True) as lent:
        for key in keys:
            lent.execute(table, (key,))
        if then_raise:
            raise KeyError("stop before the commit")


def test_a_failing_statement_rolls_the_whole_pipelined_transaction_back(
    conn: psycopg.Connection[Any], pg_schema: str, table: sql.Composed
) -> None:
    database = Database(conn, pg_schema)
    with pytest.raises(StoreError, match="duplicate key"):
        insert_in_one_transaction(database, table, [1, 1, 2])
    assert (conn.info.transaction_status, count(conn, pg_schema)) == (
        psycopg.pq.TransactionStatus.IDLE,
        0,
    )
    insert_in_one_transaction(database, table, [3])
    assert count(conn, pg_schema) == 1


def test_an_error_raised_in_the_block_rolls_back_what_was_sent(
    conn: psycopg.Connection[Any], pg_schema: str, table: sql.Composed
) -> None:
    database = Database(conn, pg_schema)
    insert_in_one_transaction(database, table, [1])
    with pytest.raises(KeyError, match="stop before the commit"):
        insert_in_one_transaction(database, table, [2], then_raise=True)
    assert (conn.info.transaction_status, count(conn, pg_schema)) == (
        psycopg.pq.TransactionStatus.IDLE,
        1,
    )


def test_inside_the_lenders_transaction_the_write_is_a_savepoint(dsn: str, pg_schema: str) -> None:
    with psycopg.connect(dsn) as conn:  # not autocommit: the lender's transaction is open
        conn.execute("SET search_path TO pg_catalog, public")
        store = PostgresStore(conn, schema=pg_schema)
        collection = store.create_collection("docs", dimensions=4, embedding_model="fake-4")
        write(store, collection, TEXTS)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert conn.execute("SHOW search_path").fetchone() == ("pg_catalog, public",)
        conn.rollback()  # the lender decides: nothing of the store's work stays
    after = PostgresStore(dsn, schema=pg_schema)
    try:
        assert after.list_collections() == []
    finally:
        after.close()


SYNCHRONOUS_COMMIT: list[tuple[str, None]] = [
    ("SELECT current_setting('synchronous_commit')", None)
]


@pytest.mark.parametrize(("durable", "inside"), [(True, "on"), (False, "off")])
def test_a_run_that_need_not_be_durable_commits_without_waiting_for_the_flush(
    conn: psycopg.Connection[Any], pg_schema: str, durable: bool, inside: str
) -> None:
    database = Database(conn, pg_schema)
    assert database.run(*SYNCHRONOUS_COMMIT, durable=durable) == [[(inside,)]]
    assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)  # only that run's
    assert round_trips(conn, lambda: database.run(*SYNCHRONOUS_COMMIT, durable=durable)) == 1


def test_a_lenders_transaction_keeps_its_durability(dsn: str, pg_schema: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT 1")  # the lender's transaction is open
        assert Database(conn, pg_schema).run(*SYNCHRONOUS_COMMIT, durable=False) == [[("on",)]]
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)


def test_a_write_with_create_that_fails_inside_its_transaction_leaves_no_collection(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise StoreError("the disk is full")

    # The insert and the lock have run by now: only the rollback can take the collection.
    monkeypatch.setattr(writes, "write_documents", broken)
    _, chunks = chunk_inputs(TEXTS, EMBEDDER.embed(TEXTS))
    with pytest.raises(StoreError, match="the disk is full"):
        store.upsert_document(
            CollectionInfo("made", "u", 4, "fake-4"), DocumentInput(), chunks, create=True
        )
    with pytest.raises(CollectionNotFoundError):
        store.get_collection("made", owner="u")
