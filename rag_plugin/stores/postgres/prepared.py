"""A write's documents validated and analysed in Python, before any SQL runs (``writes.py``
writes them): vectors checked against the collection, metadata copied as JSON, each chunk's
terms counted by the collection's analyzer and its whitespace words listed for the fuzzy leg."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.postgres.rows import json_copy
from rag_plugin.stores.postgres.words import chunk_words
from rag_plugin.vectors import validate_embedding

__all__ = ["PreparedChunk", "PreparedDocument", "prepare_document"]


@dataclass(frozen=True, slots=True)
class PreparedChunk:
    """A chunk with its metadata copied and its text analysed (terms and whitespace words)."""

    chunk: ChunkInput
    metadata: dict[str, Any]
    term_frequencies: Counter[str]
    length: int
    words: list[str]


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A document validated and analysed in Python, before any SQL runs."""

    document: DocumentInput
    tags: list[str]
    metadata: dict[str, Any]
    chunks: list[PreparedChunk]


def prepare_document(
    collection: CollectionInfo, document: DocumentInput, chunks: Sequence[ChunkInput]
) -> PreparedDocument:
    """Validate vectors, indexes and metadata and tokenise the chunks; raise before any SQL."""
    indexes = [chunk.index for chunk in chunks]
    if len(set(indexes)) != len(indexes):
        raise InvalidInputError(f"chunk indexes must be unique, got {sorted(indexes)}")
    analyzer = get_analyzer(collection.analyzer)
    prepared: list[PreparedChunk] = []
    for chunk in chunks:
        validate_embedding(chunk.embedding, collection.dimensions)
        tokens = analyzer.tokens(chunk.content)
        prepared.append(
            PreparedChunk(
                chunk=chunk,
                metadata=json_copy(chunk.metadata, "chunk metadata"),
                term_frequencies=Counter(tokens),
                length=len(tokens),
                words=chunk_words(chunk.content),
            )
        )
    return PreparedDocument(
        document=document,
        tags=[str(tag) for tag in document.tags],
        metadata=json_copy(document.metadata, "document metadata"),
        chunks=prepared,
    )
