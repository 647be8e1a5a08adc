"""The ``wildlife`` collection: the two documents of wildlife.py through a stock pipeline, in
each store that keeps them without a server (the adapters hold a ``Store``, whichever it is)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core.ingestion import IngestionPipeline

from rag_plugin.llama_index.embedding import RagEmbedding
from rag_plugin.llama_index.node_parser import RagChunkNodeParser
from rag_plugin.llama_index.vector_store import RagVectorStore
from rag_plugin.stores.base import CollectionInfo, Store
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.stores.qdrant import QdrantStore
from rag_plugin.testing import FakeEmbedder

from .wildlife import DOCUMENTS


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimensions=16)


@pytest.fixture(params=["memory", "qdrant"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    store = QdrantStore(location=":memory:")
    yield store
    store.close()


@pytest.fixture
def collection(store: Store, embedder: FakeEmbedder) -> CollectionInfo:
    collection = store.create_collection(
        "wildlife", dimensions=embedder.dimensions, embedding_model=embedder.model_name
    )
    pipeline = IngestionPipeline(
        transformations=[RagChunkNodeParser.for_word(10, 2), RagEmbedding(embedder)],
        vector_store=RagVectorStore(store, collection),
    )
    pipeline.run(documents=DOCUMENTS)
    return store.get_collection("wildlife")
