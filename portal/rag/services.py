"""Writes on a tenant's RAG data: ingest and deletes (HackSoft-style services).

Each write is one store transaction, so a failure leaves nothing half-written; a collection
made by the first ingest into it is created inside that ingest's transaction.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from portal.rag import audit
from portal.rag.files import files_forget
from portal.rag.quotas import write_limits
from portal.rag.runtime import embedder_for
from portal.rag.scope import Scope, admin_scope, scope_for
from portal.rag.selectors import document_find
from rag_plugin.chunking import ChunkingStrategy, TextChunker, api_chunker_config
from rag_plugin.embedding.base import Embedder
from rag_plugin.exceptions import CollectionNotFoundError
from rag_plugin.ingest import (
    DEFAULT_COLLECTION_ANALYZER,
    ChunkMetadata,
    IngestProgress,
    IngestResult,
    StoredSource,
    ingest_texts,
    planned_collection,
)
from rag_plugin.stores.base import CollectionInfo, DocumentInput, DocumentRecord
from rag_plugin.stores.consistency import reads_on_primary
from rag_plugin.stores.usage import WriteLimits

logger = logging.getLogger("portal.rag")


@dataclass(frozen=True)
class DocumentIngested:
    collection: str
    result: IngestResult


@dataclass(frozen=True)
class DocumentsIngested:
    collection: str
    results: list[IngestResult]

    @property
    def chunk_count(self) -> int:
        """Chunks of all the documents."""
        return sum(len(result.chunks) for result in self.results)


@dataclass(frozen=True)
class NewDocument:
    """One document of an ingest request: its text and how it is described."""

    content: str
    title: str = ""
    source: str = ""
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def document_ingest(
    *,
    user: AbstractBaseUser,
    collection: str,
    content: str,
    title: str = "",
    source: str = "",
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    chunking_strategy: str | None = None,
    shared: bool = False,
) -> DocumentIngested:
    """Chunk, embed and store one document in the caller's collection (SPEC A2 stages)."""
    started = time.perf_counter()
    scope, embedder, (result,) = _ingest(
        user=user,
        collection=collection,
        documents=[NewDocument(content, title, source, tags, dict(metadata or {}))],
        chunking_strategy=chunking_strategy,
        shared=shared,
    )
    _log_ingest(
        "rag.ingest",
        scope,
        user,
        collection,
        shared,
        embedder,
        started,
        document_id=result.document.id,
        chunks=len(result.chunks),
        unchanged=result.unchanged,
    )
    _audit_ingest(user, collection, shared, [result])
    return DocumentIngested(collection, result)


def documents_ingest(
    *,
    user: AbstractBaseUser,
    collection: str,
    documents: Sequence[NewDocument],
    chunking_strategy: str | None = None,
    shared: bool = False,
    progress: IngestProgress | None = None,
    chunk_metadata: Sequence[ChunkMetadata | None] | None = None,
) -> DocumentsIngested:
    """Ingest several documents into the caller's collection in one store write: all the
    changed ones or none. Unchanged sources are skipped, as :func:`document_ingest` skips one.
    ``progress`` follows the embedding and the write (an ingestion job's stages);
    ``chunk_metadata`` gives chunks metadata of their own (a file's pages), one per document.
    """
    started = time.perf_counter()
    scope, embedder, results = _ingest(
        user=user,
        collection=collection,
        documents=documents,
        chunking_strategy=chunking_strategy,
        shared=shared,
        progress=progress,
        chunk_metadata=chunk_metadata,
    )
    _log_ingest(
        "rag.ingest_batch",
        scope,
        user,
        collection,
        shared,
        embedder,
        started,
        documents=len(results),
        unchanged=sum(result.unchanged for result in results),
        chunks=sum(len(result.chunks) for result in results),
    )
    _audit_ingest(user, collection, shared, results)
    return DocumentsIngested(collection, results)


def _audit_ingest(
    user: AbstractBaseUser, collection: str, shared: bool, results: Sequence[IngestResult]
) -> None:
    """One audit event per document written (an unchanged one was not), in one statement."""
    audit.record_all(
        [
            audit.new_event(
                "document.ingest",
                actor=user,
                object_type="document",
                object_id=result.document.id,
                after={
                    "collection": collection,
                    "shared": shared,
                    "source": result.document.source,
                    "title": result.document.title,
                    "chunks": len(result.chunks),
                },
            )
            for result in results
            if not result.unchanged
        ]
    )


def _log_ingest(
    event: str,
    scope: Scope,
    user: AbstractBaseUser,
    collection: str,
    shared: bool,
    embedder: Embedder,
    started: float,
    **counts: object,
) -> None:
    """One structured line per ingest request (SPEC O3): who, where, what, how long."""
    logger.info(
        event,
        extra={
            "event": event,
            "tenant": scope.schema_name,
            "user": user.get_username(),
            "collection": collection,
            "shared": shared,
            **counts,
            "embedded_texts": embedder.stats.texts_embedded,
            "cache_hits": embedder.stats.cache_hits,
            "model_ms": round(embedder.stats.model_seconds * 1000, 1),  # of duration_ms
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )


def _ingest(
    *,
    user: AbstractBaseUser,
    collection: str,
    documents: Sequence[NewDocument],
    chunking_strategy: str | None,
    shared: bool,
    progress: IngestProgress | None = None,
    chunk_metadata: Sequence[ChunkMetadata | None] | None = None,
) -> tuple[Scope, Embedder, list[IngestResult]]:
    strategy = ChunkingStrategy.parse(chunking_strategy) if chunking_strategy else None
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    chunker = TextChunker(api_chunker_config(strategy))
    texts = [
        (
            d.content,
            DocumentInput(
                source=d.source, title=d.title, tags=tuple(d.tags), metadata=dict(d.metadata)
            ),
        )
        for d in documents
    ]
    embedder = embedder_for(scope.schema_name)
    limits = write_limits(user, shared=shared)  # checked by the store, inside its write
    with reads_on_primary():  # what is stored decides what is written: never a standby's
        results = _ingest_into(
            scope, embedder, collection, documents, texts, chunker, limits, progress, chunk_metadata
        )
    return scope, embedder, results


def _ingest_into(
    scope: Scope,
    embedder: Embedder,
    collection: str,
    documents: Sequence[NewDocument],
    texts: list[tuple[str, DocumentInput]],
    chunker: TextChunker,
    limits: WriteLimits | None,
    progress: IngestProgress | None,
    chunk_metadata: Sequence[ChunkMetadata | None] | None,
) -> list[IngestResult]:
    try:
        # One round trip: the collection and what it holds under the sources, so unchanged
        # documents cost nothing more.
        info, found = scope.store.find_sources(
            collection, owner=scope.owner, sources=[d.source for d in documents]
        )
    except CollectionNotFoundError:
        # New collections get the library's default analyzer (English: stopwords + stemming,
        # chosen by bench/quality.py) and are created by the write itself, so an ingest that
        # fails (content too small to chunk, a store error) leaves no empty collection.
        planned = planned_collection(collection, embedder=embedder, owner=scope.owner)
        results = ingest_texts(
            scope.store,
            embedder,
            planned,
            texts,
            chunker=chunker,
            stored={},
            create=True,
            progress=progress,
            chunk_metadata=chunk_metadata,
            limits=limits,
        )
    else:
        stored = {
            source: StoredSource(document, tuple(chunks))
            for source, (document, chunks) in found.items()
        }
        results = ingest_texts(
            scope.store,
            embedder,
            info,
            texts,
            chunker=chunker,
            stored=stored,
            progress=progress,
            chunk_metadata=chunk_metadata,
            limits=limits,
        )
    return results


def collection_create(
    *, user: AbstractBaseUser, collection: str, shared: bool = False
) -> CollectionInfo:
    """Create an empty collection of the caller's, as the first ingest into it would (the
    deployment's embedder, the library's default analyzer); an existing one is a conflict."""
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    embedder = embedder_for(scope.schema_name)
    info = scope.store.create_collection(
        collection,
        dimensions=embedder.dimensions,
        embedding_model=embedder.model_name,
        owner=scope.owner,
        analyzer=DEFAULT_COLLECTION_ANALYZER,
    )
    audit.record(
        "collection.create",
        actor=user,
        object_type="collection",
        object_id=collection,
        after={"shared": shared},
    )
    return info


def collection_delete(*, user: AbstractBaseUser, collection: str, shared: bool = False) -> int:
    """Delete the caller's collection with all its documents; return how many there were."""
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    return _collection_delete(scope, collection, owner=None if shared else user)


def admin_collection_delete(
    *, actor: AbstractBaseUser, owner: AbstractBaseUser | None, collection: str
) -> int:
    """A tenant admin deletes a collection of ``owner`` (None: a shared one) with all its
    documents, whatever the allowlist says; return how many documents there were."""
    return _collection_delete(admin_scope(actor=actor, owner=owner), collection, owner=owner)


def _collection_delete(scope: Scope, collection: str, *, owner: AbstractBaseUser | None) -> int:
    deleted = scope.store.delete_collection(collection, owner=scope.owner)
    files_forget(collection=collection, shared=owner is None, owner_id=owner.pk if owner else None)
    audit.record(
        "collection.delete",
        actor=scope.user,
        object_type="collection",
        object_id=collection,
        before={"owner": _owner_label(owner), "shared": owner is None, "documents": deleted},
    )
    logger.info(
        "rag.collection_delete",
        extra={
            "event": "rag.collection_delete",
            "tenant": scope.schema_name,
            "user": scope.user.get_username(),
            "collection": collection,
            "documents_deleted": deleted,
        },
    )
    return deleted


def document_delete(*, user: AbstractBaseUser, document_id: str, shared: bool = False) -> str:
    """Delete one of the caller's documents (chunks, vectors, postings); return its collection."""
    found = document_find(user=user, document_id=document_id, shared=shared, write=True)
    _document_delete(found.scope, found.collection, found.document, None if shared else user)
    return found.collection.name


def admin_document_delete(
    *, actor: AbstractBaseUser, owner: AbstractBaseUser | None, collection: str, document_id: str
) -> None:
    """A tenant admin deletes a document of ``owner``'s collection (None: a shared one)."""
    scope = admin_scope(actor=actor, owner=owner)
    info = scope.store.get_collection(collection, owner=scope.owner)
    _document_delete(scope, info, scope.store.get_document(info, document_id), owner)


def _document_delete(
    scope: Scope, info: CollectionInfo, document: DocumentRecord, owner: AbstractBaseUser | None
) -> None:
    scope.store.delete_document(info, document.id)
    audit.record(
        "document.delete",
        actor=scope.user,
        object_type="document",
        object_id=document.id,
        before={
            "collection": info.name,
            "owner": _owner_label(owner),
            "shared": owner is None,
            "source": document.source,
            "title": document.title,
        },
    )
    files_forget(
        collection=info.name,
        shared=owner is None,
        owner_id=owner.pk if owner else None,
        document_id=document.id,
    )
    logger.info(
        "rag.document_delete",
        extra={
            "event": "rag.document_delete",
            "tenant": scope.schema_name,
            "user": scope.user.get_username(),
            "collection": info.name,
            "document_id": document.id,
        },
    )


def _owner_label(owner: AbstractBaseUser | None) -> str:
    """Whose collection it was, as the audit log names them."""
    return owner.get_username() if owner is not None else "(shared)"
