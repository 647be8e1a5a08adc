"""PostgresEmbeddingCache: vectors per model at float4 precision; re-ingests embed nothing."""

from __future__ import annotations

import numpy as np
import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import PostgresEmbeddingCache, PostgresStore
from rag_plugin.testing import FakeEmbedder

from ..pg_helpers import statistics_mismatches
from ..store_contract import CORPUS, chunk_inputs


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
