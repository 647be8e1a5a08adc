"""The values a store takes and returns, and the checks every store applies to them.

:class:`~rag_plugin.stores.base.Store` (the contract) takes and returns these; the checks run
once, in its public methods, before any store-specific code.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.vectors import DistanceMetric

__all__ = [
    "MAX_COLLECTION_NAME_LENGTH",
    "ChunkInput",
    "ChunkRecord",
    "CollectionInfo",
    "CollectionKey",
    "DocumentInput",
    "DocumentRecord",
    "ScoredChunk",
    "check_distinct_sources",
    "check_leg_size",
    "check_same_model",
    "chunk_id",
    "new_document_id",
    "settled_collection",
    "validate_collection_name",
]


_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_COLLECTION_NAME_LENGTH = 63


def check_distinct_sources(documents: Sequence[tuple[DocumentInput, object]]) -> None:
    """Raise ``InvalidInputError`` if two documents of one write share a non-empty source:
    which of them would the collection keep?"""
    seen: dict[str, int] = {}
    for position, (document, _) in enumerate(documents):
        if not document.source:
            continue
        if document.source in seen:
            raise InvalidInputError(
                f"documents {seen[document.source]} and {position} have the same source "
                f"{document.source!r}; a collection holds one document per source."
            )
        seen[document.source] = position


def check_leg_size(n: int) -> None:
    """Raise ``InvalidInputError`` unless a leg's ``n`` is zero or a positive integer."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidInputError(f"n must be zero or a positive integer, got {n!r}.")


def validate_collection_name(name: str) -> str:
    """Return ``name`` if it is a valid collection name, else raise :class:`InvalidInputError`.

    Names are ASCII identifiers (``^[A-Za-z_][A-Za-z0-9_]*$``, at most 63 characters) so that
    they are safe anywhere, including as part of an SQL identifier.
    """
    if not isinstance(name, str) or not name:
        raise InvalidInputError("collection name must not be empty")
    if len(name) > MAX_COLLECTION_NAME_LENGTH:
        raise InvalidInputError(
            f"collection name is {len(name)} characters long; "
            f"the limit is {MAX_COLLECTION_NAME_LENGTH}"
        )
    if not (name[0].isascii() and (name[0].isalpha() or name[0] == "_")):
        raise InvalidInputError("collection name must start with a letter or underscore")
    if _COLLECTION_NAME.fullmatch(name) is None:
        raise InvalidInputError("collection name contains invalid characters")
    return name


@dataclass(frozen=True, slots=True)
class CollectionKey:
    """Which collection: its name and its owner (``None``: shared). What a lookup needs."""

    name: str
    owner: str | None


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    """A collection as the store knows it, with its counts at the time it was read.

    Also what :meth:`Store.upsert_documents` creates with ``create=True``: a collection of
    these settings that need not exist yet.
    """

    name: str
    owner: str | None
    dimensions: int
    embedding_model: str
    metric: DistanceMetric = DistanceMetric.COSINE
    analyzer: str = "seed"
    document_count: int = 0
    chunk_count: int = 0

    @property
    def key(self) -> CollectionKey:
        """The collection's name and owner."""
        return CollectionKey(self.name, self.owner)


def settled_collection(collection: CollectionInfo) -> CollectionInfo:
    """``collection``'s settings checked for a new collection, its metric parsed and its
    counts zeroed: a bad name, dimension, model or analyzer raises ``InvalidInputError``
    before any store changes anything."""
    validate_collection_name(collection.name)
    dimensions = collection.dimensions
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise InvalidInputError(f"dimensions must be a positive integer, got {dimensions!r}.")
    if not collection.embedding_model:
        raise InvalidInputError("embedding_model must name the model the vectors come from.")
    get_analyzer(collection.analyzer)
    metric = collection.metric
    return replace(
        collection,
        metric=DistanceMetric.parse(metric) if isinstance(metric, str) else metric,
        document_count=0,
        chunk_count=0,
    )


def check_same_model(stored: CollectionInfo, wanted: CollectionInfo) -> None:
    """Raise :class:`ConfigurationError` unless ``stored`` holds vectors of ``wanted``'s
    model and dimension (E6: never mix models in one collection)."""
    if (stored.embedding_model, stored.dimensions) != (wanted.embedding_model, wanted.dimensions):
        raise ConfigurationError(
            f"Collection '{stored.name}' holds {stored.dimensions}-d vectors of the model "
            f"'{stored.embedding_model}', but the write brings {wanted.dimensions}-d vectors "
            f"of '{wanted.embedding_model}'; use the collection's model."
        )


_DOCUMENT_IDS = uuid.UUID("5b0c2f1e-8d4a-4c1b-9a77-3f2e6d1c0b95")
"""The namespace of the name-based ids :func:`new_document_id` gives documents with a source."""


def new_document_id(collection: CollectionKey, source: str) -> str:
    """The id a new document of ``collection`` gets: a UUID named by the collection's owner and
    name and the document's ``source``, or a random one when ``source`` is empty.

    So a fresh ingest of the same sources gives the same ids, in every store, and whatever is
    ordered by id (ties inside a leg, after the scores that carry signal) comes out the same
    way on every run; with random ids the fuzzy leg's large ties made each ingest score
    differently. A replaced document keeps the id it has, which is this one.
    """
    if not source:
        return uuid.uuid4().hex
    name = json.dumps([collection.owner, collection.name, source])
    return uuid.uuid5(_DOCUMENT_IDS, name).hex


@dataclass(frozen=True, slots=True)
class DocumentInput:
    """A document to store: where it came from and what describes it.

    ``source`` identifies the document within its collection: storing a document whose
    non-empty ``source`` already exists replaces the old one (same document id, new chunks).
    """

    source: str = ""
    title: str = ""
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    content_hash: str = ""


@dataclass(frozen=True, slots=True)
class ChunkInput:
    """One chunk of a document, ready to store: text, exact offsets, vector."""

    index: int
    content: str
    start_offset: int
    end_offset: int
    embedding: Sequence[float]
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """A stored document."""

    id: str
    collection: str
    source: str
    title: str
    tags: tuple[str, ...]
    content_hash: str
    created_at: datetime
    chunk_count: int
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A stored chunk. ``id`` is :func:`chunk_id` of its document and index.

    ``metadata`` holds the document's ``title``, ``source``, ``created_at`` (RFC 3339) and
    ``tags`` merged with the chunk's own metadata.
    """

    id: str
    document_id: str
    index: int
    content: str
    start_offset: int
    end_offset: int
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A chunk and the score one leg gave it (higher is better)."""

    chunk: ChunkRecord
    score: float


def chunk_id(document_id: str, index: int) -> str:
    """A stored chunk's id: its document's id and its index (``f"{document_id}_{index}"``),
    the same in every store (the PostgreSQL store builds it in SQL the same way)."""
    return f"{document_id}_{index}"
