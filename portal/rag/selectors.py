"""Reads on a tenant's RAG data: collections, documents, search and ingestion jobs (HackSoft-style
selectors)."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from portal.rag.consistency import follow_user, on_standby
from portal.rag.metrics import SEARCH_LATENCY, time_leg
from portal.rag.runtime import embedder_for
from portal.rag.scope import Scope, grant_of, reachable, scope_for
from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import DocumentNotFoundError, NotFoundError
from rag_plugin.filters import FilterExpression
from rag_plugin.outcome import SearchOutcome, rerank_outcome
from rag_plugin.rerank import RerankMode, make_reranker
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, DocumentRecord
from tenants.models import IngestJob
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


def collection_find(
    *, user: AbstractBaseUser, collection: str, shared: bool = False
) -> CollectionInfo:
    """One collection of the caller's (or the tenant's shared one) with its counts (404 if
    absent)."""
    scope = scope_for(user=user, collection=collection, shared=shared)
    return scope.store.get_collection(collection, owner=scope.owner)


def document_list(
    *, user: AbstractBaseUser, collection: str, limit: int, offset: int, shared: bool = False
) -> list[DocumentRecord]:
    scope = scope_for(user=user, collection=collection, shared=shared)
    info = scope.store.get_collection(collection, owner=scope.owner)
    return scope.store.list_documents(info, limit=limit, offset=offset)


DOCUMENT_SCAN_BATCH = 500
"""Documents read per round trip while a listing looks for titles or sources that match."""


@dataclass(frozen=True)
class DocumentPage:
    """One page of a collection's documents, newest first, and whether more follow."""

    documents: list[DocumentRecord]
    offset: int
    limit: int
    has_more: bool


def document_page(
    *,
    user: AbstractBaseUser,
    collection: str,
    limit: int,
    offset: int = 0,
    text: str = "",
    shared: bool = False,
) -> DocumentPage:
    """A page of the collection's documents whose title or source contains ``text``
    (case-insensitively; every document when it is empty).

    The store lists documents by age only, so matching reads them in batches, newest first,
    until the page is full: a listing of a collection of many thousand documents filtered
    for a rare word reads them all.
    """
    scope = scope_for(user=user, collection=collection, shared=shared)
    info = scope.store.get_collection(collection, owner=scope.owner)
    if not text:
        found = scope.store.list_documents(info, limit=limit + 1, offset=offset)
        return DocumentPage(found[:limit], offset, limit, len(found) > limit)
    wanted = text.casefold()
    matches: list[DocumentRecord] = []
    read = 0
    while len(matches) <= offset + limit:
        batch = scope.store.list_documents(info, limit=DOCUMENT_SCAN_BATCH, offset=read)
        read += len(batch)
        matches.extend(
            d for d in batch if wanted in d.title.casefold() or wanted in d.source.casefold()
        )
        if len(batch) < DOCUMENT_SCAN_BATCH:
            break
    return DocumentPage(
        matches[offset : offset + limit], offset, limit, len(matches) > offset + limit
    )


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


def document_readable(*, user: AbstractBaseUser, document_id: str) -> FoundDocument:
    """Find a document the caller may read: in their own collections, else in the tenant's
    shared ones (a citation names the document, not which of the two it is in)."""
    try:
        return document_find(user=user, document_id=document_id)
    except DocumentNotFoundError:
        return document_find(user=user, document_id=document_id, shared=True)


def collection_document_chunks(
    *, user: AbstractBaseUser, collection: str, document_id: str, shared: bool = False
) -> list[ChunkRecord]:
    """The chunks of a document of one of the caller's collections (a search hit's, whose
    collection is known), in index order."""
    scope = scope_for(user=user, collection=collection, shared=shared)
    info = scope.store.get_collection(collection, owner=scope.owner)
    return scope.store.document_chunks(info, document_id)


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
    searcher = CollectionSearcher(scope.store, embedder_for(scope.schema_name), leg_timer=time_leg)
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


def visible_jobs(user: AbstractBaseUser) -> QuerySet[IngestJob]:
    """The jobs ``user`` may see: their own, or the tenant's for a tenant admin; under an API
    key, only the user's own on the collections the key reaches."""
    # The file's name and type, not its bytes; nor the job's input, megabytes for a text job
    # (20 queued 1 MB jobs made a page of the list take 137 ms). Read only when asked for.
    jobs = IngestJob.objects.select_related("user", "file").defer(
        "file__data", *IngestJob.INPUT_FIELDS
    )
    grant = grant_of(user)
    if grant is not None:
        reached = Q(pk__in=[])
        for name, shared in grant.collections:
            reached |= Q(collection=name, shared=shared)
        return jobs.filter(reached, user_id=user.pk)
    return jobs if getattr(user, "is_staff", False) else jobs.filter(user_id=user.pk)


def job_list(
    *,
    user: AbstractBaseUser,
    state: str | None = None,
    collection: str | None = None,
    shared: bool | None = None,
    own: bool = False,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[IngestJob], int]:
    """A page of the jobs ``user`` may see, newest first, and how many there are in all;
    ``own``: only the jobs ``user`` submitted, even for a tenant admin."""
    jobs = visible_jobs(user)
    if own:
        jobs = jobs.filter(user_id=user.pk)
    if state:
        jobs = jobs.filter(state=state)
    if collection:
        jobs = jobs.filter(collection=collection)
    if shared is not None:
        jobs = jobs.filter(shared=shared)
    follow_user(user)  # with standbys: read on one that has the user's last write
    return on_standby(
        lambda: (list(jobs.order_by("-created_at", "id")[offset : offset + limit]), jobs.count())
    )


def job_get(*, user: AbstractBaseUser, job_id: str, for_update: bool = False) -> IngestJob:
    """One job ``user`` may see; anything else (another user's, no such id) is 404."""
    try:
        key = uuid.UUID(job_id)
    except ValueError:
        raise _missing(job_id) from None
    jobs = visible_jobs(user)
    if for_update:
        found = jobs.select_for_update(of=("self",)).filter(id=key).first()
    else:
        follow_user(user)  # with standbys: read on one that has the user's last write
        found = on_standby(lambda: jobs.filter(id=key).first())
    if found is None:
        raise _missing(job_id)
    return found


def _missing(job_id: str) -> NotFoundError:
    return NotFoundError(f"Job '{job_id}' not found; GET /api/rag/jobs lists the jobs you can see.")
