"""A LlamaIndex retriever over one collection, for every search strategy (SPEC S6)."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import MetadataFilters

from rag_plugin.embedding.base import Embedder
from rag_plugin.engine import CollectionSearcher, EmbedderResolver
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import (
    MAX_DEPTH,
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    MetadataFilter,
    Scalar,
    as_expression,
)
from rag_plugin.fusion import DEFAULT_RRF_K, HybridWeights
from rag_plugin.outcome import SearchHit
from rag_plugin.search import DEFAULT_STRATEGY, SearchStrategy
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, Filters, Store

__all__ = ["RagRetriever", "chunk_to_node", "filters_from_llama"]


class RagRetriever(BaseRetriever):
    """Retrieves ``NodeWithScore``s from one collection through :class:`CollectionSearcher`.

    Each node's id is the chunk id, its text the chunk's content, its char offsets the
    chunk's offsets into the source document, and its SOURCE relationship the document id.
    The node's score is the hit's ``normalized_score`` for hybrid search (in [0, 1]) and the
    strategy's own score otherwise.
    """

    def __init__(
        self,
        searcher: CollectionSearcher,
        collection: CollectionInfo,
        *,
        strategy: SearchStrategy | str = DEFAULT_STRATEGY,
        top_k: int = 10,
        threshold: float = 0.0,
        correct_typos: bool = False,
        filters: MetadataFilters | Filters | None = None,
        weights: HybridWeights | None = None,
        rrf_k: float = DEFAULT_RRF_K,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.searcher = searcher
        self.collection = collection
        self.strategy = SearchStrategy.parse(strategy) if isinstance(strategy, str) else strategy
        self.top_k = top_k
        self.threshold = threshold
        self.correct_typos = correct_typos
        self.filters = filters_from_llama(filters)
        self.weights = weights
        self.rrf_k = rrf_k

    @classmethod
    def from_store(
        cls,
        store: Store,
        collection: CollectionInfo,
        embedder: Embedder | EmbedderResolver,
        **kwargs: Any,
    ) -> RagRetriever:
        """A retriever over ``store`` that embeds queries with ``embedder``."""
        return cls(CollectionSearcher(store, embedder), collection, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        outcome = self.searcher.search(
            self.collection,
            query_bundle.query_str,
            strategy=self.strategy,
            top_k=self.top_k,
            threshold=self.threshold,
            correct_typos=self.correct_typos,
            filters=self.filters,
            weights=self.weights,
            rrf_k=self.rrf_k,
        )
        return [
            NodeWithScore(node=chunk_to_node(hit.chunk), score=_score(hit)) for hit in outcome.hits
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` in a worker thread: the store's calls block, the loop must not."""
        return await asyncio.to_thread(self._retrieve, query_bundle)


def _score(hit: SearchHit) -> float:
    return hit.normalized_score if hit.normalized_score is not None else hit.score


def chunk_to_node(chunk: ChunkRecord) -> TextNode:
    """A ``TextNode`` carrying the chunk's id, text, exact offsets and metadata."""
    return TextNode(
        id_=chunk.id,
        text=chunk.content,
        start_char_idx=chunk.start_offset,
        end_char_idx=chunk.end_offset,
        metadata=dict(chunk.metadata),
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=chunk.document_id)},
    )


def filters_from_llama(filters: MetadataFilters | Filters | None) -> Filters | None:
    """LlamaIndex ``MetadataFilters`` as our filter expression, one to one (every operator
    and condition, nested); anything else passes through as it is, to be validated by the
    store. The operators mean what :mod:`rag_plugin.filters` says, which is what LlamaIndex's
    own in-memory store does, applied before ranking in every leg."""
    if filters is None or not isinstance(filters, MetadataFilters):
        return filters
    if not filters.filters:  # as LlamaIndex's own stores read it: no filter
        return None
    return as_expression(_expression(filters, 1))


def _expression(filters: MetadataFilters, depth: int) -> FilterExpression:
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"MetadataFilters nest deeper than {MAX_DEPTH} levels.")
    condition = FilterCondition(filters.condition.value if filters.condition else "and")
    children: list[FilterExpression] = []
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            children.append(_expression(item, depth + 1))
            continue
        raw = item.value
        value: Scalar | tuple[Scalar, ...] | None = tuple(raw) if isinstance(raw, list) else raw
        children.append(MetadataFilter(item.key, FilterOperator(item.operator.value), value))
    return FilterGroup(condition, tuple(children))
