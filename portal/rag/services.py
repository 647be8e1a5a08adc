"""Writes on a tenant's RAG data: ingest and deletes (HackSoft-style services).

Each write is one store transaction, so a failure leaves nothing half-written; the one extra
step, creating a collection on first ingest, is undone if that first ingest fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from portal.rag.runtime import embedder_for
from portal.rag.scope import scope_for
from portal.rag.selectors import document_find
from rag_plugin.chunking import ChunkingStrategy, TextChunker, api_chunker_config
from rag_plugin.exceptions import CollectionNotFoundError, InvalidInputError
from rag_plugin.ingest import (
    IngestResult,
    StoredSource,
    get_or_create_collection,
    ingest_text,
)
from rag_plugin.stores.base import DocumentInput

logger = logging.getLogger("portal.rag")


@dataclass(frozen=True)
class DocumentIngested:
    collection: str
    result: IngestResult


def document_ingest(
    *,
    user: AbstractBaseUser,
    collection: str,
    content: str,
    title: str = "",
    source: str = "",
    tags: Sequence[str] = (),
    chunking_strategy: str | None = None,
    shared: bool = False,
) -> DocumentIngested:
    """Chunk, embed and store one document in the caller's collection (SPEC A2 stages)."""
    started = time.perf_counter()
    strategy = ChunkingStrategy.parse(chunking_strategy) if chunking_strategy else None
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    chunker = TextChunker(api_chunker_config(strategy))
    document = DocumentInput(source=source, title=title, tags=tuple(tags))
    embedder = embedder_for(scope.schema_name)
    try:
        # One round trip: the collection and what it holds under the source, so an unchanged
        # document costs nothing more.
        info, stored, chunks = scope.store.find_source(collection, owner=scope.owner, source=source)
    except CollectionNotFoundError:
        # Checked before the collection exists, so empty content never creates one (an
        # existing collection gets the same error from ingest_text).
        if not chunker.chunk(content):
            raise InvalidInputError("Content too small to chunk") from None
        # New collections get the library's default analyzer (English: stopwords + stemming,
        # chosen by bench/quality.py); existing ones keep theirs.
        info = get_or_create_collection(
            scope.store, collection, embedder=embedder, owner=scope.owner
        )
        try:
            result = ingest_text(
                scope.store, embedder, info, content, document=document, chunker=chunker
            )
        except Exception:
            scope.store.delete_collection(collection, owner=scope.owner)
            raise
    else:
        result = ingest_text(
            scope.store,
            embedder,
            info,
            content,
            document=document,
            chunker=chunker,
            stored=StoredSource(stored, tuple(chunks)),
        )
    logger.info(
        "rag.ingest",
        extra={
            "event": "rag.ingest",
            "tenant": scope.schema_name,
            "user": user.get_username(),
            "collection": collection,
            "shared": shared,
            "document_id": result.document.id,
            "chunks": len(result.chunks),
            "unchanged": result.unchanged,
            "embedded_texts": embedder.stats.texts_embedded,
            "cache_hits": embedder.stats.cache_hits,
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return DocumentIngested(collection, result)


def collection_delete(*, user: AbstractBaseUser, collection: str, shared: bool = False) -> int:
    """Delete the caller's collection with all its documents; return how many there were."""
    scope = scope_for(user=user, collection=collection, shared=shared, write=True)
    deleted = scope.store.delete_collection(collection, owner=scope.owner)
    logger.info(
        "rag.collection_delete",
        extra={
            "event": "rag.collection_delete",
            "tenant": scope.schema_name,
            "user": user.get_username(),
            "collection": collection,
            "documents_deleted": deleted,
        },
    )
    return deleted


def document_delete(*, user: AbstractBaseUser, document_id: str, shared: bool = False) -> str:
    """Delete one of the caller's documents (chunks, vectors, postings); return its collection."""
    found = document_find(user=user, document_id=document_id, shared=shared, write=True)
    found.scope.store.delete_document(found.collection, document_id)
    logger.info(
        "rag.document_delete",
        extra={
            "event": "rag.document_delete",
            "tenant": found.scope.schema_name,
            "user": user.get_username(),
            "collection": found.collection.name,
            "document_id": document_id,
        },
    )
    return found.collection.name
