"""What a search of one collection returns: its hits, the query as searched, and reranking them.

:class:`~rag_plugin.engine.CollectionSearcher` makes a :class:`SearchOutcome`;
:func:`rerank_outcome` reorders its hits with a :mod:`~rag_plugin.rerank` reranker.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rag_plugin.explain import SearchExplanation
from rag_plugin.rerank import Reranker, RerankInfo
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, Correction

__all__ = ["SearchHit", "SearchOutcome", "rerank_outcome"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One chunk found by a search, with the strategy's score (higher is better)."""

    chunk: ChunkRecord
    score: float
    normalized_score: float | None = None
    rerank: RerankInfo | None = None

    @property
    def id(self) -> str:
        """The chunk's id."""
        return self.chunk.id


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """The hits of one search and what the engine did to the query on the way."""

    hits: tuple[SearchHit, ...]
    strategy: SearchStrategy
    query: str
    corrected_query: str | None = None
    corrections: tuple[Correction, ...] = ()
    explanation: SearchExplanation | None = None
    """Each leg's ranked list and the hits' contributions, when the search was asked to
    explain itself."""


@dataclass(frozen=True, slots=True)
class _Scaled:
    """A hit as a reranker sees it: its text and its score on a [0, 1]-like scale."""

    hit: SearchHit
    score: float
    rerank: RerankInfo | None = None

    @property
    def content(self) -> str:
        return self.hit.chunk.content

    def with_rerank(self, info: RerankInfo) -> _Scaled:
        return dataclasses.replace(self, rerank=info)


def rerank_outcome(reranker: Reranker, outcome: SearchOutcome) -> SearchOutcome:
    """``outcome`` with its hits reordered by ``reranker``, each carrying what it computed.

    A reranker blends the retrieval score with its own, so it gets a score on the scale of
    similarities: a hybrid hit's normalised score, a dense hit's similarity, and a BM25 or
    fuzzy hit's score divided by the best one's (their raw scores are unbounded). The hits
    keep their own scores.
    """
    hits = outcome.hits
    if not hits:
        return outcome
    if outcome.strategy is SearchStrategy.HYBRID:
        scaled = [_Scaled(hit, float(hit.normalized_score or 0.0)) for hit in hits]
    elif outcome.strategy is SearchStrategy.SEMANTIC:
        scaled = [_Scaled(hit, hit.score) for hit in hits]
    else:
        top = max(hit.score for hit in hits)
        scaled = [_Scaled(hit, hit.score / top if top > 0 else 0.0) for hit in hits]
    # The words the lexical legs searched for: the corrected ones, when typos were corrected.
    reordered = reranker.rerank(outcome.corrected_query or outcome.query, scaled)
    return dataclasses.replace(
        outcome, hits=tuple(dataclasses.replace(item.hit, rerank=item.rerank) for item in reordered)
    )
