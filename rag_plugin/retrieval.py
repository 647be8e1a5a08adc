"""Multi-collection retrieval with weights, priorities, a relevance floor and reranking (R1, R2).

The chatbot seed's ``get_multi_collection_context``, as a library call:

1. ``final_k = retrieval_k`` and ``candidate_k = max(final_k·8, 32)``.
2. Collections are searched in priority order (higher first; equal priorities keep the
   caller's order), each for ``candidate_k`` chunks; each chunk's score is multiplied by its
   collection's ``weight``. A collection whose search fails is logged and skipped (and listed
   in :attr:`RetrievalResult.failures`); an :class:`InvalidInputError` — the caller's own
   arguments are wrong — propagates.
3. All chunks are sorted by score, descending (ties: priority order, then each collection's
   own rank), and the first ``candidate_k`` kept.
4. Chunks scoring at least ``min_relevance`` are kept; if none does, the top ``final_k``
   unfiltered are used instead.
5. The profile's reranker reorders them (a reranker that raises is logged; the order stays).
6. The first ``final_k`` are returned.

The profile's ``filters`` apply inside every leg, before ranking; so does, unless the
profile's model is a vision model, leaving out the chunks whose metadata ``has_image`` is set
(anything but absent, null, ``""``, ``[]``, false or 0), so ``final_k`` chunks come back
whenever that many qualify.

**Scores.** ``min_relevance`` only means something on a bounded score, so a profile searches
with ``semantic`` (the default, as the seed: the similarity clamped to [0, 1], which for
cosine is ``clamp(1 − distance, 0, 1)``) or ``hybrid`` (the engine's normalised RRF score in
[0, 1]). BM25 and fuzzy scores are unbounded and are refused as a profile strategy.

**Query expansion** (L5, ``expand_query``) feeds the expanded terms to the lexical legs of a
hybrid search only; the dense leg embeds the question as asked. Every search, expanded or
not, is one :meth:`CollectionSearcher.search <rag_plugin.engine.CollectionSearcher.search>`
(its ``lexical_query``), so there is one fusion: weighted RRF, ``2·candidate_k`` per leg,
normalised by ``Σw/(k+1)``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_plugin.engine import CollectionSearcher, SearchHit
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import (
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    MetadataFilter,
    as_expression,
)
from rag_plugin.fusion import DEFAULT_RRF_K, HybridWeights
from rag_plugin.lexical.expansion import QueryExpander, normalize_synonyms
from rag_plugin.rerank import Reranker, RerankInfo, RerankMode, make_reranker, parse_rerank_mode
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, Filters

__all__ = [
    "MAX_RETRIEVAL_K",
    "CollectionFailure",
    "CollectionRef",
    "MultiCollectionRetriever",
    "RetrievalProfile",
    "RetrievalResult",
    "RetrievedChunk",
    "candidate_count",
    "reranker_for_profile",
]

logger = logging.getLogger(__name__)

MAX_RETRIEVAL_K = 100
"""The largest ``retrieval_k``: it already means 800 candidates per collection."""

_PROFILE_STRATEGIES = (SearchStrategy.SEMANTIC, SearchStrategy.HYBRID)
_NO_FLOOR = -sys.float_info.max  # the engine wants a finite threshold; this drops nothing


def candidate_count(final_k: int) -> int:
    """How many chunks each collection is asked for: ``max(final_k·8, 32)``."""
    return max(final_k * 8, 32)


@dataclass(frozen=True, slots=True)
class CollectionRef:
    """A collection a profile searches, with its weight, priority and display label.

    The caller resolves which collections a user may search (own or shared); this only
    searches them.
    """

    collection: CollectionInfo
    weight: float = 1.0
    priority: int = 0
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.collection, CollectionInfo):
            raise InvalidInputError(
                f"CollectionRef needs a CollectionInfo, got {type(self.collection).__name__}."
            )
        name = self.collection.name
        if (
            isinstance(self.weight, bool)
            or not isinstance(self.weight, int | float)
            or not math.isfinite(self.weight)
            or self.weight < 0
        ):
            raise InvalidInputError(
                f"The weight of collection '{name}' must be a finite number ≥ 0, "
                f"got {self.weight!r}."
            )
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise InvalidInputError(
                f"The priority of collection '{name}' must be an integer, got {self.priority!r}."
            )
        if self.label is not None and not isinstance(self.label, str):
            raise InvalidInputError(
                f"The label of collection '{name}' must be a string, got {self.label!r}."
            )

    @property
    def display_name(self) -> str:
        """The label, or the collection's name without one."""
        return self.label or self.collection.name


@dataclass(frozen=True, slots=True)
class RetrievedChunk:
    """A chunk found for a profile: its post-weight score, its collection and rerank info."""

    chunk: ChunkRecord
    score: float
    """The search score (in [0, 1]) times the collection's weight: the reported relevance."""
    collection: CollectionInfo
    label: str
    search_score: float
    """The search score before weighting."""
    rerank: RerankInfo | None = None

    @property
    def id(self) -> str:
        """The chunk's id."""
        return self.chunk.id

    @property
    def content(self) -> str:
        """The chunk's text."""
        return self.chunk.content

    @property
    def document_id(self) -> str:
        """The id of the chunk's document."""
        return self.chunk.document_id

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The chunk's metadata (document title, source, tags and the chunk's own)."""
        return self.chunk.metadata

    @property
    def has_image(self) -> bool:
        """Whether the chunk stands for an image (metadata ``has_image`` is truthy)."""
        return bool(self.chunk.metadata.get("has_image"))

    @property
    def ranking_score(self) -> float:
        """The score the final order is based on: the rerank score, else :attr:`score`."""
        return self.rerank.score if self.rerank is not None else self.score

    def with_rerank(self, info: RerankInfo) -> RetrievedChunk:
        """A copy carrying ``info``."""
        return dataclasses.replace(self, rerank=info)


@dataclass(frozen=True, slots=True)
class RetrievalProfile:
    """How a question is answered from several collections (R1); validated on creation.

    ``rerank`` and ``strategy`` accept their names; ``rerank=None`` reads
    ``RAG_RERANK_MODE``. ``rerank_alpha=None`` reads ``RAG_RERANK_ALPHA`` (default 0.15).
    ``vision`` says whether the answering model reads images. ``expand_query`` (hybrid only)
    expands the lexical legs' query with ``language``'s stopwords and the ``synonyms`` table.
    ``include_sources`` is for the caller: whether its response lists the sources.
    """

    retrieval_k: int = 8
    min_relevance: float = 0.05
    include_sources: bool = True
    rerank: RerankMode | str | None = RerankMode.LEXICAL
    reranker_model: str | None = None
    rerank_alpha: float | None = None
    vision: bool = False
    strategy: SearchStrategy | str = SearchStrategy.SEMANTIC
    weights: HybridWeights | None = None
    expand_query: bool = False
    language: str = "english"
    synonyms: Mapping[str, Sequence[str]] = field(default_factory=dict)
    filters: Filters | None = None

    def __post_init__(self) -> None:
        k = self.retrieval_k
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_RETRIEVAL_K:
            raise InvalidInputError(
                f"retrieval_k must be an integer from 1 to {MAX_RETRIEVAL_K}, got {k!r}."
            )
        if not _is_number(self.min_relevance) or not 0.0 <= self.min_relevance <= 1.0:
            raise InvalidInputError(
                f"min_relevance must be a number from 0 to 1, got {self.min_relevance!r}."
            )
        for name in ("include_sources", "vision", "expand_query"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(
                    f"{name} must be true or false, got {getattr(self, name)!r}."
                )
        if self.rerank_alpha is not None and (
            not _is_number(self.rerank_alpha) or not 0.0 <= self.rerank_alpha <= 1.0
        ):
            raise InvalidInputError(
                f"rerank_alpha must be a number from 0 to 1, got {self.rerank_alpha!r}."
            )
        if self.reranker_model is not None and not isinstance(self.reranker_model, str):
            raise InvalidInputError(
                f"reranker_model must be a model name, got {self.reranker_model!r}."
            )
        if self.weights is not None and not isinstance(self.weights, HybridWeights):
            raise InvalidInputError(f"weights must be HybridWeights, got {self.weights!r}.")
        strategy = _profile_strategy(self.strategy)
        object.__setattr__(self, "strategy", strategy)
        object.__setattr__(self, "rerank", parse_rerank_mode(self.rerank))
        if self.expand_query and strategy is not SearchStrategy.HYBRID:
            raise InvalidInputError(
                "expand_query expands the lexical legs, so it needs the hybrid strategy; "
                f"this profile uses {strategy.value}."
            )
        # Built once here: it validates language and synonyms and copies the caller's table.
        expander = QueryExpander(self.language, self.synonyms)
        object.__setattr__(self, "language", expander.language)
        object.__setattr__(self, "synonyms", normalize_synonyms(self.synonyms))
        # Validated once here, and immutable (an expression is frozen).
        object.__setattr__(self, "filters", as_expression(self.filters))

    @property
    def search_strategy(self) -> SearchStrategy:
        """The strategy as a :class:`SearchStrategy` (the field accepts names)."""
        return SearchStrategy.parse(self.strategy)

    @property
    def rerank_mode(self) -> RerankMode:
        """The rerank mode as a :class:`RerankMode` (the field accepts names)."""
        return parse_rerank_mode(self.rerank)

    def expander(self) -> QueryExpander:
        """The query expander of this profile's language and synonym table."""
        return QueryExpander(self.language, self.synonyms)


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _profile_strategy(value: SearchStrategy | str) -> SearchStrategy:
    strategy = SearchStrategy.parse(value)
    if strategy not in _PROFILE_STRATEGIES:
        raise InvalidInputError(
            f"A retrieval profile searches with 'semantic' or 'hybrid' (scores in [0, 1] that "
            f"min_relevance can compare), not {strategy.value!r}."
        )
    return strategy


def reranker_for_profile(profile: RetrievalProfile) -> Reranker:
    """The profile's reranker: its mode, model and α (see :func:`make_reranker`)."""
    return make_reranker(profile.rerank_mode, profile.reranker_model, alpha=profile.rerank_alpha)


@dataclass(frozen=True, slots=True)
class CollectionFailure:
    """A collection that was skipped because its search failed."""

    collection: CollectionInfo
    label: str
    error: str


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """The chunks of one retrieval and what happened on the way."""

    chunks: tuple[RetrievedChunk, ...]
    query: str
    lexical_query: str | None
    """The expanded query the lexical legs searched for, when expansion was on."""
    candidate_k: int
    relevance_fallback: bool
    """True when no candidate reached ``min_relevance`` and the top ``final_k`` were used."""
    failures: tuple[CollectionFailure, ...] = ()


class MultiCollectionRetriever:
    """Searches several collections for a profile and returns its best chunks (R2)."""

    def __init__(
        self,
        searcher: CollectionSearcher,
        *,
        reranker_factory: Callable[[RetrievalProfile], Reranker] = reranker_for_profile,
    ) -> None:
        self.searcher = searcher
        self._reranker_factory = reranker_factory

    def retrieve(
        self,
        query: str,
        collections: Sequence[CollectionRef],
        profile: RetrievalProfile | None = None,
    ) -> list[RetrievedChunk]:
        """The profile's best chunks for ``query`` from ``collections``, best first."""
        return list(self.run(query, collections, profile).chunks)

    def run(
        self,
        query: str,
        collections: Sequence[CollectionRef],
        profile: RetrievalProfile | None = None,
    ) -> RetrievalResult:
        """Like :meth:`retrieve`, with the expanded query, fallback flag and failures."""
        profile = profile if profile is not None else RetrievalProfile()
        if not isinstance(profile, RetrievalProfile):
            raise InvalidInputError(f"profile must be a RetrievalProfile, got {profile!r}.")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("The query is empty; pass some text to search for.")
        refs = _checked_refs(collections)
        final_k = profile.retrieval_k
        candidate_k = candidate_count(final_k)
        lexical_query = None
        if profile.expand_query:
            lexical_query = profile.expander().expanded_query(query) or query

        found: list[RetrievedChunk] = []
        failures: list[CollectionFailure] = []
        # sorted() is stable: equal priorities keep the caller's order.
        for ref in sorted(refs, key=lambda r: -r.priority):
            try:
                scored = self._search(ref.collection, query, lexical_query, profile, candidate_k)
            except InvalidInputError:
                raise
            except Exception as exc:  # as the seed: one broken collection must not stop the rest
                logger.warning(
                    "Searching collection '%s' failed; skipping it.",
                    ref.display_name,
                    exc_info=True,
                )
                failures.append(CollectionFailure(ref.collection, ref.display_name, str(exc)))
                continue
            found.extend(
                RetrievedChunk(chunk, score * ref.weight, ref.collection, ref.display_name, score)
                for chunk, score in scored
            )
        # Stable sort over the priority-ordered list: ties keep priority and per-search rank.
        candidates = sorted(found, key=lambda c: -c.score)[:candidate_k]
        relevant = [c for c in candidates if c.score >= profile.min_relevance]
        fallback = not relevant and bool(candidates)
        if fallback:
            relevant = candidates[:final_k]
        reranked = self._rerank(query, relevant, profile)
        return RetrievalResult(
            chunks=tuple(reranked[:final_k]),
            query=query,
            lexical_query=lexical_query,
            candidate_k=candidate_k,
            relevance_fallback=fallback,
            failures=tuple(failures),
        )

    def _rerank(
        self, query: str, chunks: list[RetrievedChunk], profile: RetrievalProfile
    ) -> list[RetrievedChunk]:
        reranker = self._reranker_factory(profile)
        try:
            return reranker.rerank(query, chunks)
        except Exception:  # as the seed: a broken reranker costs the order, not the answer
            logger.warning(
                "Reranking with %s failed; keeping the retrieval order.",
                type(reranker).__name__,
                exc_info=True,
            )
            return chunks

    def _search(
        self,
        collection: CollectionInfo,
        query: str,
        lexical_query: str | None,
        profile: RetrievalProfile,
        candidate_k: int,
    ) -> list[tuple[ChunkRecord, float]]:
        """The collection's top ``candidate_k`` chunks with scores in [0, 1]."""
        if profile.search_strategy is SearchStrategy.SEMANTIC:
            hits = self._hits(collection, query, SearchStrategy.SEMANTIC, candidate_k, profile)
            return [(hit.chunk, min(1.0, max(0.0, hit.score))) for hit in hits]
        hits = self._hits(
            collection, query, SearchStrategy.HYBRID, candidate_k, profile, lexical_query
        )
        return [(hit.chunk, _normalized(hit)) for hit in hits]

    def _hits(
        self,
        collection: CollectionInfo,
        query: str,
        strategy: SearchStrategy,
        top_k: int,
        profile: RetrievalProfile,
        lexical_query: str | None = None,
    ) -> tuple[SearchHit, ...]:
        return self.searcher.search(
            collection,
            query,
            strategy=strategy,
            top_k=top_k,
            threshold=_NO_FLOOR,
            filters=_leg_filters(profile),
            weights=profile.weights,
            rrf_k=DEFAULT_RRF_K,
            lexical_query=lexical_query,
        ).hits


_WITHOUT_IMAGE = FilterGroup(
    FilterCondition.OR,
    (
        MetadataFilter("has_image", FilterOperator.IS_EMPTY, None),
        MetadataFilter("has_image", FilterOperator.EQ, False),
        MetadataFilter("has_image", FilterOperator.EQ, 0),
    ),
)
"""Chunks whose ``has_image`` is absent or false: what a model without vision can read."""


def _leg_filters(profile: RetrievalProfile) -> FilterExpression | None:
    """The profile's filters, and for a model without vision no image chunks, applied in
    every leg before ranking (so ``retrieval_k`` chunks come back when that many qualify)."""
    filters = as_expression(profile.filters)
    if profile.vision:
        return filters
    if filters is None:
        return _WITHOUT_IMAGE
    return FilterGroup(FilterCondition.AND, (filters, _WITHOUT_IMAGE))


def _normalized(hit: SearchHit) -> float:
    return hit.normalized_score if hit.normalized_score is not None else hit.score


def _checked_refs(collections: Sequence[CollectionRef]) -> list[CollectionRef]:
    if isinstance(collections, str | bytes) or not isinstance(collections, Sequence):
        raise InvalidInputError(
            f"collections must be a list of CollectionRef, got {type(collections).__name__}."
        )
    seen: set[tuple[str | None, str]] = set()
    refs: list[CollectionRef] = []
    for ref in collections:
        if not isinstance(ref, CollectionRef):
            raise InvalidInputError(
                f"collections must hold CollectionRef items, got {type(ref).__name__}."
            )
        key = (ref.collection.owner, ref.collection.name)
        if key in seen:
            raise InvalidInputError(
                f"Collection '{ref.collection.name}' is listed twice; list each collection once."
            )
        seen.add(key)
        refs.append(ref)
    return refs
