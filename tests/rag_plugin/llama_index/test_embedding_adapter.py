"""E8: RagEmbedding delegates LlamaIndex's embedding calls to a rag_plugin embedder."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import TextNode

from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.embedding import RagEmbedding
from rag_plugin.testing import FakeEmbedder


def test_model_name_and_embedder_come_from_the_wrapped_embedder() -> None:
    fake = FakeEmbedder(8)
    adapter = RagEmbedding(fake)

    assert adapter.model_name == "fake-8"
    assert adapter.embedder is fake
    assert adapter.class_name() == "RagEmbedding"
    assert adapter.embed_batch_size == 2048


def test_batch_uses_the_embedders_dedup_plan() -> None:
    fake = FakeEmbedder()
    adapter = RagEmbedding(fake)

    vectors = adapter.get_text_embedding_batch(["alpha", " alpha\n", "beta"])

    assert fake.batches == [["alpha", "beta"]]
    assert vectors == FakeEmbedder().embed(["alpha", "alpha", "beta"])


def test_llama_index_batching_is_respected_when_configured() -> None:
    fake = FakeEmbedder()
    adapter = RagEmbedding(fake, embed_batch_size=2)

    adapter.get_text_embedding_batch(["a", "b", "c"])

    assert fake.batches == [["a", "b"], ["c"]]


def test_query_and_single_text_embeddings_delegate() -> None:
    fake = FakeEmbedder()
    adapter = RagEmbedding(fake)

    assert adapter.get_query_embedding("what?") == FakeEmbedder().embed_query("what?")
    assert adapter.get_text_embedding("text") == FakeEmbedder().embed_query("text")
    assert fake.batches == [["what?"], ["text"]]


def test_async_variants_delegate() -> None:
    fake = FakeEmbedder()
    adapter = RagEmbedding(fake)

    async def run() -> tuple[list[float], list[float], list[list[float]]]:
        query = await adapter.aget_query_embedding("q")
        text = await adapter.aget_text_embedding("t")
        batch = await adapter.aget_text_embedding_batch(["x", "x", "y"])
        return query, text, batch

    query, text, batch = asyncio.run(run())

    expected = FakeEmbedder()
    assert query == expected.embed_query("q")
    assert text == expected.embed_query("t")
    assert batch == expected.embed(["x", "x", "y"])
    assert fake.batches == [["q"], ["t"], ["x", "y"]]


def test_errors_from_the_embedder_propagate() -> None:
    with pytest.raises(InvalidInputError, match="index 1 is empty"):
        RagEmbedding(FakeEmbedder()).get_text_embedding_batch(["ok", " "])


def test_ingestion_pipeline_sets_node_embeddings_and_reuses_the_cache() -> None:
    cache = InMemoryEmbeddingCache()
    fake = FakeEmbedder(cache=cache)
    pipeline = IngestionPipeline(transformations=[RagEmbedding(fake)])
    nodes = [TextNode(text="alpha", id_="n1"), TextNode(text="beta", id_="n2")]

    first = pipeline.run(nodes=nodes)
    again = IngestionPipeline(transformations=[RagEmbedding(fake)]).run(
        documents=[Document(text="alpha", id_="d1")]
    )

    assert [node.embedding for node in first] == FakeEmbedder().embed(["alpha", "beta"])
    assert again[0].embedding == first[0].embedding
    assert fake.batches == [["alpha", "beta"]]
