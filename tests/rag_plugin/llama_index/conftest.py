"""The ``wildlife`` collection: the two documents of wildlife.py through a stock pipeline."""

from __future__ import annotations

import pytest
from llama_index.core.ingestion import IngestionPipeline

from rag_plugin.llama_index.embedding import RagEmbedding
from rag_plugin.llama_index.node_parser import RagChunkNodeParser
from rag_plugin.llama_index.vector_store import RagVectorStore
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder

from .wildlife import DOCUMENTS


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimensions=16)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def collection(store: MemoryStore, embedder: FakeEmbedder) -> CollectionInfo:
    collection = store.create_collection(
        "wildlife", dimensions=embedder.dimensions, embedding_model=embedder.model_name
    )
    pipeline = IngestionPipeline(
        transformations=[RagChunkNodeParser.for_word(10, 2), RagEmbedding(embedder)],
        vector_store=RagVectorStore(store, collection),
    )
    pipeline.run(documents=DOCUMENTS)
    return store.get_collection("wildlife")
