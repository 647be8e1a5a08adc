"""Reads on a tenant's RAG data: collections, documents and search (HackSoft-style selectors)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from portal.rag.metrics import SEARCH_LATENCY
from portal.rag.runtime import embedder_for
from portal.rag.scope import Scope, reachable, scope_for
from rag_plugin.engine import CollectionSearcher, SearchOutcome, rerank_outcome
from rag_plugin.exceptions import DocumentNotFoundError
from rag_plugin.filters import FilterExpression
from rag_plugin.rerank import RerankMode, make_reranker
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, DocumentRecord
from tenants.selectors import enabled_rag_sources

logger = logging.getLogger("portal.rag")


def collection_list(*, user: AbstractBaseUser, shared: bool = False) -> list[CollectionInfo]:
    """The caller's collections whose source is enabled in the allowlist (T3) and that the
    caller's API key, if it signed in with one, reaches."""
    scope = scope_for(user=user, collection=None, shared=shared)
    allowed = set(reachable(user, enabled_rag_sources(), shared))
    return [c for c in scope.store.list_collections(owner=scope.owner) if c.name in allowed]


def collection_get(*, user: AbstractBaseUser, collection: str, shared: bool = False) -> Scope:
    """Check access to one collection and return the scope it lives in (404 if absent)."""
    scope = scope_for(user=user, collection=collection, shared=shared)
    scope.store.get_collection(collection, owner=scope.owner)
    return scope


def document_list(
    *, user: AbstractBaseUser, collection: str, limit: int, offset: int, shared: bool = False
) -> list[DocumentRecord]:
    scope = scope_for(user=user, collection=collection, shared=shared)
    info = scope.store.get_collection(collection, owner=scope.owner)
    return scope.store.list_documents(info, limit=limit, offset=offset)


@dataclass(frozen=True)
class FoundDocument:
    scope: Scope
    collection: CollectionInfo
    document: DocumentRecord


def document_find(
    *, user: AbstractBaseUser, document_id: str, shared: bool = False, write: bool = False
) -> FoundDocument:
    """Find a document among the caller's own collections, then check its source.

    Only the caller's collections are searched (those its API key reaches, if it signed in
    with one), so another user's document id is simply not found (404), never forbidden: ids
    reveal nothing.
    """
    scope = scope_for(user=user, collection=None, shared=shared, write=write)
    collections = scope.store.list_collections(owner=scope.owner)
    names = set(reachable(user, [info.name for info in collections], shared))
    for info in (info for info in collections if info.name in names):
        try:
            document = scope.store.get_document(info, document_id)
        except DocumentNotFoundError:
            continue
        # The allowlist applies to the collection the document turned out to be in.
        scope_for(user=user, collection=info.name, shared=shared, write=write)
        return FoundDocument(scope, info, document)
    raise DocumentNotFoundError(document_id)


def document_chunks(*, found: FoundDocument) -> list[ChunkRecord]:
    return found.scope.store.document_chunks(found.collection, found.document.id)


def rag_search(
    *,
    user: AbstractBaseUser,
    collection: str,
    query: str,
    limit: int,
    strategy: SearchStrategy,
    threshold: float,
    correct_typos: bool,
    shared: bool = False,
    filters: FilterExpression | None = None,
    rerank: RerankMode = RerankMode.OFF,
) -> SearchOutcome:
    """Search one of the caller's collections (SPEC A3); every leg is scoped by owner."""
    started = time.perf_counter()
    scope = scope_for(user=user, collection=collection, shared=shared)
    info = scope.store.get_collection(collection, owner=scope.owner)
    searcher = CollectionSearcher(scope.store, embedder_for(scope.schema_name))
    outcome = searcher.search(
        info,
        query,
        strategy=strategy,
        top_k=limit,
        threshold=threshold,
        correct_typos=correct_typos,
        filters=filters,
    )
    if rerank is not RerankMode.OFF:
        outcome = rerank_outcome(make_reranker(rerank), outcome)
    logger.info(
        "rag.search",
        extra={
            "event": "rag.search",
            "tenant": scope.schema_name,
            "user": user.get_username(),
            "collection": collection,
            "strategy": str(strategy),
            "results": len(outcome.hits),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    SEARCH_LATENCY.labels(str(strategy)).observe(time.perf_counter() - started)
    return outcome
