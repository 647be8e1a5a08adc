"""The retrieval playground (SPEC T6): one question retrieved as the context endpoint does,
explained leg by leg, and nothing written.

A tenant admin runs either a retrieval profile, as one user of the tenant (the profile's
own-collection entries are that user's collections, as they would be for that user's API
calls; its collections the user cannot use are skipped), or collections chosen among those
the admin's RAG pages list: the tenant's shared ones and each user's, each of which must
exist and be an enabled source, as on the API. The retrieval is
:func:`~portal.rag.context_retrieval.profile_context` itself with the library's explanation
turned on (:mod:`rag_plugin.explain`), so the context shown is the one the LLM would get; it runs
read-only: no audit event, no embedding cached.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from portal.rag.context_retrieval import (
    ProfileContext,
    ResolvedRequest,
    profile_context,
    resolve_request,
)
from portal.rag.errors import ForbiddenError
from portal.rag.runtime import store_for
from portal.rag.scope import owner_for, scope_for
from rag_plugin.engine import SearchOutcome
from rag_plugin.exceptions import InvalidInputError, NotFoundError
from rag_plugin.explain import LegRanking
from rag_plugin.filters import FilterExpression, filters_from_json
from rag_plugin.llama_index.query_engine import answer_prompt
from rag_plugin.profiles import RetrievalProfile as LibraryProfile
from rag_plugin.rerank import parse_rerank_mode
from rag_plugin.retrieval import CollectionRef, RetrievalExplanation, RetrievedChunk
from rag_plugin.stores.base import ChunkRecord
from tenants.models import RetrievalProfile
from tenants.selectors import enabled_rag_sources

logger = logging.getLogger("portal.rag")

SHARED = "shared"
ROWS_SHOWN = 20
"""The first rows of each leg's list and of each fused list that the playground shows."""
EXCERPT_CHARS = 160
LEG_NAMES = {"semantic": "dense", "bm25": "BM25", "fuzzy": "fuzzy"}
"""How the page names each leg (the library names the dense leg after its strategy)."""


@dataclass(frozen=True)
class PlaygroundCollection:
    """A collection the playground may search: its name and owner (``None``: shared)."""

    name: str
    user_id: int | None = None
    owner_label: str = "(shared)"

    @property
    def value(self) -> str:
        """How a form names it: ``shared/<name>`` or ``user-<id>/<name>``."""
        owner = SHARED if self.user_id is None else f"user-{self.user_id}"
        return f"{owner}/{self.name}"

    @property
    def label(self) -> str:
        return f"{self.name} — {self.owner_label}"

    @classmethod
    def parse(cls, value: str) -> PlaygroundCollection:
        """The collection a form's :attr:`value` names; raise for anything else."""
        owner, _, name = value.partition("/")
        if owner == SHARED and name:
            return cls(name)
        digits = owner.removeprefix("user-")
        if owner.startswith("user-") and digits.isdigit() and name:
            return cls(name, int(digits), "")
        raise InvalidInputError(
            f"{value!r} names no collection; choose one of the listed collections "
            "(shared/<name> or user-<id>/<name>)."
        )


@dataclass(frozen=True)
class PlaygroundQuery:
    """What the admin asked: a question, a profile (run as a user) or collections, and the
    settings that override the profile's (``None``: as the profile says)."""

    query: str
    profile: str | None = None
    as_user_id: int | None = None
    collections: Sequence[PlaygroundCollection] = ()
    correct_typos: bool = False
    filters_json: str = ""
    rerank: str | None = None
    retrieval_k: int | None = None


@dataclass(frozen=True)
class ChunkView:
    """A chunk as the playground shows it, with its number in the context if it has one."""

    chunk_id: str
    title: str
    excerpt: str
    context_number: int | None


@dataclass(frozen=True)
class LegRow:
    rank: int
    score: float
    chunk: ChunkView
    fused_rank: int | None
    """Its rank in the collection's fused list, when that list kept it."""


@dataclass(frozen=True)
class LegView:
    leg: str
    name: str
    query: str
    weight: float | None
    rows: list[LegRow]
    total: int


@dataclass(frozen=True)
class Contribution:
    leg: str
    name: str
    rank: int
    weight: float
    value: float


@dataclass(frozen=True)
class FusedRow:
    rank: int
    score: float
    normalized_score: float | None
    chunk: ChunkView
    contributions: list[Contribution]


@dataclass(frozen=True)
class CollectionView:
    """One collection's search: its legs, its fused list and what happened to the query."""

    label: str
    weight: float
    priority: int
    strategy: str
    corrected_query: str | None
    corrections: list[str]
    rrf_k: float | None
    legs: list[LegView]
    fused: list[FusedRow]
    fused_total: int


@dataclass(frozen=True)
class ContextRow:
    """A chunk of the context: its number, where it was before the rerank and why."""

    number: int
    chunk: ChunkView
    collection: str
    search_score: float
    score: float
    rank_before_rerank: int | None
    rerank: dict[str, Any] | None


@dataclass(frozen=True)
class PlaygroundResult:
    """Everything the playground page shows, as plain values."""

    query: str
    profile: str | None
    as_user: str
    settings: dict[str, Any]
    lexical_query: str | None
    collections: list[CollectionView]
    candidates: int
    reranked: int
    relevance_fallback: bool
    skipped: list[str]
    failures: list[str]
    context_rows: list[ContextRow]
    context: str
    prompt: str
    duration_ms: float


def playground_collections() -> list[PlaygroundCollection]:
    """What the playground offers: every owner's collections whose source is enabled,
    the shared ones first, then each user's (by username)."""
    store = store_for(connection.schema_name)  # type: ignore[attr-defined]
    allowed = enabled_rag_sources()
    found = [PlaygroundCollection(c.name) for c in store.list_collections(owner=None)]
    for user in get_user_model().objects.order_by("username"):
        found.extend(
            PlaygroundCollection(c.name, user.pk, user.get_username())
            for c in store.list_collections(owner=owner_for(user))
        )
    return [c for c in found if c.name in allowed]


def playground_profiles() -> list[str]:
    """The names of the tenant's retrieval profiles."""
    return list(RetrievalProfile.objects.order_by("name").values_list("name", flat=True))


def playground_users() -> list[tuple[int, str]]:
    """Each user of the tenant a profile can be run as: id and username."""
    users = get_user_model().objects.order_by("username")
    return [(user.pk, user.get_username()) for user in users]


def playground_run(*, actor: AbstractBaseUser, request: PlaygroundQuery) -> PlaygroundResult:
    """Run ``request`` for the tenant admin ``actor`` and explain it; write nothing."""
    started = time.perf_counter()
    if not getattr(actor, "is_superuser", False):
        raise ForbiddenError("Only tenant admins use the retrieval playground.")
    query = request.query.strip()
    if not query:
        raise InvalidInputError("Type a question to retrieve passages for.")
    if request.profile is not None and request.collections:
        raise InvalidInputError(
            "Choose a retrieval profile or collections, not both: a profile names its own."
        )
    if request.profile is None and not request.collections:
        raise InvalidInputError("Choose a retrieval profile or at least one collection.")
    overrides = _overrides(request)
    as_user = actor
    if request.profile is not None:
        as_user = _user(request.as_user_id) if request.as_user_id is not None else actor
        resolved = resolve_request(user=as_user, profile=request.profile, overrides=overrides)
    else:
        resolved = ResolvedRequest(
            _refs(actor, request.collections), [], LibraryProfile(**overrides), None
        )
    found = profile_context(
        user=actor, query=query, resolved=resolved, explain=True, read_only=True
    )
    result = _result(found, resolved.library_profile, as_user, started)
    logger.info(
        "rag.playground",
        extra={
            "event": "rag.playground",
            "user": actor.get_username(),
            "profile": request.profile,
            "collections": [view.label for view in result.collections],
            "chunks": len(result.context_rows),
            "duration_ms": result.duration_ms,
        },
    )
    return result


def _overrides(request: PlaygroundQuery) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if request.correct_typos:
        overrides["correct_typos"] = True
    filters = _filters(request.filters_json)
    if filters is not None:
        overrides["filters"] = filters
    if request.rerank:
        overrides["rerank"] = parse_rerank_mode(request.rerank)
    if request.retrieval_k is not None:
        overrides["retrieval_k"] = request.retrieval_k
    return overrides


def _filters(text: str) -> FilterExpression | None:
    if not text.strip():
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"The filters are not valid JSON ({exc.msg} at line {exc.lineno}, column "
            f'{exc.colno}); write e.g. {{"key": "topic", "operator": "==", "value": "billing"}}.'
        ) from None
    return filters_from_json(data)


def _user(user_id: int) -> AbstractBaseUser:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise NotFoundError(f"User {user_id} not found; choose a user of this tenant.")
    return user


def _refs(actor: AbstractBaseUser, wanted: Sequence[PlaygroundCollection]) -> list[CollectionRef]:
    """Each chosen collection in its owner's scope: it must be allowlisted and exist."""
    refs = []
    for item in wanted:
        owner = actor if item.user_id is None else _user(item.user_id)
        scope = scope_for(user=owner, collection=item.name, shared=item.user_id is None)
        info = scope.store.get_collection(item.name, owner=scope.owner)
        label = item.name if item.user_id is None else f"{item.name} ({owner.get_username()})"
        refs.append(CollectionRef(info, label=label))
    return refs


def _result(
    found: ProfileContext, profile: LibraryProfile, as_user: AbstractBaseUser, started: float
) -> PlaygroundResult:
    retrieval = found.retrieval
    explanation = retrieval.explanation or RetrievalExplanation((), (), ())
    numbers = {chunk.id: n for n, chunk in enumerate(retrieval.chunks, start=1)}
    views = [
        _collection_view(search.label, search.weight, search.priority, search.outcome, numbers)
        for search in explanation.searches
    ]
    rows = [
        _context_row(n, chunk, explanation, numbers)
        for n, chunk in enumerate(retrieval.chunks, start=1)
    ]
    return PlaygroundResult(
        query=retrieval.query,
        profile=found.profile,
        as_user=as_user.get_username(),
        settings={
            "strategy": profile.search_strategy.value,
            "retrieval_k": profile.retrieval_k,
            "min_relevance": profile.min_relevance,
            "rerank": profile.rerank_mode.value,
            "expand_query": profile.expand_query,
            "correct_typos": profile.correct_typos,
            "vision": profile.vision,
            "filters": "yes" if profile.filters is not None else "none",
        },
        lexical_query=retrieval.lexical_query,
        collections=views,
        candidates=len(explanation.candidates),
        reranked=len(explanation.before_rerank),
        relevance_fallback=retrieval.relevance_fallback,
        skipped=list(found.skipped),
        failures=[f"{failure.label}: {failure.error}" for failure in retrieval.failures],
        context_rows=rows,
        context=found.context.context,
        prompt=answer_prompt(retrieval.query, found.context),
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
    )


def _chunk_view(chunk: ChunkRecord, numbers: dict[str, int]) -> ChunkView:
    title = chunk.metadata.get("title")
    text = " ".join(chunk.content.split())
    excerpt = text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"
    return ChunkView(
        chunk.id, title if isinstance(title, str) else "", excerpt, numbers.get(chunk.id)
    )


def _leg_view(ranking: LegRanking, fused: dict[str, int], numbers: dict[str, int]) -> LegView:
    rows = [
        LegRow(hit.rank, hit.score, _chunk_view(hit.chunk, numbers), fused.get(hit.id))
        for hit in ranking.hits[:ROWS_SHOWN]
    ]
    leg = ranking.leg.value
    return LegView(leg, LEG_NAMES[leg], ranking.query, ranking.weight, rows, len(ranking.hits))


def _collection_view(
    label: str, weight: float, priority: int, outcome: SearchOutcome, numbers: dict[str, int]
) -> CollectionView:
    explanation = outcome.explanation
    fused_ranks = {hit.id: rank for rank, hit in enumerate(outcome.hits, start=1)}
    legs = (
        []
        if explanation is None
        else [_leg_view(ranking, fused_ranks, numbers) for ranking in explanation.legs]
    )
    fused = [
        FusedRow(
            rank,
            hit.score,
            hit.normalized_score,
            _chunk_view(hit.chunk, numbers),
            [
                Contribution(c.leg.value, LEG_NAMES[c.leg.value], c.rank, c.weight, c.value)
                for c in (explanation.contributions_of(hit.id) if explanation else ())
            ],
        )
        for rank, hit in enumerate(outcome.hits[:ROWS_SHOWN], start=1)
    ]
    return CollectionView(
        label=label,
        weight=weight,
        priority=priority,
        strategy=outcome.strategy.value,
        corrected_query=outcome.corrected_query,
        corrections=[f"{c.original} → {c.corrected}" for c in outcome.corrections],
        rrf_k=explanation.rrf_k if explanation else None,
        legs=legs,
        fused=fused,
        fused_total=len(outcome.hits),
    )


def _context_row(
    number: int, chunk: RetrievedChunk, explanation: RetrievalExplanation, numbers: dict[str, int]
) -> ContextRow:
    return ContextRow(
        number=number,
        chunk=_chunk_view(chunk.chunk, numbers),
        collection=chunk.label,
        search_score=chunk.search_score,
        score=chunk.score,
        rank_before_rerank=explanation.rank_before_rerank(chunk.id),
        rerank=chunk.rerank.as_dict() if chunk.rerank is not None else None,
    )
