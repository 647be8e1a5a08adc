"""Many processes at once on one collection: no error, no lost chunk, exact statistics."""

from __future__ import annotations

import multiprocessing

from rag_plugin.stores.postgres import PostgresStore

from .. import pg_workers
from ..pg_helpers import statistics_mismatches

WRITERS = 4
READERS = 2
DOCUMENTS = 15
CHUNKS = 6


def test_four_writers_and_two_readers_lose_nothing(dsn: str, pg_schema: str) -> None:
    store = PostgresStore(dsn, schema=pg_schema)
    store.create_collection("shared", dimensions=pg_workers.DIMENSIONS, embedding_model="fake-8")
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    readers = [
        context.Process(target=pg_workers.search, args=(dsn, pg_schema, stop, 3))
        for _ in range(READERS)
    ]
    writers = [
        context.Process(target=pg_workers.ingest, args=(dsn, pg_schema, worker, DOCUMENTS, CHUNKS))
        for worker in range(WRITERS)
    ]
    for process in [*readers, *writers]:
        process.start()
    for process in writers:
        process.join(timeout=120)
    stop.set()
    for process in readers:
        process.join(timeout=60)
    assert [p.exitcode for p in [*writers, *readers]] == [0] * (WRITERS + READERS)

    collection = store.get_collection("shared")
    assert (collection.document_count, collection.chunk_count) == (
        WRITERS * DOCUMENTS,
        WRITERS * DOCUMENTS * CHUNKS,
    )
    documents = store.list_documents(collection, limit=1000)
    assert sorted(d.source for d in documents) == sorted(
        f"w{w}/doc{n}" for w in range(WRITERS) for n in range(DOCUMENTS)
    )
    for document in documents:
        worker, number = (int(x) for x in document.source[1:].split("/doc"))
        assert [c.content for c in store.document_chunks(collection, document.id)] == (
            pg_workers.document_texts(worker, number, CHUNKS)
        )
    assert statistics_mismatches(dsn, pg_schema, "shared") == []
    hits = store.bm25(collection, "alpha", 1000)
    assert len(hits) == WRITERS * DOCUMENTS * CHUNKS
    store.close()


def test_writers_racing_past_a_limit_land_exactly_the_limit(dsn: str, pg_schema: str) -> None:
    """Four processes write into four collections of one owner at once, each write held to
    the owner's limit of 10 documents: exactly 10 land, whoever wins, and the counters agree
    with the rows."""
    store = PostgresStore(dsn, schema=pg_schema)
    for worker in range(WRITERS):
        store.create_collection(
            f"mine{worker}",
            dimensions=pg_workers.DIMENSIONS,
            embedding_model="fake-8",
            owner="user:racer",
        )
    context = multiprocessing.get_context("spawn")
    writers = [
        context.Process(target=pg_workers.ingest_limited, args=(dsn, pg_schema, worker, 8, 10))
        for worker in range(WRITERS)
    ]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=120)
    assert [p.exitcode for p in writers] == [0] * WRITERS
    assert store.usage(owner="user:racer").documents == 10
    landed = sum(c.document_count for c in store.list_collections(owner="user:racer"))
    assert landed == 10
    for worker in range(WRITERS):
        assert statistics_mismatches(dsn, pg_schema, f"mine{worker}", "user:racer") == []
    store.close()
