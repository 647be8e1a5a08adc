"""Ingest text into a store: chunk it, embed the chunks in one call, store the document."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_plugin.chunking import Chunk, TextChunker
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
    check_distinct_sources,
)
from rag_plugin.stores.consistency import reads_on_primary
from rag_plugin.stores.usage import WriteLimits
from rag_plugin.vectors import DistanceMetric

__all__ = [
    "CHUNKING_METADATA_KEY",
    "DEFAULT_COLLECTION_ANALYZER",
    "ChunkMetadata",
    "IngestProgress",
    "IngestResult",
    "StoredSource",
    "content_too_small",
    "get_or_create_collection",
    "ingest_text",
    "ingest_texts",
    "planned_collection",
]

CHUNKING_METADATA_KEY = "chunking"
"""The document metadata key that records how it was chunked (the chunker's signature)."""

DEFAULT_COLLECTION_ANALYZER = "english"
"""The analyzer of a collection created without one (SPEC L6), chosen by ``bench/quality.py``.

Stopwords and Snowball stems beat the seed tokenizer for BM25 on both tuning sets (SciFact
train, Vaswani); see bench/RESULTS.md for the figures. The seed tokenizer stays available as
``analyzer="seed"``.
"""


IngestProgress = Callable[[str, int, int], None]
"""Told ``(stage, done, total)`` as :func:`ingest_texts` goes: ``"embedding"`` with the distinct
chunk texts that have their vector (from the cache or the model, after each batch), then
``"writing"`` once before the store write. An exception it raises stops the ingest there,
before anything is written."""


ChunkMetadata = Callable[[Chunk], Mapping[str, Any]]
"""Given a chunk of a document's text, the metadata that chunk alone carries (a file's page
numbers for the chunk's span, say: :meth:`rag_plugin.files.ExtractedDocument.chunk_metadata`).
It is stored on the chunk beside the document's metadata and wins over it."""


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
    wanted = document or DocumentInput()
    known = None
    if stored is not None:
        if stored.document is not None and stored.document.source != wanted.source:
            raise InvalidInputError(
                f"The stored document given is under source {stored.document.source!r}, "
                f"not {wanted.source!r}; pass what is stored under the document's source."
            )
        known = {wanted.source: stored} if wanted.source else {}
    return ingest_texts(
        store, embedder, collection, [(text, document)], chunker=chunker, stored=known
    )[0]


def ingest_texts(
    store: Store,
    embedder: Embedder,
    collection: CollectionInfo,
    documents: Sequence[tuple[str, DocumentInput | None]],
    *,
    chunker: TextChunker | None = None,
    stored: Mapping[str, StoredSource] | None = None,
    create: bool = False,
    progress: IngestProgress | None = None,
    chunk_metadata: Sequence[ChunkMetadata | None] | None = None,
    limits: WriteLimits | None = None,
) -> list[IngestResult]:
    """Ingest several texts as :func:`ingest_text` ingests one, all in one store write.

    ``documents`` are (text, description) pairs; the results come back in their order. The
    chunks of every changed document go to the embedder in one ``embed()`` call (one cache
    lookup, dedup across documents) and to the store in one :meth:`Store.upsert_documents`
    (one transaction: all the changed documents or none). Unchanged sources are skipped as in
    :func:`ingest_text`. Bad input — a text that is not a str or too small to chunk, two
    documents with one source — raises ``InvalidInputError`` naming ``documents[i]`` before
    anything is embedded or written.

    ``stored`` maps sources to what the collection holds under them, when the caller has
    already read it; a source missing from it holds nothing. Without it each source is
    looked up here.

    ``create=True`` makes ``collection`` (see :func:`planned_collection`) in the write's own
    transaction if it does not exist, so a failed ingest leaves no empty collection; pass
    ``stored`` (``{}`` for a collection the caller found missing) with it.

    ``progress`` follows the embedding and the write (see :data:`IngestProgress`).

    ``chunk_metadata``, one entry per document (None for none), gives each chunk metadata of
    its own (see :data:`ChunkMetadata`).

    ``limits`` holds the write to usage limits (see :meth:`Store.upsert_documents`).

    What is stored under the sources is read on the primary of a store with standbys
    (:func:`~rag_plugin.stores.consistency.reads_on_primary`): it decides what is written.
    """
    with reads_on_primary():
        return _ingest_texts(
            store,
            embedder,
            collection,
            documents,
            chunker=chunker,
            stored=stored,
            create=create,
            progress=progress,
            chunk_metadata=chunk_metadata,
            limits=limits,
        )


def _ingest_texts(
    store: Store,
    embedder: Embedder,
    collection: CollectionInfo,
    documents: Sequence[tuple[str, DocumentInput | None]],
    *,
    chunker: TextChunker | None,
    stored: Mapping[str, StoredSource] | None,
    create: bool,
    progress: IngestProgress | None,
    chunk_metadata: Sequence[ChunkMetadata | None] | None,
    limits: WriteLimits | None,
) -> list[IngestResult]:
    if chunk_metadata is not None and len(chunk_metadata) != len(documents):
        raise InvalidInputError(
            f"chunk_metadata has {len(chunk_metadata)} entries for {len(documents)} documents; "
            "pass one per document (None where a document has none)."
        )
    if create and stored is None:
        raise InvalidInputError(
            "ingest_texts(create=True) needs stored=: what the collection holds under the "
            "sources ({} when it does not exist yet)."
        )
    check_embedder(embedder, collection)
    chunker = chunker or TextChunker()
    signature = _signature(chunker)
    single = len(documents) == 1
    described: list[DocumentInput] = []
    for position, (text, document) in enumerate(documents):
        if not isinstance(text, str):
            where = "The content" if single else f"documents[{position}]: the content"
            raise InvalidInputError(f"{where} is a {type(text).__name__}, not a str.")
        described.append(
            dataclasses.replace(
                document or DocumentInput(),
                content_hash=content_hash_hex(text),
                metadata={
                    **(document.metadata if document else {}),
                    CHUNKING_METADATA_KEY: signature,
                },
            )
        )
    check_distinct_sources([(wanted, None) for wanted in described])
    results: list[IngestResult | None] = [None] * len(documents)
    changed: list[tuple[int, DocumentInput, list[Chunk]]] = []
    for position, wanted in enumerate(described):
        found = _stored_under(store, collection, wanted.source, stored)
        if found.document is not None and _same(found.document, wanted):
            chunks = found.chunks
            if stored is None:
                chunks = tuple(store.document_chunks(collection, found.document.id))
            results[position] = IngestResult(found.document, chunks, unchanged=True)
            continue
        pieces = chunker.chunk(documents[position][0])
        if not pieces:
            raise content_too_small(position, len(documents))
        changed.append((position, wanted, pieces))
    if changed:
        texts = [p.content for _, _, pieces in changed for p in pieces]
        told = None if progress is None else _stage_progress(progress, "embedding")
        vectors = iter(embedder.embed(texts, progress=told))
        writes = [
            (
                wanted,
                [
                    ChunkInput(
                        index=piece.index,
                        content=piece.content,
                        start_offset=piece.start_offset,
                        end_offset=piece.end_offset,
                        embedding=next(vectors),
                        metadata=dict(annotate(piece)) if annotate is not None else {},
                    )
                    for piece in pieces
                ],
            )
            for position, wanted, pieces in changed
            for annotate in [chunk_metadata[position] if chunk_metadata is not None else None]
        ]
        if progress is not None:
            progress("writing", 0, len(writes))
        records = store.upsert_documents(collection, writes, create=create, limits=limits)
        for (position, _, _), record, (_, inputs) in zip(changed, records, writes, strict=True):
            results[position] = IngestResult(record, _stored_chunks(record, inputs))
    return [result for result in results if result is not None]


def _stage_progress(progress: IngestProgress, stage: str) -> Callable[[int, int], None]:
    def told(done: int, total: int) -> None:
        progress(stage, done, total)

    return told


def content_too_small(position: int, count: int) -> InvalidInputError:
    """The error for a text too small to chunk: ``documents[i]`` named when there are several."""
    where = "" if count == 1 else f"documents[{position}]: "
    return InvalidInputError(f"{where}Content too small to chunk")


def _stored_under(
    store: Store,
    collection: CollectionInfo,
    source: str,
    stored: Mapping[str, StoredSource] | None,
) -> StoredSource:
    """What the collection holds under ``source``: from the caller's reading, or looked up
    (then without its chunks, which only an unchanged document needs)."""
    if not source:
        return StoredSource(None)
    if stored is not None:
        return stored.get(source, StoredSource(None))
    return StoredSource(store.find_document(collection, source=source))


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


def planned_collection(
    name: str,
    *,
    embedder: Embedder,
    owner: str | None = None,
    metric: DistanceMetric = DistanceMetric.COSINE,
    analyzer: str = DEFAULT_COLLECTION_ANALYZER,
) -> CollectionInfo:
    """The collection :func:`get_or_create_collection` would create, not created yet: for
    :func:`ingest_texts` with ``create=True``, which creates it with the first write."""
    return CollectionInfo(
        name=name,
        owner=owner,
        dimensions=embedder.dimensions,
        embedding_model=embedder.model_name,
        metric=metric,
        analyzer=analyzer,
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
