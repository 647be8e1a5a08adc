"""Ingest text into a store: chunk it, embed the chunks in one call, store the document."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from rag_plugin.chunking import TextChunker
from rag_plugin.embedding.base import Embedder
from rag_plugin.embedding.dedup import content_hash_hex
from rag_plugin.engine import check_embedder
from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    InvalidInputError,
)
from rag_plugin.stores.base import (
    ChunkInput,
    ChunkRecord,
    CollectionInfo,
    DocumentInput,
    DocumentRecord,
    Store,
)
from rag_plugin.vectors import DistanceMetric

__all__ = [
    "DEFAULT_COLLECTION_ANALYZER",
    "IngestResult",
    "StoredSource",
    "get_or_create_collection",
    "ingest_text",
]

DEFAULT_COLLECTION_ANALYZER = "english"
"""The analyzer of a collection created without one (SPEC L6), chosen by ``bench/quality.py``.

Stopwords and Snowball stems beat the seed tokenizer for BM25 on both tuning sets (SciFact
train, Vaswani); see bench/RESULTS.md for the figures. The seed tokenizer stays available as
``analyzer="seed"``.
"""


@dataclass(frozen=True, slots=True)
class IngestResult:
    """The stored document and its chunks, in index order."""

    document: DocumentRecord
    chunks: tuple[ChunkRecord, ...]
    unchanged: bool = False
    """True when the same source was already stored with this text and description, so
    nothing was chunked, embedded or written."""

    @property
    def chunk_ids(self) -> list[str]:
        """The ids of the stored chunks, ``f"{document.id}_{index}"``."""
        return [chunk.id for chunk in self.chunks]


@dataclass(frozen=True, slots=True)
class StoredSource:
    """What a collection holds under one source, as the caller has just read it: the
    document (None when there is none) and its chunks in index order."""

    document: DocumentRecord | None
    chunks: tuple[ChunkRecord, ...] = ()


def ingest_text(
    store: Store,
    embedder: Embedder,
    collection: CollectionInfo,
    text: str,
    *,
    document: DocumentInput | None = None,
    chunker: TextChunker | None = None,
    stored: StoredSource | None = None,
) -> IngestResult:
    """Chunk ``text``, embed every chunk in one call and store it as one document.

    One ``embed()`` call means the embedder's dedup and cache cover the whole document. The
    document's ``content_hash`` is set to :func:`content_hash_hex` of ``text`` and its metadata
    records the chunking (``"chunking"``). A non-empty ``document.source`` that already exists
    is replaced (see :meth:`Store.upsert_document`) — unless it holds the same text, title,
    tags, metadata and chunking: then nothing is redone and the stored document is returned
    with ``unchanged=True`` (re-running an ingest over unchanged files costs one lookup).

    ``stored`` is what the collection holds under ``document.source`` when the caller has
    already read it (a store may read it together with the collection, in one round trip);
    without it the lookup is made here. The chunks of a new or replaced document are built
    from what was written, not read back.
    """
    check_embedder(embedder, collection)
    if not isinstance(text, str):
        raise InvalidInputError(f"The content is a {type(text).__name__}, not a str.")
    chunker = chunker or TextChunker()
    described = dataclasses.replace(
        document or DocumentInput(),
        content_hash=content_hash_hex(text),
        metadata={**(document.metadata if document else {}), "chunking": _signature(chunker)},
    )
    if described.source:
        if stored is None:
            found = store.find_document(collection, source=described.source)
            if found is not None and _same(found, described):
                chunks = tuple(store.document_chunks(collection, found.id))
                return IngestResult(found, chunks, unchanged=True)
        elif stored.document is not None:
            if stored.document.source != described.source:
                raise InvalidInputError(
                    f"The stored document given is under source {stored.document.source!r}, "
                    f"not {described.source!r}; pass what is stored under the document's source."
                )
            if _same(stored.document, described):
                return IngestResult(stored.document, stored.chunks, unchanged=True)
    pieces = chunker.chunk(text)
    if not pieces:
        raise InvalidInputError("Content too small to chunk")
    vectors = embedder.embed([piece.content for piece in pieces])
    inputs = [
        ChunkInput(
            index=piece.index,
            content=piece.content,
            start_offset=piece.start_offset,
            end_offset=piece.end_offset,
            embedding=vector,
        )
        for piece, vector in zip(pieces, vectors, strict=True)
    ]
    record = store.upsert_document(collection, described, inputs)
    return IngestResult(record, _stored_chunks(record, inputs))


def _stored_chunks(record: DocumentRecord, chunks: Sequence[ChunkInput]) -> tuple[ChunkRecord, ...]:
    """The chunks as the store now holds them, built as :class:`ChunkRecord` specifies rather
    than read back: the document's metadata, the chunk's own, then the store's keys."""
    fields = {
        "title": record.title,
        "source": record.source,
        "created_at": record.created_at.isoformat(),
        "tags": list(record.tags),
    }
    return tuple(
        ChunkRecord(
            id=f"{record.id}_{chunk.index}",
            document_id=record.id,
            index=chunk.index,
            content=chunk.content,
            start_offset=chunk.start_offset,
            end_offset=chunk.end_offset,
            metadata={**record.metadata, **chunk.metadata, **fields},
        )
        for chunk in sorted(chunks, key=lambda chunk: chunk.index)
    )


def _signature(chunker: TextChunker) -> str:
    """How the text was cut, e.g. ``word:200:50:20``: a change of chunking re-ingests."""
    config = chunker.config
    return f"{config.strategy}:{config.chunk_size}:{config.chunk_overlap}:{config.min_chunk_size}"


def _same(stored: DocumentRecord, wanted: DocumentInput) -> bool:
    return (
        stored.content_hash == wanted.content_hash
        and stored.title == wanted.title
        and tuple(stored.tags) == tuple(wanted.tags)
        and dict(stored.metadata) == dict(wanted.metadata)
    )


def get_or_create_collection(
    store: Store,
    name: str,
    *,
    embedder: Embedder,
    owner: str | None = None,
    metric: DistanceMetric = DistanceMetric.COSINE,
    analyzer: str = DEFAULT_COLLECTION_ANALYZER,
) -> CollectionInfo:
    """Return the owner's collection ``name``, creating it for ``embedder``'s model if absent.

    ``metric`` and ``analyzer`` apply only to a new collection; an existing one keeps its own.
    An existing collection built with another model or dimension raises
    :class:`ConfigurationError` (E6: never mix models in one collection).
    """
    try:
        collection = store.get_collection(name, owner=owner)
    except CollectionNotFoundError:
        try:
            return store.create_collection(
                name,
                dimensions=embedder.dimensions,
                embedding_model=embedder.model_name,
                owner=owner,
                metric=metric,
                analyzer=analyzer,
            )
        except CollectionExistsError:
            # Another caller created it between our two calls; use theirs.
            collection = store.get_collection(name, owner=owner)
    check_embedder(embedder, collection)
    return collection
