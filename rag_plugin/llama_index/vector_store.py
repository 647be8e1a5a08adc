"""A LlamaIndex vector store that writes to and reads from one collection of a :class:`Store`.

So a stock ``IngestionPipeline(transformations=[...], vector_store=RagVectorStore(...))``
fills our store. Mapping: one LlamaIndex document (``ref_doc_id``) is one of our documents
whose ``source`` is the ``ref_doc_id`` — re-adding a document replaces it, as the store does
for a source — and each node is one chunk (offsets from ``start_char_idx``/``end_char_idx``,
index from the ``chunk_index`` metadata or the node's position, vector from
``node.embedding``). ``add`` must see all of a document's nodes in one call.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from rag_plugin.embedding.base import Embedder
from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import ConfigurationError, DocumentNotFoundError, InvalidInputError
from rag_plugin.filters import (
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    Filters,
    MetadataFilter,
    as_expression,
)
from rag_plugin.fusion import HybridWeights
from rag_plugin.llama_index.retriever import chunk_to_node, filters_from_llama
from rag_plugin.outcome import SearchHit
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import (
    ChunkInput,
    CollectionInfo,
    DocumentInput,
    DocumentRecord,
    Store,
)

__all__ = ["RagVectorStore"]

_CHUNK_INDEX_KEY = "chunk_index"


class RagVectorStore(BasePydanticVectorStore):
    """One collection of a :class:`Store`, seen as a LlamaIndex vector store."""

    stores_text: bool = True
    is_embedding_query: bool = True

    _store: Store = PrivateAttr()
    _collection: CollectionInfo = PrivateAttr()

    def __init__(self, store: Store, collection: CollectionInfo, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._store = store
        self._collection = collection

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex uses when serialising this component."""
        return "RagVectorStore"

    @property
    def client(self) -> Store:
        """The underlying store."""
        return self._store

    @property
    def collection(self) -> CollectionInfo:
        """The collection this vector store reads and writes."""
        return self._collection

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Store the nodes as one document per ``ref_doc_id``, all in one store write (all of
        them or none); return the stored chunk ids."""
        groups: dict[str, list[BaseNode]] = {}
        for node in nodes:
            if node.ref_doc_id is None:
                raise InvalidInputError(
                    f"Node {node.node_id} has no source document (ref_doc_id); parse documents "
                    "into nodes with a node parser first."
                )
            groups.setdefault(node.ref_doc_id, []).append(node)
        documents = []
        for ref_doc_id, members in groups.items():
            chunks = [_chunk_input(node, position) for position, node in enumerate(members)]
            title = members[0].metadata.get("title", "")
            document = DocumentInput(
                source=ref_doc_id, title=title if isinstance(title, str) else ""
            )
            documents.append((document, chunks))
        records = self._store.upsert_documents(self._collection, documents)
        return [
            f"{record.id}_{chunk.index}"
            for record, (_, chunks) in zip(records, documents, strict=True)
            for chunk in chunks
        ]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete the document added under ``ref_doc_id`` (or with that document id)."""
        for record in self._records_for(ref_doc_id):
            self._store.delete_document(self._collection, record.id)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` best chunks for the query, by its mode.

        - ``DEFAULT``: the dense leg, on ``query_embedding``;
        - ``HYBRID``: weighted reciprocal rank fusion of the dense leg and BM25, on
          ``query_embedding`` and ``query_str``: ``alpha`` is the dense weight and
          ``1 − alpha`` BM25's (so 1 is dense only, 0 BM25 only); without ``alpha``, the
          engine's default weights (dense 0.5, BM25 0.5, fuzzy 0.1). Similarities are the
          fused scores normalised to [0, 1];
        - ``TEXT_SEARCH`` and ``SPARSE``: BM25 on ``query_str``.

        ``filters`` apply inside every leg before ranking; ``doc_ids`` (documents' ``ref_doc_id``)
        and ``node_ids`` (chunk ids) restrict the search to those documents or chunks.
        """
        mode = query.mode
        if mode not in _STRATEGIES:
            known = ", ".join(m.value for m in _STRATEGIES)
            raise InvalidInputError(f"Unsupported query mode: {mode.value}. Use: {known}")
        strategy = _STRATEGIES[mode]
        if strategy is not SearchStrategy.BM25 and query.query_embedding is None:
            raise InvalidInputError(f"A {mode.value} query needs a query_embedding.")
        if strategy is not SearchStrategy.SEMANTIC and not (query.query_str or "").strip():
            raise InvalidInputError(f"A {mode.value} query needs a query_str.")
        weights = None
        if strategy is SearchStrategy.HYBRID and query.alpha is not None:
            alpha = query.alpha
            if not 0.0 <= alpha <= 1.0:
                raise InvalidInputError(f"alpha must be between 0 and 1, got {alpha!r}.")
            weights = HybridWeights(semantic=alpha, bm25=1.0 - alpha, fuzzy=0.0)
        filters, top_k, keep = self._restriction(query)
        if top_k == 0:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        outcome = CollectionSearcher(self._store, _no_embedder).search(
            self._collection,
            # A dense query may come without text; the engine only embeds text it lacks a
            # vector for, and this one has its vector.
            query.query_str or "(vector query)",
            strategy=strategy,
            top_k=top_k,
            threshold=_EVERY_SCORE if strategy is SearchStrategy.SEMANTIC else 0.0,
            filters=filters,
            weights=weights,
            query_vector=query.query_embedding,
        )
        hits = [hit for hit in outcome.hits if keep is None or keep(hit)]
        hits = hits[: query.similarity_top_k]
        return VectorStoreQueryResult(
            nodes=[chunk_to_node(hit.chunk) for hit in hits],
            similarities=[
                hit.normalized_score if hit.normalized_score is not None else hit.score
                for hit in hits
            ],
            ids=[hit.id for hit in hits],
        )

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """:meth:`query` in a worker thread, so the event loop is not blocked."""
        return await asyncio.to_thread(self.query, query, **kwargs)

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """:meth:`add` in a worker thread, so the event loop is not blocked."""
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """:meth:`delete` in a worker thread, so the event loop is not blocked."""
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    def _restriction(
        self, query: VectorStoreQuery
    ) -> tuple[Filters | None, int, Callable[[SearchHit], bool] | None]:
        """The filter, how many chunks to rank, and which ranked chunks to keep (None: all).

        ``doc_ids`` (a ``ref_doc_id`` as added, or our document id as retrieved nodes carry)
        and ``node_ids`` name documents; with non-empty sources they become a filter on the
        sources, else (sourceless documents) every chunk is ranked and the wanted ones kept.
        ``node_ids`` rank every chunk of their documents and keep the named chunks, so up to
        ``similarity_top_k`` of them come back.
        """
        parts: list[FilterExpression] = []
        expression = as_expression(filters_from_llama(query.filters))
        if expression is not None:
            parts.append(expression)
        top_k = query.similarity_top_k
        if not query.doc_ids and not query.node_ids:  # LlamaIndex sends [] for "no restriction"
            return expression, top_k, None
        wanted_chunks = set(query.node_ids or ())
        named = list(query.doc_ids or ()) + [c.rpartition("_")[0] for c in wanted_chunks]
        records: dict[str, DocumentRecord] = {}
        for reference in named:
            for record in self._records_for(reference):
                records[record.id] = record
        documents = set(records)
        if any(not record.source for record in records.values()):
            top_k = self._store.get_collection(
                self._collection.name, owner=self._collection.owner
            ).chunk_count
        else:
            sources = tuple(sorted(record.source for record in records.values()))
            parts.append(MetadataFilter("source", FilterOperator.IN, sources))
            if wanted_chunks:
                top_k = sum(record.chunk_count for record in records.values())

        def keep(hit: SearchHit) -> bool:
            if wanted_chunks:
                return hit.id in wanted_chunks
            return hit.chunk.document_id in documents

        if not parts:
            return None, top_k, keep
        filters = parts[0] if len(parts) == 1 else FilterGroup(FilterCondition.AND, tuple(parts))
        return filters, top_k, keep

    def _records_for(self, reference: str) -> list[DocumentRecord]:
        """The document stored under ``reference`` as its source, or with it as its id."""
        found = None
        if reference:
            found = self._store.find_document(self._collection, source=reference)
        if found is not None:
            return [found]
        try:
            return [self._store.get_document(self._collection, reference)]
        except (DocumentNotFoundError, InvalidInputError):
            return []


_EVERY_SCORE = -sys.float_info.max
"""The dense leg's similarities may be negative (cosine, inner product): none is cut."""

_STRATEGIES = {
    VectorStoreQueryMode.DEFAULT: SearchStrategy.SEMANTIC,
    VectorStoreQueryMode.HYBRID: SearchStrategy.HYBRID,
    VectorStoreQueryMode.TEXT_SEARCH: SearchStrategy.BM25,
    VectorStoreQueryMode.SPARSE: SearchStrategy.BM25,
}


def _no_embedder(collection: CollectionInfo) -> Embedder:
    raise ConfigurationError(
        "RagVectorStore does not embed queries: pass the query_embedding (LlamaIndex's "
        "VectorStoreIndex does)."
    )


def _chunk_input(node: BaseNode, position: int) -> ChunkInput:
    if node.embedding is None:
        raise InvalidInputError(
            f"Node {node.node_id} has no embedding; add an embedding model to the pipeline's "
            "transformations."
        )
    start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
    if start is None or end is None:
        raise InvalidInputError(
            f"Node {node.node_id} has no start_char_idx/end_char_idx; use a node parser that "
            "records offsets (such as RagChunkNodeParser)."
        )
    index = node.metadata.get(_CHUNK_INDEX_KEY, position)
    return ChunkInput(
        index=index if isinstance(index, int) else position,
        content=node.get_content(metadata_mode=MetadataMode.NONE),
        start_offset=start,
        end_offset=end,
        embedding=node.embedding,
        metadata=dict(node.metadata),
    )
