"""The store contract: what every store (memory, PostgreSQL, Qdrant) answers for its
collections.

A store keeps collections of documents; a document is split into chunks, each with its text,
exact offsets into the document, metadata and one vector. The store answers the three search
*legs* for one collection — dense, BM25 and fuzzy — and the search engine above it
(:mod:`rag_plugin.engine`) does strategies, fusion and thresholds once for all stores.

Scoping: a collection belongs to an ``owner`` (any string, e.g. ``"user:17"``) or, with
``owner=None``, is shared. ``filters`` are metadata filters (:mod:`rag_plugin.filters`: an
expression, or ``{key: value}`` equality). Every leg applies the owner and the filters *before*
ranking, never after.

:class:`Store` is a template method (as llama-index-core's ``BaseRetriever.retrieve`` calls
``_retrieve``): its public methods check what they are given once — collection names, leg
sizes, filters, a write's settings and sources, pagination — and call the hooks a store
implements (``_dense``, ``_upsert_documents``, ...), which may assume those checks passed.
A search's legs get one :class:`~rag_plugin.stores.context.SearchContext`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.filters import Filters
from rag_plugin.lexical.correction import Correction, QueryCorrection
from rag_plugin.stores.context import SearchContext
from rag_plugin.stores.records import (
    MAX_COLLECTION_NAME_LENGTH,
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    CollectionKey,
    DocumentInput,
    DocumentRecord,
    ScoredChunk,
    check_distinct_sources,
    check_leg_size,
    check_same_model,
    chunk_id,
    new_document_id,
    settled_collection,
    validate_collection_name,
)
from rag_plugin.stores.usage import Usage, WriteLimits
from rag_plugin.vectors import DistanceMetric

if TYPE_CHECKING:
    from rag_plugin.embedding.cache import EmbeddingCache

__all__ = [
    "MAX_COLLECTION_NAME_LENGTH",
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
    "SearchContext",
    "Store",
    "check_distinct_sources",
    "check_leg_size",
    "check_same_model",
    "chunk_id",
    "new_document_id",
    "settled_collection",
    "validate_collection_name",
]


class Store(ABC):
    """Collections of chunked, embedded documents, and the three search legs over them.

    Everything the engine, ingest, the LlamaIndex adapters and the portal use is on this
    class; no caller needs to know which store it has. A store implements the hooks (the
    abstract ``_``-methods); the public methods check their arguments first (module
    docstring).
    """

    @property
    def concurrent_legs(self) -> bool:
        """Whether the legs of one hybrid search may run at once, each in its own thread (a
        store whose legs wait on a database with a pool of connections); False by default."""
        return False

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:  # noqa: B027 (a store holding nothing has nothing to close)
        """Release what the store holds (connections, clients); nothing by default."""

    def for_namespace(self, namespace: str) -> Store:
        """A store of this kind, on this one's connections and settings, for another
        namespace (the portal's tenant: a PostgreSQL schema, a Qdrant namespace), ready to
        use. The connections stay this store's: close this one, not the other."""
        raise ConfigurationError(
            f"{type(self).__name__} keeps one set of collections and has no namespaces; "
            "use a PostgresStore or a QdrantStore for one store per tenant."
        )

    def drop_namespace(self, namespace: str) -> int:
        """Delete everything this store keeps for ``namespace`` (every collection, whoever
        owns it, and its embedding cache); return how many collections it had, 0 for a
        namespace that holds nothing or no longer exists."""
        raise ConfigurationError(
            f"{type(self).__name__} keeps one set of collections and has no namespaces to drop."
        )

    def embedding_cache(self) -> EmbeddingCache | None:
        """A persistent embedding cache (SPEC E7) beside the store's data, for an embedder's
        ``cache=``, so everything the engine keeps is in one place; None by default."""
        return None

    # -- collections -------------------------------------------------------------------

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
        wanted = CollectionInfo(name, owner, dimensions, embedding_model, metric, analyzer)
        return self._create_collection(settled_collection(wanted))

    def get_collection(self, name: str, *, owner: str | None = None) -> CollectionInfo:
        """Return the owner's collection; raise ``CollectionNotFoundError`` if absent."""
        return self._get_collection(CollectionKey(validate_collection_name(name), owner))

    @abstractmethod
    def list_collections(self, *, owner: str | None = None) -> list[CollectionInfo]:
        """Return the owner's collections (``owner=None``: the shared ones), sorted by name."""

    def delete_collection(self, name: str, *, owner: str | None = None) -> int:
        """Delete the collection and everything in it; return how many documents it had."""
        return self._delete_collection(CollectionKey(validate_collection_name(name), owner))

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
        validate_collection_name(collection.name)
        if create:
            collection = settled_collection(collection)
        check_distinct_sources(documents)
        return self._upsert_documents(collection, documents, create=create, limits=limits)

    @abstractmethod
    def usage(self, *, owner: str | None = None, everyone: bool = False) -> Usage:
        """What the owner's collections hold (``owner=None``: the unowned ones), or with
        ``everyone=True`` what the whole store holds."""

    def delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        """Delete a document with its chunks; raise ``DocumentNotFoundError`` if absent."""
        self._delete_document(_checked(collection), document_id)

    def get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        """Return one document; raise ``DocumentNotFoundError`` if absent."""
        return self._get_document(_checked(collection), document_id)

    def find_document(self, collection: CollectionInfo, *, source: str) -> DocumentRecord | None:
        """Return the document stored under a non-empty ``source``, or None."""
        _checked(collection)
        return self._find_document(collection, source) if source else None

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

    def list_documents(
        self, collection: CollectionInfo, *, limit: int = 100, offset: int = 0
    ) -> list[DocumentRecord]:
        """Return documents, newest first."""
        _checked(collection)
        if limit < 0 or offset < 0:
            raise InvalidInputError(
                f"limit and offset must not be negative, got limit={limit}, offset={offset}."
            )
        return self._list_documents(collection, limit, offset)

    def document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        """Return a document's chunks in index order."""
        return self._document_chunks(_checked(collection), document_id)

    # -- search legs -------------------------------------------------------------------

    def dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        filters: Filters | SearchContext | None = None,
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by vector similarity (``distance_to_similarity`` of the metric);
        ties go to the smaller chunk id. ``filters`` may be the search's shared context."""
        context = _leg(collection, n, filters)
        return self._dense(collection, vector, n, context)

    def bm25(
        self,
        collection: CollectionInfo,
        query: str,
        n: int,
        filters: Filters | SearchContext | None = None,
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by BM25 over the whole collection; only scores > 0."""
        context = _leg(collection, n, filters)
        return self._bm25(collection, query, n, context)

    def fuzzy(
        self,
        collection: CollectionInfo,
        query: str,
        n: int,
        filters: Filters | SearchContext | None = None,
    ) -> list[ScoredChunk]:
        """Top ``n`` chunks by the fuzzy word-match score; only scores > 0."""
        context = _leg(collection, n, filters)
        return self._fuzzy(collection, query, n, context)

    def correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        """Correct each query word to the closest word of the collection's vocabulary."""
        return self._correct_query(_checked(collection), query)

    # -- hooks: what each store implements, its arguments checked ---------------------

    @abstractmethod
    def _create_collection(self, collection: CollectionInfo) -> CollectionInfo:
        """Create ``collection`` (settled: :func:`settled_collection`)."""

    @abstractmethod
    def _get_collection(self, key: CollectionKey) -> CollectionInfo:
        """The collection with its counts, or ``CollectionNotFoundError``."""

    @abstractmethod
    def _delete_collection(self, key: CollectionKey) -> int:
        """Delete the collection; its number of documents, or ``CollectionNotFoundError``."""

    @abstractmethod
    def _upsert_documents(
        self,
        collection: CollectionInfo,
        documents: Sequence[tuple[DocumentInput, Sequence[ChunkInput]]],
        *,
        create: bool,
        limits: WriteLimits | None,
    ) -> list[DocumentRecord]:
        """The write (name and sources checked; with ``create`` the collection settled)."""

    @abstractmethod
    def _delete_document(self, collection: CollectionInfo, document_id: str) -> None:
        """Delete the document, or ``DocumentNotFoundError``."""

    @abstractmethod
    def _get_document(self, collection: CollectionInfo, document_id: str) -> DocumentRecord:
        """The document, or ``DocumentNotFoundError``."""

    @abstractmethod
    def _find_document(self, collection: CollectionInfo, source: str) -> DocumentRecord | None:
        """The document of a non-empty ``source``, or None."""

    @abstractmethod
    def _list_documents(
        self, collection: CollectionInfo, limit: int, offset: int
    ) -> list[DocumentRecord]:
        """A page of documents, newest first (``limit`` and ``offset`` not negative)."""

    @abstractmethod
    def _document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        """The document's chunks in index order, or ``DocumentNotFoundError``."""

    @abstractmethod
    def _dense(
        self,
        collection: CollectionInfo,
        vector: Sequence[float],
        n: int,
        context: SearchContext,
    ) -> list[ScoredChunk]:
        """The dense leg (``n`` checked; the vector is checked against the stored dimension
        by the store, which knows it)."""

    @abstractmethod
    def _bm25(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        """The BM25 leg; the query's terms are ``context.tokens(analyzer, query)``."""

    @abstractmethod
    def _fuzzy(
        self, collection: CollectionInfo, query: str, n: int, context: SearchContext
    ) -> list[ScoredChunk]:
        """The fuzzy leg; the query's words are ``context.fuzzy_words(analyzer, query)``."""

    @abstractmethod
    def _correct_query(self, collection: CollectionInfo, query: str) -> QueryCorrection:
        """The query's correction against the collection's vocabulary."""


def _checked(collection: CollectionInfo) -> CollectionInfo:
    """``collection``, its name valid (``InvalidInputError`` otherwise)."""
    validate_collection_name(collection.name)
    return collection


def _leg(
    collection: CollectionInfo, n: int, filters: Filters | SearchContext | None
) -> SearchContext:
    """What every leg checks first: the collection's name, ``n``, and the filters, as the
    search's context."""
    validate_collection_name(collection.name)
    check_leg_size(n)
    return SearchContext.of(filters)
