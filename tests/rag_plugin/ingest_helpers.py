"""Text, chunker and fixtures of the ingest tests (test_ingest_*.py): memory store, fake embedder.

The test modules take the fixtures with ``from tests.rag_plugin.ingest_helpers import *``
(``__all__`` names only them): a conftest here would reach every module under tests/rag_plugin.
"""

from __future__ import annotations

import pytest

from rag_plugin.chunking import ChunkerConfig, TextChunker
from rag_plugin.ingest import get_or_create_collection
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder

__all__ = ["collection", "embedder", "store"]


TEXT = (
    "alpha bravo charlie delta echo foxtrot golf hotel "
    "india juliet kilo lima mike november oscar papa"
)
WORDS_4 = TextChunker(ChunkerConfig.for_word(4, 0))


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimensions=8)


@pytest.fixture
def collection(store: MemoryStore, embedder: FakeEmbedder) -> CollectionInfo:
    return get_or_create_collection(store, "docs", embedder=embedder, owner="user:1")
