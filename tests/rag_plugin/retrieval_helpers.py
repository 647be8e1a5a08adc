"""Data, fixtures and helpers of the multi-collection retrieval tests (test_retrieval_*.py).

Query vectors are unit vectors and chunk vectors are unit vectors, so every dense score is a
dot product written out in the comments; lexical scores come from normalised RRF ranks. The test
modules take the fixtures with ``from tests.rag_plugin.retrieval_helpers import *`` (``__all__``
names only them): a conftest here would reach every module under tests/rag_plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.retrieval import MultiCollectionRetriever, RetrievalProfile, RetrievedChunk
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.table_embedder import TableEmbedder

__all__ = ["faq", "handbook", "retriever", "searcher", "store"]


QUERY = "refund policy"
QUERY_VECTOR = [1.0, 0.0, 0.0]

Row = tuple[str, list[float], dict[str, Any]]

# (content, vector, extra metadata); dense score against QUERY_VECTOR is the first component.
HANDBOOK: list[Row] = [
    ("Refund policy: refunds within 30 days.", [1.0, 0.0, 0.0], {}),  # 1.0
    ("Shipping takes five days.", [0.6, 0.8, 0.0], {}),  # 0.6
    ("Office plants need water.", [0.0, 1.0, 0.0], {}),  # 0.0
]
FAQ: list[Row] = [
    ("FAQ: how do I ask for a refund?", [0.8, 0.6, 0.0], {}),  # 0.8
    ("Photo of the refund form.", [0.8, 0.6, 0.0], {"has_image": True}),  # 0.8, an image
    ("Opening hours are nine to five.", [0.0, 0.0, 1.0], {}),  # 0.0
]


def add_document(
    store: MemoryStore,
    collection: CollectionInfo,
    chunks: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]],
    source: str,
) -> None:
    inputs, start = [], 0
    for index, (text, vector, metadata) in enumerate(chunks):
        inputs.append(ChunkInput(index, text, start, start + len(text), vector, metadata))
        start += len(text) + 1
    store.upsert_document(collection, DocumentInput(source=source, title=source), inputs)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def handbook(store: MemoryStore) -> CollectionInfo:
    info = store.create_collection("handbook", dimensions=3, embedding_model="table")
    add_document(store, info, HANDBOOK, "handbook.md")
    return info


@pytest.fixture
def faq(store: MemoryStore) -> CollectionInfo:
    info = store.create_collection("faq", dimensions=3, embedding_model="table")
    add_document(store, info, FAQ, "faq.md")
    return info


@pytest.fixture
def searcher(store: MemoryStore) -> CollectionSearcher:
    table = {text: vector for text, vector, _ in HANDBOOK + FAQ}
    table.update({QUERY: QUERY_VECTOR, "Wer ist der Inhaber?": [0.0, 0.0, 1.0]})
    return CollectionSearcher(store, TableEmbedder(table))


@pytest.fixture
def retriever(searcher: CollectionSearcher) -> MultiCollectionRetriever:
    return MultiCollectionRetriever(searcher)


def semantic_profile(**options: Any) -> RetrievalProfile:
    """A profile on the dense leg alone (the default is hybrid): these tests check scores that
    are the fake embedder's cosine similarities."""
    return RetrievalProfile(**{"strategy": "semantic", **options})


OFF = semantic_profile(rerank="off")


def rows(chunks: Sequence[RetrievedChunk]) -> list[tuple[str, str, float]]:
    return [(c.label, c.content, round(c.score, 12)) for c in chunks]
