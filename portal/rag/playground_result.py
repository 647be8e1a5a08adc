"""What the retrieval playground shows (SPEC T6), as plain values: each collection's legs and
fused list, and the numbered context, built from the library's explanation of one retrieval."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from portal.rag.context_retrieval import ProfileContext
from rag_plugin.explain import LegRanking
from rag_plugin.llama_index.query_engine import answer_prompt
from rag_plugin.outcome import SearchOutcome
from rag_plugin.profiles import RetrievalProfile as LibraryProfile
from rag_plugin.retrieval import RetrievalExplanation, RetrievedChunk
from rag_plugin.stores.base import ChunkRecord

ROWS_SHOWN = 20
"""The first rows of each leg's list and of each fused list that the playground shows."""
EXCERPT_CHARS = 160
LEG_NAMES = {"semantic": "dense", "bm25": "BM25", "fuzzy": "fuzzy"}
"""How the page names each leg (the library names the dense leg after its strategy)."""


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


def playground_result(
    found: ProfileContext, profile: LibraryProfile, as_user: AbstractBaseUser, started: float
) -> PlaygroundResult:
    """What the page shows of ``found``, a retrieval explained under ``profile`` as ``as_user``,
    timed from ``started`` (a ``time.perf_counter()``)."""
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
