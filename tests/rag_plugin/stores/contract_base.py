"""What the store contract's mixins share: constants, helpers that build chunks and expected
scores from first principles, and the fixtures (``store``, overridden by each store's test
class; ``embedder``; ``collection``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from rag_plugin.stores.base import (
    ChunkInput,
    CollectionInfo,
    DocumentInput,
    ScoredChunk,
    Store,
)
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric, cosine_similarity

DENSE_TOLERANCE = 1e-6
LEXICAL_TOLERANCE = 1e-9
ALICE = "user:alice"
BOB = "user:bob"

# Hand-built 2-d vectors whose order differs per metric (see test_dense_orders_by_metric).
QUERY_2D = [2.0, 1.0]
VECTORS_2D = {"a": [1.0, 0.0], "b": [3.0, 3.0], "c": [0.0, 3.0], "d": [-1.0, 0.0]}
EXPECTED_ORDER_2D = {
    DistanceMetric.COSINE: ["b", "a", "c", "d"],
    DistanceMetric.L2: ["a", "b", "c", "d"],
    DistanceMetric.INNER_PRODUCT: ["b", "c", "a", "d"],
}

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "the quick brown fox is quick and brown",
    "a lazy cat sleeps all day long",
    "machine learning algorithms learn from data",
    "machne learning basics for beginners",
]


def expected_similarity(vector: Sequence[float], query: Sequence[float], metric: str) -> float:
    """The similarity SPEC S5 defines, from first principles."""
    if metric == DistanceMetric.COSINE:
        return cosine_similarity(vector, query)
    if metric == DistanceMetric.L2:
        return 1.0 / (1.0 + math.dist(vector, query))
    return math.fsum(x * y for x, y in zip(vector, query, strict=True))


def chunk_inputs(
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]],
    metadata: Sequence[dict[str, Any]] | None = None,
) -> tuple[str, list[ChunkInput]]:
    """Join ``texts`` with single spaces into a document; return it and exact chunks of it."""
    chunks: list[ChunkInput] = []
    start = 0
    for index, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        chunks.append(
            ChunkInput(
                index=index,
                content=text,
                start_offset=start,
                end_offset=start + len(text),
                embedding=list(vector),
                metadata=metadata[index] if metadata else {},
            )
        )
        start += len(text) + 1
    return " ".join(texts), chunks


def ids(hits: Sequence[ScoredChunk]) -> list[str]:
    return [hit.chunk.id for hit in hits]


class ContractBase:
    """The fixtures and helpers every contract mixin uses."""

    @pytest.fixture
    def store(self) -> Store:
        """An empty store; every store's test class overrides this."""
        raise NotImplementedError("a StoreContract subclass must provide the store fixture")

    @pytest.fixture
    def embedder(self) -> FakeEmbedder:
        return FakeEmbedder(dimensions=16)

    @pytest.fixture
    def collection(self, store: Store, embedder: FakeEmbedder) -> CollectionInfo:
        return store.create_collection(
            "docs", dimensions=embedder.dimensions, embedding_model=embedder.model_name
        )

    def add(
        self,
        store: Store,
        collection: CollectionInfo,
        embedder: FakeEmbedder,
        texts: Sequence[str],
        *,
        source: str = "",
        title: str = "",
        tags: tuple[str, ...] = (),
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> str:
        """Store ``texts`` as one document's chunks; return the document id."""
        _, chunks = chunk_inputs(texts, embedder.embed(list(texts)), metadata)
        document = DocumentInput(source=source, title=title, tags=tags)
        return store.upsert_document(collection, document, chunks).id
