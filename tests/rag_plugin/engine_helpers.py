"""Data, fixtures and helpers of the CollectionSearcher tests (test_engine_*.py).

Dense expectations follow from hand-made vectors; lexical leg orders are argued in comments
from the chunk texts; RRF scores are the formula ``Σ w / (k + rank)`` written out. The test
modules take the fixtures with ``from tests.rag_plugin.engine_helpers import *`` (``__all__``
names only them): a conftest here would reach every module under tests/rag_plugin.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.fusion import SEED_RRF_K, SEED_WEIGHTS
from rag_plugin.outcome import SearchHit
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.table_embedder import TableEmbedder

__all__ = ["collection", "doc", "embedder", "searcher", "store"]


CHUNKS = {
    "the quick brown fox jumps": [1.0, 0.0, 0.0],
    "lazy dogs sleep all day": [0.0, 1.0, 0.0],
    "quick thinking brown bears": [0.8, 0.6, 0.0],
    "foxes are quick and clever": [0.0, 0.0, 1.0],
}
QUERIES = {"quick fox": [1.0, 0.2, 0.0], "quikc fox": [1.0, 0.2, 0.0], "bears": [0.0, 0.1, 1.0]}


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def embedder() -> TableEmbedder:
    return TableEmbedder({**CHUNKS, **QUERIES})


@pytest.fixture
def collection(store: MemoryStore) -> CollectionInfo:
    return store.create_collection("docs", dimensions=3, embedding_model="table")


@pytest.fixture
def doc(store: MemoryStore, collection: CollectionInfo) -> str:
    """One document whose chunks 0..3 are CHUNKS in order; returns its id."""
    chunks, start = [], 0
    for index, (text, vector) in enumerate(CHUNKS.items()):
        chunks.append(ChunkInput(index, text, start, start + len(text), vector))
        start += len(text) + 1
    return store.upsert_document(collection, DocumentInput(source="animals"), chunks).id


@pytest.fixture
def searcher(store: MemoryStore, embedder: TableEmbedder) -> CollectionSearcher:
    return CollectionSearcher(store, embedder)


def pairs(hits: Sequence[SearchHit]) -> list[tuple[str, float]]:
    return [(hit.chunk.id, hit.score) for hit in hits]


def approx_pairs(doc: str, expected: list[tuple[int, float]]) -> list[tuple[str, object]]:
    return [(f"{doc}_{i}", pytest.approx(score, abs=1e-12)) for i, score in expected]


# Legs for "quick fox" (chunk numbers):
#   dense  cosine to (1, 0.2, 0): 0 (0.981), 2 (0.902), 1 (0.196), 3 (0.0)
#   bm25   0 has both terms; 2 and 3 only "quick" ("foxes" is another token), 2 is shorter
#   fuzzy  0 = 1.0; 3 = (1 + 0.6)/2 ("fox"~"foxes", d=2) = 0.8; 2 = (1/2)·(1/2) = 0.25
NORM = 1.0 / 1.04**0.5


# Ranks: dense [0, 2, 1, 3], bm25 [0, 2, 3], fuzzy [0, 3, 2].
PRODUCT_FUSION = (
    {},  # the defaults: 0.5 / 0.5 / 0.1, k 10
    1.1 / 11,
    [
        (0, 0.5 / 11 + 0.5 / 11 + 0.1 / 11),
        (2, 0.5 / 12 + 0.5 / 12 + 0.1 / 13),
        (3, 0.5 / 14 + 0.5 / 13 + 0.1 / 12),
        (1, 0.5 / 13),
    ],
)
SEED_FUSION = (
    {"weights": SEED_WEIGHTS, "rrf_k": SEED_RRF_K},  # 0.6 / 0.3 / 0.1, k 60
    1.0 / 61,
    [
        (0, 0.6 / 61 + 0.3 / 61 + 0.1 / 61),
        (2, 0.6 / 62 + 0.3 / 62 + 0.1 / 63),
        (3, 0.6 / 64 + 0.3 / 63 + 0.1 / 62),
        (1, 0.6 / 63),
    ],
)
