"""A stock LlamaIndex pipeline end to end, offline: ingest into our store, query it back."""

from __future__ import annotations

import pytest
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import Document, NodeRelationship, QueryBundle, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import FilterCondition as Condition
from rag_plugin.filters import FilterGroup
from rag_plugin.filters import FilterOperator as Operator
from rag_plugin.filters import MetadataFilter as RagFilter
from rag_plugin.llama_index.embedding import RagEmbedding
from rag_plugin.llama_index.node_parser import RagChunkNodeParser
from rag_plugin.llama_index.retriever import RagRetriever, filters_from_llama
from rag_plugin.llama_index.vector_store import RagVectorStore
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder

from .wildlife import DOCUMENTS


def test_pipeline_writes_one_document_per_llama_document(
    store: MemoryStore, collection: CollectionInfo
) -> None:
    documents = {d.source: d for d in store.list_documents(collection)}
    assert sorted(documents) == ["herons", "otters"]
    by_id = {d.id_: d.text for d in DOCUMENTS}
    for source, document in documents.items():
        chunks = store.document_chunks(collection, document.id)
        assert [c.index for c in chunks] == list(range(document.chunk_count))
        assert all(by_id[source][c.start_offset : c.end_offset] == c.content for c in chunks)
        assert document.title == chunks[0].metadata["title"]


def test_query_engine_returns_source_nodes_that_slice_their_document(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    retriever = RagRetriever.from_store(store, collection, embedder, strategy="hybrid", top_k=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    response = engine.query("Where do herons nest?")
    assert len(response.source_nodes) == 3
    texts = {d.id_: d.text for d in DOCUMENTS}
    for source_node in response.source_nodes:
        node = source_node.node
        assert isinstance(node, TextNode)
        document = store.get_document(collection, node.ref_doc_id or "")
        assert texts[document.source][node.start_char_idx : node.end_char_idx] == node.text
        assert 0.0 < (source_node.score or 0.0) <= 1.0


@pytest.mark.parametrize("strategy", ["semantic", "bm25", "fuzzy", "hybrid"])
def test_retriever_returns_chunk_nodes_for_every_strategy(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo, strategy: str
) -> None:
    retriever = RagRetriever.from_store(store, collection, embedder, strategy=strategy, top_k=2)
    searcher = CollectionSearcher(store, embedder)
    expected = searcher.search(collection, "otter shellfish", strategy=strategy, top_k=2)
    nodes = retriever.retrieve("otter shellfish")
    assert [n.node.node_id for n in nodes] == [hit.id for hit in expected.hits]
    for found, hit in zip(nodes, expected.hits, strict=True):
        assert found.node.relationships[NodeRelationship.SOURCE].node_id == hit.chunk.document_id
        assert found.node.metadata == dict(hit.chunk.metadata)


def test_retriever_applies_llama_index_metadata_filters(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="birds")])
    retriever = RagRetriever.from_store(
        store, collection, embedder, strategy="hybrid", filters=filters, top_k=10
    )
    nodes = retriever.retrieve("otters and herons")
    herons = next(d for d in store.list_documents(collection) if d.source == "herons")
    assert {n.node.metadata["topic"] for n in nodes} == {"birds"}
    assert len(nodes) == herons.chunk_count


def test_llama_index_filters_map_one_to_one() -> None:
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="n", value=1, operator=FilterOperator.GT),
            MetadataFilters(
                filters=[
                    MetadataFilter(
                        key="topic", value=["birds", "fish"], operator=FilterOperator.IN
                    ),
                    MetadataFilter(key="tags", value="wet", operator=FilterOperator.CONTAINS),
                ],
                condition=FilterCondition.OR,
            ),
            MetadataFilters(
                filters=[MetadataFilter(key="draft", value=None, operator=FilterOperator.IS_EMPTY)],
                condition=FilterCondition.NOT,
            ),
        ]
    )
    assert filters_from_llama(filters) == FilterGroup(
        Condition.AND,
        (
            RagFilter("n", Operator.GT, 1),
            FilterGroup(
                Condition.OR,
                (
                    RagFilter("topic", Operator.IN, ("birds", "fish")),
                    RagFilter("tags", Operator.CONTAINS, "wet"),
                ),
            ),
            FilterGroup(Condition.NOT, (RagFilter("draft", Operator.IS_EMPTY, None),)),
        ),
    )
    # Every LlamaIndex operator has its counterpart.
    assert {operator.value for operator in FilterOperator} == {o.value for o in Operator}


@pytest.mark.parametrize(
    "filters",
    [
        MetadataFilters(filters=[MetadataFilter(key="a", value=["x", "y"])]),  # == on a list
        MetadataFilters(filters=[MetadataFilter(key="a", value="x", operator=FilterOperator.IN)]),
        MetadataFilters(
            filters=[MetadataFilter(key="a", value=1, operator=FilterOperator.TEXT_MATCH)]
        ),
        MetadataFilters(filters=[MetadataFilter(key="", value="x")]),
    ],
)
def test_filters_no_store_can_apply_are_refused(filters: MetadataFilters) -> None:
    with pytest.raises(InvalidInputError):
        filters_from_llama(filters)


def test_filters_nested_too_deep_are_refused() -> None:
    filters = MetadataFilters(filters=[MetadataFilter(key="a", value="x")])
    for _ in range(9):
        filters = MetadataFilters(filters=[filters])
    with pytest.raises(InvalidInputError, match="deeper than 8"):
        filters_from_llama(filters)


def test_equality_filters_become_store_filters() -> None:
    filters = MetadataFilters(
        filters=[MetadataFilter(key="topic", value="birds"), MetadataFilter(key="page", value=3)]
    )
    assert filters_from_llama(filters) == FilterGroup(
        Condition.AND, (RagFilter("topic", Operator.EQ, "birds"), RagFilter("page", Operator.EQ, 3))
    )


def test_vector_store_delete_removes_the_llama_document(
    store: MemoryStore, collection: CollectionInfo
) -> None:
    vector_store = RagVectorStore(store, collection)
    vector_store.delete("otters")
    assert [d.source for d in store.list_documents(collection)] == ["herons"]
    assert store.bm25(collection, "otter", 10) == []


def test_rerunning_the_pipeline_replaces_documents(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    before = store.get_collection("wildlife")
    pipeline = IngestionPipeline(
        transformations=[RagChunkNodeParser.for_word(10, 2), RagEmbedding(embedder)],
        vector_store=RagVectorStore(store, collection),
    )
    pipeline.run(documents=DOCUMENTS)
    after = store.get_collection("wildlife")
    assert (after.document_count, after.chunk_count) == (before.document_count, before.chunk_count)


def test_nodes_without_embeddings_or_offsets_are_refused(
    store: MemoryStore, collection: CollectionInfo
) -> None:
    vector_store = RagVectorStore(store, collection)
    bare = TextNode(text="no vector here", start_char_idx=0, end_char_idx=14)
    bare.relationships[NodeRelationship.SOURCE] = Document(id_="d").as_related_node_info()
    with pytest.raises(InvalidInputError, match="embedding"):
        vector_store.add([bare])
    no_offsets = TextNode(text="no offsets", embedding=[0.25] * 16)
    no_offsets.relationships[NodeRelationship.SOURCE] = Document(id_="d").as_related_node_info()
    with pytest.raises(InvalidInputError, match="start_char_idx"):
        vector_store.add([no_offsets])


def test_add_writes_every_document_or_none(store: MemoryStore, collection: CollectionInfo) -> None:
    vector_store = RagVectorStore(store, collection)
    good = TextNode(text="a good node", embedding=[0.25] * 16, start_char_idx=0, end_char_idx=11)
    good.relationships[NodeRelationship.SOURCE] = Document(id_="a").as_related_node_info()
    bad = TextNode(text="a short one", embedding=[0.25] * 3, start_char_idx=0, end_char_idx=11)
    bad.relationships[NodeRelationship.SOURCE] = Document(id_="b").as_related_node_info()
    before = store.get_collection("wildlife")

    with pytest.raises(InvalidInputError, match="expected 16 dimensions, got 3"):
        vector_store.add([good, bad])
    after = store.get_collection("wildlife")
    assert after.document_count == before.document_count

    ids = vector_store.add([good])
    (document,) = [d for d in store.list_documents(collection) if d.source == "a"]
    assert ids == [f"{document.id}_0"]


def test_retriever_query_bundle_strings_are_validated(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    retriever = RagRetriever.from_store(store, collection, embedder)
    with pytest.raises(InvalidInputError, match="empty"):
        retriever.retrieve(QueryBundle(query_str="   "))
