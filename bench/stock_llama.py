"""The stock LlamaIndex baseline the latency benches compare against, built one way for all.

``VectorStoreIndex`` (SimpleVectorStore), ``BM25Retriever`` (bm25s) and
``QueryFusionRetriever(mode=RECIPROCAL_RANK)`` over them: what a LlamaIndex user builds for
hybrid search without our library. Needs ``make bench-deps``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StockRetrievers:
    """Top-10 dense and BM25 retrievers, and the hybrid one (20 from each leg, fused)."""

    semantic: Any
    bm25: Any
    hybrid: Any
    build_s: float


def stock_retrievers(
    chunks: Iterable[tuple[str, Sequence[float]]], dimensions: int
) -> StockRetrievers:
    """The stock retrievers over ``chunks`` (text, vector); the build time covers the indexes."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    Settings.llm = MockLLM()
    Settings.embed_model = MockEmbedding(embed_dim=dimensions)
    nodes = [TextNode(text=text, embedding=list(vector)) for text, vector in chunks]
    started = time.perf_counter()
    index = VectorStoreIndex(nodes)
    fusion = QueryFusionRetriever(
        [
            index.as_retriever(similarity_top_k=20),
            BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=20),
        ],
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=10,
        use_async=False,
    )
    build = time.perf_counter() - started
    return StockRetrievers(
        semantic=index.as_retriever(similarity_top_k=10),
        bm25=BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10),
        hybrid=fusion,
        build_s=build,
    )


def query_bundle(text: str, vector: Sequence[float]) -> Any:
    """A LlamaIndex query carrying its own vector (no embedding model is called)."""
    from llama_index.core.schema import QueryBundle

    return QueryBundle(text, embedding=list(vector))
