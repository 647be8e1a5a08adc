"""A LlamaIndex vector store that writes to and reads from one collection of a :class:`Store`.

So a stock ``IngestionPipeline(transformations=[...], vector_store=RagVectorStore(...))``
fills our store. Mapping: one LlamaIndex document (``ref_doc_id``) is one of our documents
whose ``source`` is the ``ref_doc_id`` — re-adding a document replaces it, as the store does
for a source — and each node is one chunk (offsets from ``start_char_idx``/``end_char_idx``,
index from the ``chunk_index`` metadata or the node's position, vector from
``node.embedding``). ``add`` must see all of a document's nodes in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.llama_index.retriever import chunk_to_node, filters_from_llama
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput, Store

__all__ = ["RagVectorStore"]

_CHUNK_INDEX_KEY = "chunk_index"
_PAGE = 500


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
        for document_id in self._documents_for(ref_doc_id):
            self._store.delete_document(self._collection, document_id)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The dense leg: the ``similarity_top_k`` nearest chunks to ``query_embedding``."""
        if query.mode is not VectorStoreQueryMode.DEFAULT:
            raise InvalidInputError(
                f"Unsupported query mode: {query.mode.value}. Use: "
                f"{VectorStoreQueryMode.DEFAULT.value} (or RagRetriever for hybrid search)"
            )
        if query.doc_ids or query.node_ids:
            raise InvalidInputError("Queries by doc_ids or node_ids are not supported.")
        if query.query_embedding is None:
            raise InvalidInputError("The query has no query_embedding to search with.")
        hits = self._store.dense(
            self._collection,
            query.query_embedding,
            query.similarity_top_k,
            filters_from_llama(query.filters),
        )
        return VectorStoreQueryResult(
            nodes=[chunk_to_node(hit.chunk) for hit in hits],
            similarities=[hit.score for hit in hits],
            ids=[hit.chunk.id for hit in hits],
        )

    def _documents_for(self, ref_doc_id: str) -> list[str]:
        # The store looks documents up by id only, so a source is found by paging through.
        found: list[str] = []
        offset = 0
        while True:
            page = self._store.list_documents(self._collection, limit=_PAGE, offset=offset)
            found.extend(d.id for d in page if ref_doc_id in (d.source, d.id))
            if len(page) < _PAGE:
                return found
            offset += _PAGE


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
