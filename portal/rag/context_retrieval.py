"""Multi-collection retrieval for the context and answer endpoints (SPEC R1–R5, A7).

A request names a retrieval profile (collections configured by the tenant admin) or lists
collections itself. Profile collections the caller cannot use (a disabled source, or a private
collection the caller does not have) are skipped; collections the caller names explicitly must
exist and be allowed, as on every other endpoint.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from portal.rag.errors import LlmError, SourceNotAllowedError
from portal.rag.metrics import LLM_CALLS, LLM_LATENCY, time_leg
from portal.rag.runtime import embedder_for, llm, store_for
from portal.rag.scope import scope_for
from rag_plugin.citations import ContextResult, Source, build_context_result
from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import CollectionNotFoundError, NotFoundError
from rag_plugin.profiles import RetrievalProfile as LibraryProfile
from rag_plugin.retrieval import CollectionRef, MultiCollectionRetriever, RetrievalResult
from tenants.models import RetrievalProfile
from tenants.selectors import rag_source_enabled

logger = logging.getLogger("portal.rag")

T = TypeVar("T")

NO_LLM_MESSAGE = (
    "No LLM is configured for this deployment (set RAG_LLM_URL and RAG_LLM_MODEL); "
    "the context and sources are returned without an answer."
)


@dataclass(frozen=True)
class RequestedCollection:
    name: str
    weight: float = 1.0
    priority: int = 0
    shared: bool = False


@dataclass(frozen=True)
class ProfileContext:
    context: ContextResult
    retrieval: RetrievalResult
    include_sources: bool
    profile: str | None
    skipped: tuple[str, ...]

    @property
    def sources(self) -> tuple[Source, ...]:
        """The context's numbered sources; none where the profile leaves them out."""
        return tuple(self.context.sources) if self.include_sources else ()

    @property
    def relevance_fallback(self) -> bool:
        """No candidate reached the minimum relevance, so the best ``k`` were kept."""
        return self.retrieval.relevance_fallback


def _refs(
    user: AbstractBaseUser, wanted: Sequence[RequestedCollection], *, strict: bool
) -> tuple[list[CollectionRef], list[str]]:
    refs, skipped = [], []
    for item in wanted:
        label = f"{item.name} ({'shared' if item.shared else 'own'})"
        try:
            scope = scope_for(user=user, collection=item.name, shared=item.shared)
            info = scope.store.get_collection(item.name, owner=scope.owner)
        except (SourceNotAllowedError, CollectionNotFoundError):
            if strict:
                raise
            skipped.append(label)
            continue
        refs.append(
            CollectionRef(info, weight=item.weight, priority=item.priority, label=item.name)
        )
    return refs, skipped


def profile_collection_check(*, collection: str, shared: bool) -> None:
    """Refuse a profile entry that no search could use: its source must be enabled and, for
    a shared entry, the tenant's shared collection must exist. An own entry is each caller's
    collection of that name, which exists or not per caller, so only its source is checked."""
    if shared:
        _shared_collection_check(collection)
    if not rag_source_enabled(name=collection):
        raise SourceNotAllowedError(collection)


def _shared_collection_check(collection: str) -> None:
    """Refuse a shared collection the tenant does not have, naming the close ones (a typo is
    likelier than a source left disabled, so this is said first)."""
    store = store_for(connection.schema_name)  # type: ignore[attr-defined]
    try:
        store.get_collection(collection, owner=None)
    except CollectionNotFoundError:
        names = [info.name for info in store.list_collections(owner=None)]
        close = difflib.get_close_matches(collection, names, n=3)
        hint = (
            f" Did you mean {' or '.join(repr(name) for name in close)}?"
            if close
            else f" The shared collections are: {_listed(names)}."
        )
        raise NotFoundError(
            f"The tenant has no shared collection '{collection}', so the profile would find "
            f"nothing in it.{hint} Untick 'shared' for each user's own collection of that name."
        ) from None


def _listed(names: Sequence[str], shown: int = 10) -> str:
    if not names:
        return "none yet"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


@dataclass(frozen=True)
class ResolvedRequest:
    """A context request's collections, checked for the caller, and its settings."""

    refs: list[CollectionRef]
    skipped: list[str]
    library_profile: LibraryProfile
    profile: str | None


def profile_list() -> list[RetrievalProfile]:
    """The tenant's retrieval profiles by name, for a user to pick one to ask."""
    return list(RetrievalProfile.objects.order_by("name"))


def resolve_request(
    *,
    user: AbstractBaseUser,
    profile: str | None = None,
    collections: Sequence[RequestedCollection] = (),
    overrides: dict[str, Any] | None = None,
) -> ResolvedRequest:
    """The collections to search and the settings: a profile's (its collections the caller
    cannot use skipped) or the request's own (each one must exist and be allowed)."""
    overrides = overrides or {}
    if profile is not None:
        configured = RetrievalProfile.objects.filter(name=profile).first()
        if configured is None:
            raise NotFoundError(
                f"Retrieval profile '{profile}' not found; a tenant admin defines profiles "
                "under Retrieval profiles."
            )
        wanted = [
            RequestedCollection(c.collection, c.weight, c.priority, c.shared)
            for c in configured.collections.all()
        ]
        refs, skipped = _refs(user, wanted, strict=False)
        return ResolvedRequest(refs, skipped, configured.to_library(**overrides), profile)
    refs, skipped = _refs(user, collections, strict=True)
    return ResolvedRequest(refs, skipped, LibraryProfile(**overrides), None)


def profile_context(
    *,
    user: AbstractBaseUser,
    query: str,
    profile: str | None = None,
    collections: Sequence[RequestedCollection] = (),
    overrides: dict[str, Any] | None = None,
    resolved: ResolvedRequest | None = None,
    explain: bool = False,
    read_only: bool = False,
) -> ProfileContext:
    """Retrieve the best chunks for ``query`` and number them as context and sources.

    ``resolved``: the request already resolved (the chat does that before its LLM call).
    ``explain``: the retrieval carries its explanation (legs, fusion, order before the
    rerank). ``read_only``: nothing is written, not even the query's embedding to the cache.
    """
    started = time.perf_counter()
    if resolved is None:
        resolved = resolve_request(
            user=user, profile=profile, collections=collections, overrides=overrides
        )
    refs, skipped, library_profile = resolved.refs, resolved.skipped, resolved.library_profile
    scope = scope_for(user=user, collection=None)
    retriever = MultiCollectionRetriever(
        CollectionSearcher(
            scope.store,
            embedder_for(scope.schema_name, read_only=read_only),
            leg_timer=time_leg,
        )
    )
    retrieval = retriever.run(query, refs, library_profile, explain=explain) if refs else None
    result = (
        retrieval
        if retrieval is not None
        else RetrievalResult((), query, None, 0, relevance_fallback=False)
    )
    context = build_context_result(result.chunks)
    logger.info(
        "rag.context",
        extra={
            "event": "rag.context",
            "tenant": scope.schema_name,
            "user": user.get_username(),
            "profile": resolved.profile,
            "collections": [ref.collection.name for ref in refs],
            "skipped": skipped,
            "chunks": len(result.chunks),
            "duration_ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return ProfileContext(
        context, result, library_profile.include_sources, resolved.profile, tuple(skipped)
    )


@dataclass(frozen=True)
class ProfileAnswer:
    found: ProfileContext
    answer: str | None
    cited: tuple[int, ...]
    message: str | None


def profile_answer(**request: Any) -> ProfileAnswer:
    """Answer ``query`` from the retrieved context with the deployment's LLM, if any (R5)."""
    from rag_plugin.llama_index.query_engine import answer

    found = profile_context(**request)
    model = llm()
    if model is None:
        return ProfileAnswer(found, None, (), NO_LLM_MESSAGE)
    result = llm_call(lambda: answer(model, request["query"], found.context))
    return ProfileAnswer(found, result.answer, result.cited, None)


def llm_call(call: Callable[[], T]) -> T:
    """``call()``, its LLM client's errors (connection, HTTP, timeout, parsing) as a 502."""
    started = time.perf_counter()
    try:
        result = call()
    except Exception as exc:
        LLM_CALLS.labels("error").inc()
        logger.warning("LLM call failed: %s", exc)
        raise LlmError(f"The LLM service failed: {exc}") from exc
    LLM_CALLS.labels("ok").inc()
    LLM_LATENCY.observe(time.perf_counter() - started)
    return result
