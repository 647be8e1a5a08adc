"""The store contract: what every store (memory, postgres) answers for its collections.

A store keeps collections of documents; a document is split into chunks, each with its text,
exact offsets into the document, metadata and one vector. The store answers the three search
*legs* for one collection — dense, BM25 and fuzzy — and the search engine above it
(:mod:`rag_plugin.engine`) does strategies, fusion and thresholds once for all stores.

Scoping: a collection belongs to an ``owner`` (any string, e.g. ``"user:17"``) or, with
``owner=None``, is shared. ``filters`` are metadata filters (:mod:`rag_plugin.filters`: an
expression, or ``{key: value}`` equality). Every leg applies the owner and the filters *before*
ranking, never after.
"""

from __future__ import annotations

import json
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.filters import Filters
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.correction import Correction, QueryCorrection
from rag_plugin.stores.usage import Usage, WriteLimits
from rag_plugin.vectors import DistanceMetric

__all__ = [
    "ChunkInput",
    "ChunkRecord",
    "CollectionInfo",
    "CollectionKey",
    "Correction",
    "DocumentInput",
    "DocumentRecord",
    "Filters",
    "QueryCorrection",
    "ScoredChunk",
    "Store",
    "check_distinct_sources",
    "check_leg_size",
    "check_same_model",
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
    """A stored chunk. ``id`` is ``f"{document_id}_{index}"``.

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


class Store(ABC):
    """Collections of chunked, embedded documents, and the three search legs over them.

    Everything the engine, ingest, the LlamaIndex adapters and the portal use is on this
    class; no caller needs to know which store it has.
    """

    @property
    def concurrent_legs(self) -> bool:
        """Whether the legs of one hybrid search may run at once, each in its own thread (a
        store whose legs wait on a database with a pool of connections); False by default."""
        return False

    # -- collections -------------------------------------------------------------------

    @abstractmethod
    def create_collection(
        self,
        name: str,
        *,
        dimensions: int,
        embedding_model: str,
        owner: str | None = None,
        metric: DistanceMetric = DistanceMetric.COSINE,
        analyzer: str = "seed",
    ) -> CollectionInfo:
        """Create a collection; raise ``CollectionExistsError`` if the owner has one."""

    @abstractmethod
    def get_collection(self, name: str, *, owner: str | None = None) -> CollectionInfo:
        """Return the owner's collection; raise ``CollectionNotFoundError`` if absent."""

    @abstractmethod
    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""

    @abstractmethod
    def delete_collection(self, name: str, *, owner: str | None = None) -> int:
        """Delete the collection and everything in it; return how many documents it had."""

    # -- documents ---------------------------------------------------------------------

    def upsert_document(
        self,
        collection: CollectionInfo,
        document: DocumentInput,
        chunks: Sequence[ChunkInput],
        *,
        create: bool = False,
    ) -> DocumentRecord:
        """Store a document and its chunks in one step (all or nothing).

        A non-empty ``document.source`` that already exists in the collection is replaced:
        the document keeps its id, its old chunks and their lexical postings are removed.
        Raises ``DimensionMismatchError`` for a vector of the wrong size. ``create`` is as
        in :meth:`upsert_documents`.
        """
        return self.upsert_documents(collection, [(document, chunks)], create=create)[0]

    @abstractmethod
    def upsert_documents(
        self,
        collection: CollectionInfo,
        documents: Sequence[tuple[DocumentInput, Sequence[ChunkInput]]],
        *,
        create: bool = False,
        limits: WriteLimits | None = None,
    ) -> list[DocumentRecord]:
        """Store several documents with their chunks in one step: all of them or none.

        Each is stored as :meth:`upsert_document` stores one; the records come back in input
        order. Two documents with the same non-empty ``source`` raise ``InvalidInputError``
        (see :func:`check_distinct_sources`) before anything changes.

        With ``create=True`` a collection that does not exist yet is created from
        ``collection``'s name, owner, dimensions, model, metric and analyzer in the same step,
        so a write that fails leaves no empty collection behind; one that exists must hold
        the same model and dimension (:func:`check_same_model`). Without it a missing
        collection raises ``CollectionNotFoundError``.

        ``limits`` holds the write to the collection owner's and the store's limits
        (:mod:`rag_plugin.stores.usage`): a write that would pass one raises
        ``QuotaExceededError`` and changes nothing, checked atomically with the write.
        """

    @abstractmethod
    def usage(self, *, owner: str | None = None, everyone: bool = False) -> Usage:
        """What the owner's collections hold (``owner=None``: the unowned ones), or with
        ``everyone=True`` what the whole store holds."""

    @abstractmethod
    def delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        """Delete a document with its chunks; raise ``DocumentNotFoundError`` if absent."""

    @abstractmethod
    def get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        """Return one document; raise ``DocumentNotFoundError`` if absent."""

    @abstractmethod
    def find_document(self, collection: CollectionInfo, *, source: str) -> DocumentRecord | None:
        """Return the document stored under a non-empty ``source``, or None."""

    def find_sources(
        self, name: str, *, owner: str | None = None, sources: Sequence[str]
    ) -> tuple[CollectionInfo, dict[str, tuple[DocumentRecord, list[ChunkRecord]]]]:
        """The owner's collection and, for each of ``sources`` stored in it, the document and
        its chunks in index order; raise ``CollectionNotFoundError`` if the collection is
        absent. Empty and absent sources are missing from the map.

        What ingest asks before a write ("which of these are new or unchanged?"); a store may
        answer it in one round trip (PostgreSQL does) instead of these several calls.
        """
        collection = self.get_collection(name, owner=owner)
        found: dict[str, tuple[DocumentRecord, list[ChunkRecord]]] = {}
        for source in sorted({source for source in sources if source}):
            record = self.find_document(collection, source=source)
            if record is not None:
                found[source] = (record, self.document_chunks(collection, record.id))
        return collection, found

    @abstractmethod
    def list_documents(
        self, collection: CollectionInfo, *, limit: int = 100, offset: int = 0
    ) -> list[DocumentRecord]:
        """Return documents, newest first."""

    @abstractmethod
    def document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        """Return a document's chunks in index order."""

    # -- search legs -------------------------------------------------------------------

    @abstractmethod
    def dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        filters: Filters | None = None,
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by vector similarity (``distance_to_similarity`` of the metric)."""

    @abstractmethod
    def bm25(
        self, collection: CollectionInfo, query: str, n: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by BM25 over the whole collection; only scores > 0."""

    @abstractmethod
    def fuzzy(
        self, collection: CollectionInfo, query: str, n: int, filters: Filters | None = None
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by the fuzzy word-match score; only scores > 0."""

    @abstractmethod
    def correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        """Correct each query word to the closest word of the collection's vocabulary."""
