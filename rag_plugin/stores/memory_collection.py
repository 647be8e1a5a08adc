"""One collection held in memory: its documents, a dense matrix and its own lexical indexes.

The building block of :class:`~rag_plugin.stores.memory.MemoryStore`, which adds owners,
locking, validation and the file. Every leg applies the metadata filters before ranking: the
dense leg masks the matrix rows, the lexical legs pass the allowed chunk ids to their index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from rag_plugin.filters import matches
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.fuzzy import FuzzyIndex
from rag_plugin.stores.base import (
    ChunkRecord,
    CollectionInfo,
    DocumentRecord,
    QueryCorrection,
    ScoredChunk,
    SearchContext,
    chunk_id,
    validate_collection_name,
)
from rag_plugin.stores.usage import Usage
from rag_plugin.vectors import DistanceMetric, validate_embedding

__all__ = ["MemoryCollection", "Vector", "to_vector"]

Vector = npt.NDArray[np.float64]


def to_vector(values: Sequence[float], dimensions: int) -> Vector:
    """Validate ``values`` (non-empty, finite, ``dimensions`` long) and return them as floats."""
    validate_embedding(values, dimensions)
    return np.asarray(values, dtype=np.float64)


@dataclass(slots=True)
class _Document:
    record: DocumentRecord
    chunk_ids: list[str]
    sequence: int  # insertion order, so "newest first" is exact even within one clock tick


@dataclass(slots=True)
class MemoryCollection:
    """A collection's documents, chunks, vectors and BM25/fuzzy indexes."""

    info: CollectionInfo
    _bm25: Bm25Index
    _fuzzy: FuzzyIndex
    _documents: dict[str, _Document] = field(default_factory=dict)
    _by_source: dict[str, str] = field(default_factory=dict)
    _chunks: dict[str, ChunkRecord] = field(default_factory=dict)
    _vectors: dict[str, Vector] = field(default_factory=dict)
    # Rebuilt lazily after a change; rows are in chunk-id order so that a stable sort by
    # score breaks ties by id.
    _matrix: Vector | None = None
    _matrix_ids: list[str] = field(default_factory=list)

    @classmethod
    def empty(cls, info: CollectionInfo) -> MemoryCollection:
        """A collection without documents; an unknown analyzer name raises here."""
        analyzer = get_analyzer(info.analyzer)
        return cls(info, Bm25Index(analyzer=analyzer), FuzzyIndex(analyzer=analyzer))

    def counted(self) -> CollectionInfo:
        """The collection's info with its current counts."""
        return replace(
            self.info, document_count=len(self._documents), chunk_count=len(self._chunks)
        )

    def usage(self) -> Usage:
        """Documents, chunks and bytes of chunk text it holds."""
        return Usage(
            len(self._documents),
            len(self._chunks),
            sum(len(chunk.content.encode()) for chunk in self._chunks.values()),
        )

    def document_usage(self, document_id: str | None) -> Usage:
        """What one stored document holds (nothing for None or an absent one)."""
        found = self._documents.get(document_id) if document_id is not None else None
        if found is None:
            return Usage()
        texts = [self._chunks[i].content for i in found.chunk_ids]
        return Usage(1, len(texts), sum(len(text.encode()) for text in texts))

    # -- documents ---------------------------------------------------------------------

    def document_for_source(self, source: str) -> str | None:
        """The id of the document stored under a non-empty ``source``, if any."""
        return self._by_source.get(source) if source else None

    def add_document(
        self, record: DocumentRecord, chunks: Sequence[tuple[ChunkRecord, Vector]], sequence: int
    ) -> None:
        """Add a document whose id is not stored yet, with its chunks and their vectors."""
        for chunk, vector in chunks:
            self._chunks[chunk.id] = chunk
            self._vectors[chunk.id] = vector
            self._bm25.add_document(chunk.id, chunk.content)
            self._fuzzy.add_document(chunk.id, chunk.content)
        ordered = sorted((chunk for chunk, _ in chunks), key=lambda chunk: chunk.index)
        self._documents[record.id] = _Document(record, [c.id for c in ordered], sequence)
        if record.source:
            self._by_source[record.source] = record.id
        self._matrix = None

    def remove_document(self, document_id: str) -> bool:
        """Remove a document with its chunks from every leg; ``False`` if it was not there."""
        document = self._documents.pop(document_id, None)
        if document is None:
            return False
        if self._by_source.get(document.record.source) == document_id:
            del self._by_source[document.record.source]
        for stored in document.chunk_ids:
            del self._chunks[stored]
            del self._vectors[stored]
            self._bm25.remove_document(stored)
            self._fuzzy.remove_document(stored)
        self._matrix = None
        return True

    def document(self, document_id: str) -> DocumentRecord | None:
        """The stored document, or ``None``."""
        found = self._documents.get(document_id)
        return found.record if found is not None else None

    def documents_newest_first(self) -> list[DocumentRecord]:
        """Every document, the most recently stored first."""
        ordered = sorted(self._documents.values(), key=lambda d: -d.sequence)
        return [d.record for d in ordered]

    def chunks_of(self, document_id: str) -> list[ChunkRecord] | None:
        """A document's chunks in index order, or ``None`` if there is no such document."""
        found = self._documents.get(document_id)
        return None if found is None else [self._chunks[i] for i in found.chunk_ids]

    # -- legs --------------------------------------------------------------------------

    def dense(self, query: Vector, n: int, context: SearchContext) -> list[ScoredChunk]:
        """Top ``n`` chunks by the metric's similarity to ``query``, exactly."""
        if self._matrix is None:
            self._matrix_ids = sorted(self._vectors)
            rows = [self._vectors[i] for i in self._matrix_ids]
            self._matrix = np.vstack(rows) if rows else np.zeros((0, self.info.dimensions))
        ids = self._matrix_ids
        if n == 0 or not ids:
            return []
        scores = _similarities(self._matrix, query, self.info.metric)
        allowed = self._allowed_ids(context)
        if allowed is not None:
            mask = np.fromiter((i in allowed for i in ids), dtype=bool, count=len(ids))
            scores = np.where(mask, scores, -np.inf)
        order = np.argsort(-scores, kind="stable")[:n]
        return [
            ScoredChunk(self._chunks[ids[row]], float(scores[row]))
            for row in order
            if scores[row] != -np.inf
        ]

    def bm25(self, query: str, n: int, context: SearchContext) -> list[ScoredChunk]:
        """Top ``n`` chunks by BM25 over the whole collection."""
        if n == 0:
            return []
        tokens = context.tokens(self.info.analyzer, query)
        hits = self._bm25.search_tokens(tokens, n, allowed_ids=self._allowed_ids(context))
        return [ScoredChunk(self._chunks[found], score) for found, score in hits]

    def fuzzy(self, query: str, n: int, context: SearchContext) -> list[ScoredChunk]:
        """Top ``n`` chunks by the fuzzy word-match score."""
        if n == 0:
            return []
        words = context.fuzzy_words(self.info.analyzer, query)
        hits = self._fuzzy.search_words(words, n, allowed_ids=self._allowed_ids(context))
        return [ScoredChunk(self._chunks[found], score) for found, score in hits]

    def correct_query(self, query: str) -> QueryCorrection:
        """Correct each query word against this collection's vocabulary."""
        correction: QueryCorrection = self._fuzzy.correct_query(query)
        return correction

    def _allowed_ids(self, context: SearchContext) -> set[str] | None:
        """The ids of the chunks matching the search's filter (None for no filter), once a
        search: its legs share the context."""
        expression = context.expression
        if expression is None:
            return None

        def matching() -> set[str]:
            return {
                chunk.id for chunk in self._chunks.values() if matches(expression, chunk.metadata)
            }

        return context.once(("allowed_ids", id(self)), matching)

    # -- JSON --------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Everything needed to rebuild this collection, as JSON-ready values."""
        info = self.info
        documents = sorted(self._documents.values(), key=lambda d: d.sequence)
        return {
            "name": info.name,
            "owner": info.owner,
            "dimensions": info.dimensions,
            "embedding_model": info.embedding_model,
            "metric": info.metric.value,
            "analyzer": info.analyzer,
            "documents": [
                {
                    "id": d.record.id,
                    "source": d.record.source,
                    "title": d.record.title,
                    "tags": list(d.record.tags),
                    "content_hash": d.record.content_hash,
                    "created_at": d.record.created_at.isoformat(),
                    "metadata": d.record.metadata,
                    "chunks": [
                        {
                            "index": chunk.index,
                            "content": chunk.content,
                            "start_offset": chunk.start_offset,
                            "end_offset": chunk.end_offset,
                            "metadata": chunk.metadata,
                            "embedding": self._vectors[chunk.id].tolist(),
                        }
                        for chunk in (self._chunks[i] for i in d.chunk_ids)
                    ],
                }
                for d in documents
            ],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], sequence: int) -> tuple[MemoryCollection, int]:
        """Rebuild a collection from :meth:`to_json`; return it and the last sequence used."""
        info = CollectionInfo(
            name=validate_collection_name(raw["name"]),
            owner=None if raw["owner"] is None else str(raw["owner"]),
            dimensions=int(raw["dimensions"]),
            embedding_model=str(raw["embedding_model"]),
            metric=DistanceMetric.parse(raw["metric"]),
            analyzer=str(raw["analyzer"]),
        )
        collection = cls.empty(info)
        for doc in raw["documents"]:
            document_id = str(doc["id"])
            chunks = [
                (
                    ChunkRecord(
                        id=chunk_id(document_id, int(chunk["index"])),
                        document_id=document_id,
                        index=int(chunk["index"]),
                        content=str(chunk["content"]),
                        start_offset=int(chunk["start_offset"]),
                        end_offset=int(chunk["end_offset"]),
                        metadata=dict(chunk["metadata"]),
                    ),
                    to_vector(chunk["embedding"], info.dimensions),
                )
                for chunk in doc["chunks"]
            ]
            record = DocumentRecord(
                id=document_id,
                collection=info.name,
                source=str(doc["source"]),
                title=str(doc["title"]),
                tags=tuple(str(tag) for tag in doc["tags"]),
                content_hash=str(doc["content_hash"]),
                created_at=datetime.fromisoformat(doc["created_at"]),
                chunk_count=len(chunks),
                metadata=dict(doc["metadata"]),
            )
            sequence += 1
            collection.add_document(record, chunks, sequence)
        return collection, sequence


def _similarities(matrix: Vector, query: Vector, metric: DistanceMetric) -> Vector:
    """``distance_to_similarity`` of every row's distance to ``query``, vectorised."""
    dots: Vector = matrix @ query
    if metric is DistanceMetric.INNER_PRODUCT:
        return dots
    if metric is DistanceMetric.L2:
        similarity: Vector = 1.0 / (1.0 + np.linalg.norm(matrix - query, axis=1))
        return similarity
    # Cosine as ``cosine_similarity`` computes it: a zero magnitude gives 0, then clamped.
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(query))
    safe = np.where(norms == 0.0, 1.0, norms)
    cosine: Vector = np.where(norms == 0.0, 0.0, np.clip(dots / safe, -1.0, 1.0))
    return cosine
