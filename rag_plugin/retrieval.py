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

**Explanation** (``run(..., explain=True)``, a retrieval playground's view): the result also
carries each collection's explained search (:class:`CollectionSearch`: its legs' ranked lists
and the fused hits' contributions) and the list the reranker was given, so the rerank's
effect is each chunk's rank before and after. The chunks are the same as without it.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.fusion import DEFAULT_RRF_K
from rag_plugin.outcome import SearchHit, SearchOutcome
from rag_plugin.profiles import (
    MAX_RETRIEVAL_K,
    RetrievalProfile,
    candidate_count,
    leg_filters,
    reranker_for_profile,
)
from rag_plugin.rerank import Reranker, RerankInfo
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, CollectionInfo

__all__ = [
    # The profile's names, also importable from here (rag_plugin.profiles holds them).
    "MAX_RETRIEVAL_K",
    "CollectionFailure",
    "CollectionRef",
    "CollectionSearch",
    "MultiCollectionRetriever",
    "RetrievalExplanation",
    "RetrievalProfile",
    "RetrievalResult",
    "RetrievedChunk",
    "candidate_count",
    "reranker_for_profile",
]

logger = logging.getLogger(__name__)

_NO_FLOOR = -sys.float_info.max  # the engine wants a finite threshold; this drops nothing


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
class CollectionFailure:
    """A collection that was skipped because its search failed."""

    collection: CollectionInfo
    label: str
    error: str


@dataclass(frozen=True, slots=True)
class CollectionSearch:
    """One collection's search in an explained retrieval: its weight and the engine's
    outcome, whose :attr:`~rag_plugin.outcome.SearchOutcome.explanation` has the legs."""

    collection: CollectionInfo
    label: str
    weight: float
    priority: int
    outcome: SearchOutcome


@dataclass(frozen=True, slots=True)
class RetrievalExplanation:
    """How an explained retrieval reached its chunks."""

    searches: tuple[CollectionSearch, ...]
    """Each collection searched, in search (priority) order; failed ones are not here."""
    candidates: tuple[RetrievedChunk, ...]
    """Every collection's chunks merged by weighted score, the first ``candidate_k``."""
    before_rerank: tuple[RetrievedChunk, ...]
    """What the reranker was given, in order: the candidates that reached
    ``min_relevance`` (or the first ``final_k`` of them, on the fallback)."""

    def rank_before_rerank(self, chunk_id: str) -> int | None:
        """The chunk's rank (from 1) in the list the reranker was given, if it was there."""
        for rank, chunk in enumerate(self.before_rerank, start=1):
            if chunk.id == chunk_id:
                return rank
        return None


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
    explanation: RetrievalExplanation | None = None
    """The collections' explained searches and the order before the rerank, when asked."""


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
        *,
        explain: bool = False,
    ) -> RetrievalResult:
        """Like :meth:`retrieve`, with the expanded query, fallback flag and failures;
        ``explain`` adds the :class:`RetrievalExplanation`."""
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
        searches: list[CollectionSearch] = []
        # sorted() is stable: equal priorities keep the caller's order.
        for ref in sorted(refs, key=lambda r: -r.priority):
            try:
                outcome = self._search(
                    ref.collection, query, lexical_query, profile, candidate_k, explain
                )
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
            if explain:
                searches.append(
                    CollectionSearch(
                        ref.collection, ref.display_name, ref.weight, ref.priority, outcome
                    )
                )
            found.extend(
                RetrievedChunk(
                    hit.chunk, score * ref.weight, ref.collection, ref.display_name, score
                )
                for hit, score in _bounded_scores(outcome)
            )
        # Stable sort over the priority-ordered list: ties keep priority and per-search rank.
        candidates = sorted(found, key=lambda c: -c.score)[:candidate_k]
        relevant = [c for c in candidates if c.score >= profile.min_relevance]
        fallback = not relevant and bool(candidates)
        if fallback:
            relevant = candidates[:final_k]
        reranked = self._rerank(query, relevant, profile)
        explanation = (
            RetrievalExplanation(tuple(searches), tuple(candidates), tuple(relevant))
            if explain
            else None
        )
        return RetrievalResult(
            chunks=tuple(reranked[:final_k]),
            query=query,
            lexical_query=lexical_query,
            candidate_k=candidate_k,
            relevance_fallback=fallback,
            failures=tuple(failures),
            explanation=explanation,
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
        explain: bool,
    ) -> SearchOutcome:
        """The collection's top ``candidate_k`` chunks by the profile's strategy."""
        semantic = profile.search_strategy is SearchStrategy.SEMANTIC
        return self.searcher.search(
            collection,
            query,
            strategy=SearchStrategy.SEMANTIC if semantic else SearchStrategy.HYBRID,
            top_k=candidate_k,
            threshold=_NO_FLOOR,
            correct_typos=profile.correct_typos,
            filters=leg_filters(profile),
            weights=profile.weights,
            rrf_k=DEFAULT_RRF_K,
            lexical_query=None if semantic else lexical_query,
            explain=explain,
        )


def _bounded_scores(outcome: SearchOutcome) -> list[tuple[SearchHit, float]]:
    """Each hit with its score in [0, 1]: the similarity clamped (semantic), else the
    normalised RRF score."""
    if outcome.strategy is SearchStrategy.SEMANTIC:
        return [(hit, min(1.0, max(0.0, hit.score))) for hit in outcome.hits]
    return [
        (hit, hit.normalized_score if hit.normalized_score is not None else hit.score)
        for hit in outcome.hits
    ]


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
