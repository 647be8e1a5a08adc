"""RagVectorStore under stock LlamaIndex: every query mode, restrictions and async paths (the
``wildlife`` collection of conftest.py)."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.fusion import HybridWeights
from rag_plugin.llama_index.embedding import RagEmbedding
from rag_plugin.llama_index.retriever import RagRetriever
from rag_plugin.llama_index.vector_store import RagVectorStore
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder

QUERY = "heron fish otter"


@pytest.fixture
def index(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> VectorStoreIndex:
    return VectorStoreIndex.from_vector_store(
        RagVectorStore(store, collection), embed_model=RagEmbedding(embedder)
    )


def expected_ids(
    store: MemoryStore,
    embedder: FakeEmbedder,
    collection: CollectionInfo,
    strategy: str,
    weights: HybridWeights | None = None,
    top_k: int = 4,
) -> list[str]:
    outcome = CollectionSearcher(store, embedder).search(
        collection, QUERY, strategy=strategy, top_k=top_k, weights=weights, threshold=-1.0
    )
    return [hit.id for hit in outcome.hits]


def test_the_default_mode_is_the_dense_leg(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    vector = embedder.embed_query("heron")
    result = RagVectorStore(store, collection).query(
        VectorStoreQuery(query_embedding=vector, similarity_top_k=3)
    )
    expected = store.dense(collection, vector, 3)
    assert result.ids == [hit.chunk.id for hit in expected]
    assert result.similarities == [hit.score for hit in expected]


@pytest.mark.parametrize(
    ("alpha", "strategy", "weights"),
    [
        (0.5, "hybrid", HybridWeights(semantic=0.5, bm25=0.5, fuzzy=0.0)),
        (None, "hybrid", None),
        (1.0, "semantic", None),
        (0.0, "bm25", None),
    ],
)
def test_hybrid_mode_through_a_stock_index_fuses_dense_and_bm25_by_alpha(
    store: MemoryStore,
    embedder: FakeEmbedder,
    collection: CollectionInfo,
    index: VectorStoreIndex,
    alpha: float | None,
    strategy: str,
    weights: HybridWeights | None,
) -> None:
    retriever = index.as_retriever(
        vector_store_query_mode="hybrid", alpha=alpha, similarity_top_k=4
    )
    nodes = retriever.retrieve(QUERY)
    assert [n.node.node_id for n in nodes] == expected_ids(
        store, embedder, collection, strategy, weights
    )
    assert all(0.0 <= (n.score or 0.0) <= 1.0 for n in nodes)


@pytest.mark.parametrize("mode", ["text_search", "sparse"])
def test_text_search_and_sparse_modes_are_bm25(
    store: MemoryStore,
    embedder: FakeEmbedder,
    collection: CollectionInfo,
    index: VectorStoreIndex,
    mode: str,
) -> None:
    nodes = index.as_retriever(vector_store_query_mode=mode, similarity_top_k=4).retrieve(QUERY)
    assert [n.node.node_id for n in nodes] == [
        hit.chunk.id for hit in store.bm25(collection, QUERY, 4)
    ]


def test_filters_doc_ids_and_node_ids_restrict_before_ranking(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    vector_store = RagVectorStore(store, collection)
    vector = embedder.embed_query(QUERY)
    herons = store.find_document(collection, source="herons")
    assert herons is not None
    heron_chunks = [c.id for c in store.document_chunks(collection, herons.id)]
    birds = MetadataFilters(
        filters=[MetadataFilter(key="topic", value=["birds"], operator=FilterOperator.IN)]
    )
    for query, expected in (
        (VectorStoreQuery(query_embedding=vector, similarity_top_k=10, filters=birds), None),
        (VectorStoreQuery(query_embedding=vector, similarity_top_k=10, doc_ids=["herons"]), None),
        (
            VectorStoreQuery(
                query_embedding=vector,
                query_str=QUERY,
                similarity_top_k=10,
                node_ids=heron_chunks[:2],
                mode=VectorStoreQueryMode.HYBRID,
            ),
            set(heron_chunks[:2]),
        ),
    ):
        result = vector_store.query(query)
        assert set(result.ids or []) == (expected or set(heron_chunks)), query


def test_bad_queries_name_the_problem(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    vector_store = RagVectorStore(store, collection)
    vector = embedder.embed_query(QUERY)
    for query, message in (
        (VectorStoreQuery(query_str=QUERY), "needs a query_embedding"),
        (
            VectorStoreQuery(query_embedding=vector, mode=VectorStoreQueryMode.HYBRID),
            "needs a query_str",
        ),
        (
            VectorStoreQuery(
                query_embedding=vector,
                query_str=QUERY,
                mode=VectorStoreQueryMode.HYBRID,
                alpha=1.5,
            ),
            "alpha must be between 0 and 1",
        ),
        (VectorStoreQuery(query_embedding=vector, mode=VectorStoreQueryMode.MMR), "Unsupported"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            vector_store.query(query)


def test_a_stock_query_engine_answers_from_the_store(index: VectorStoreIndex) -> None:
    engine = index.as_query_engine(llm=MockLLM(), vector_store_query_mode="hybrid")
    response = engine.query("Where do herons nest?")
    assert response.source_nodes
    assert {n.node.metadata["source"] for n in response.source_nodes} <= {"herons", "otters"}
    assert "herons" in {n.node.metadata["source"] for n in response.source_nodes}


def test_async_paths_give_the_sync_answers(
    store: MemoryStore,
    embedder: FakeEmbedder,
    collection: CollectionInfo,
    index: VectorStoreIndex,
) -> None:
    vector_store = RagVectorStore(store, collection)
    retriever = RagRetriever.from_store(store, collection, embedder, strategy="hybrid", top_k=3)
    query = VectorStoreQuery(query_embedding=embedder.embed_query(QUERY), similarity_top_k=3)
    stock_retriever = index.as_retriever(vector_store_query_mode="hybrid")
    expected = (
        vector_store.query(query).ids,
        [n.node.node_id for n in retriever.retrieve(QUERY)],
        [n.node.node_id for n in stock_retriever.retrieve(QUERY)],
    )

    async def run() -> tuple[list[str], list[str], list[str]]:
        found = await vector_store.aquery(query)
        nodes = await retriever.aretrieve(QUERY)
        stock = await stock_retriever.aretrieve(QUERY)
        await vector_store.adelete("otters")
        return found.ids or [], [n.node.node_id for n in nodes], [n.node.node_id for n in stock]

    assert asyncio.run(run()) == expected
    assert all(expected)
    assert [d.source for d in store.list_documents(collection)] == ["herons"]


def test_doc_ids_take_our_document_ids_as_retrieved_nodes_carry(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    herons = store.find_document(collection, source="herons")
    assert herons is not None
    query = VectorStoreQuery(
        query_embedding=embedder.embed_query(QUERY), similarity_top_k=10, doc_ids=[herons.id]
    )
    result = RagVectorStore(store, collection).query(query)
    assert {node.metadata["source"] for node in result.nodes or []} == {"herons"}


def test_node_ids_of_sourceless_documents_still_come_back(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    collection = store.create_collection(
        "loose", dimensions=embedder.dimensions, embedding_model=embedder.model_name
    )

    def document(texts: list[str]) -> str:
        chunks, start = [], 0
        for index, text in enumerate(texts):
            vector = embedder.embed_query(text)
            chunks.append(ChunkInput(index, text, start, start + len(text), vector, {}))
            start += len(text) + 1
        return store.upsert_document(collection, DocumentInput(), chunks).id

    wanted = document(["a quiet pond"])
    document([f"heron {i}" for i in range(5)])  # no source either, and closer to the query
    query = VectorStoreQuery(
        query_embedding=embedder.embed_query("heron 1"),
        similarity_top_k=1,
        node_ids=[f"{wanted}_0"],
    )
    assert RagVectorStore(store, collection).query(query).ids == [f"{wanted}_0"]
