"""Child-process bodies for the PostgreSQL store's concurrency and crash tests.

They live in an importable module (not the test files) so that ``spawn`` children can load them.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from multiprocessing.synchronize import Event

from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.testing import FakeEmbedder

from .store_contract import chunk_inputs

DIMENSIONS = 8
COMMON = "shared words every worker writes alpha beta gamma"


def document_texts(worker: int, number: int, chunks: int) -> list[str]:
    """The chunk texts of one worker's document: common words plus unique ones."""
    return [
        f"{COMMON} w{worker}doc{number}part{j} token{(worker * 7 + j) % 5}" for j in range(chunks)
    ]


def ingest(dsn: str, schema: str, worker: int, documents: int, chunks: int) -> None:
    """Ingest ``documents`` documents of ``chunks`` chunks each into the shared collection."""
    try:
        store = PostgresStore(dsn, schema=schema, create_schema=False)
        collection = store.get_collection("shared")
        embedder = FakeEmbedder(dimensions=DIMENSIONS)
        for number in range(documents):
            texts = document_texts(worker, number, chunks)
            _, inputs = chunk_inputs(texts, embedder.embed(texts))
            store.upsert_document(
                collection, DocumentInput(source=f"w{worker}/doc{number}"), inputs
            )
        store.close()
    except BaseException:
        traceback.print_exc()
        sys.exit(1)


def search(dsn: str, schema: str, stop: Event, minimum: int) -> None:
    """Run all three legs until ``stop`` is set (and at least ``minimum`` rounds)."""
    try:
        store = PostgresStore(dsn, schema=schema, create_schema=False)
        collection = store.get_collection("shared")
        query = FakeEmbedder(dimensions=DIMENSIONS).embed_query(COMMON)
        rounds = 0
        while rounds < minimum or not stop.is_set():
            store.dense(collection, query, 10)
            store.bm25(collection, "alpha gamma token3", 10)
            store.fuzzy(collection, "alpah", 10)
            store.correct_query(collection, "gamme")
            rounds += 1
        store.close()
    except BaseException:
        traceback.print_exc()
        sys.exit(1)


def ingest_forever(dsn: str, schema: str, chunks: int) -> None:
    """Ingest numbered documents until killed (for the crash test)."""
    store = PostgresStore(dsn, schema=schema, create_schema=False)
    collection = store.get_collection("shared")
    embedder = FakeEmbedder(dimensions=DIMENSIONS)
    number = 0
    while True:
        texts = document_texts(0, number, chunks)
        _, inputs = chunk_inputs(texts, embedder.embed(texts))
        store.upsert_document(collection, DocumentInput(source=f"doc{number}"), inputs)
        number += 1


def ingest_limited(dsn: str, schema: str, worker: int, documents: int, limit: int) -> None:
    """Try to ingest ``documents`` one-chunk documents into its owner's own collection, each
    under an owner limit of ``limit`` documents, counting the refusals on stdout."""
    from rag_plugin.exceptions import QuotaExceededError
    from rag_plugin.stores.usage import UsageLimits, WriteLimits

    try:
        store = PostgresStore(dsn, schema=schema, create_schema=False)
        collection = store.get_collection(f"mine{worker}", owner="user:racer")
        embedder = FakeEmbedder(dimensions=DIMENSIONS)
        limits = WriteLimits(owner=UsageLimits(documents=limit))
        for number in range(documents):
            texts = document_texts(worker, number, 1)
            _, inputs = chunk_inputs(texts, embedder.embed(texts))
            with contextlib.suppress(QuotaExceededError):
                store.upsert_documents(
                    collection,
                    [(DocumentInput(source=f"w{worker}/doc{number}"), inputs)],
                    limits=limits,
                )
        store.close()
    except BaseException:
        traceback.print_exc()
        sys.exit(1)
