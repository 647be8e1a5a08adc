"""A write's documents validated and analysed in Python, before a store changes anything:
vectors checked against the collection, metadata copied as JSON, each chunk's terms counted by
the collection's analyzer and its whitespace words listed for the fuzzy leg. The PostgreSQL
and Qdrant stores write what this prepares."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.lexical.analyzers import get_analyzer, text_words
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.vectors import validate_embedding

__all__ = ["PreparedChunk", "PreparedDocument", "chunk_words", "json_copy", "prepare_document"]


def json_copy(value: Mapping[str, Any], what: str) -> dict[str, Any]:
    """A detached, JSON-safe copy of ``value``; raise InvalidInputError if it is not JSON."""
    try:
        copied: dict[str, Any] = json.loads(json.dumps(dict(value), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be JSON-serialisable: {exc}") from None
    return copied


def chunk_words(content: str) -> list[str]:
    """The distinct words FuzzyIndex scores ``content`` by, sorted."""
    # FuzzyIndex lowercases the text and then each scoring word again; lower() twice mirrors
    # it even for the rare characters whose lowercase form lowercases further.
    return sorted({word for word in text_words(content.lower()) if len(word.encode()) >= 2})


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
    """Validate vectors, indexes and metadata and tokenise the chunks; raise before any change."""
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
