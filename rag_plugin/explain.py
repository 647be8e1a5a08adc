"""What a search did, leg by leg: the ranked lists the fusion was given and each fused hit's
share of its score (SPEC T6, a retrieval playground).

Asked for with ``CollectionSearcher.search(..., explain=True)``; a search that does not ask
builds none of it. The explanation is the engine's own data, not a recomputation: the legs'
lists are the ones fused, and each :class:`LegContribution` is the term
``weight / (k + rank)`` that :class:`~rag_plugin.fusion.RrfFusion` summed, so a hybrid hit's
contributions add up (with :func:`math.fsum`) to exactly its raw score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from rag_plugin.fusion import RrfFusion
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord, ScoredChunk

__all__ = [
    "LegContribution",
    "LegHit",
    "LegRanking",
    "SearchExplanation",
    "explain_fusion",
    "explain_single",
]


@dataclass(frozen=True, slots=True)
class LegHit:
    """One chunk of a leg's ranked list: its rank (from 1) and the leg's own score."""

    chunk: ChunkRecord
    rank: int
    score: float

    @property
    def id(self) -> str:
        """The chunk's id."""
        return self.chunk.id


@dataclass(frozen=True, slots=True)
class LegRanking:
    """What one leg returned, best first, the text it searched for and its fusion weight.

    ``weight`` is ``None`` for a single-strategy search, whose one leg is not fused.
    """

    leg: SearchStrategy
    query: str
    weight: float | None
    hits: tuple[LegHit, ...]


@dataclass(frozen=True, slots=True)
class LegContribution:
    """What one leg added to a fused hit's score: ``weight / (k + rank)``."""

    leg: SearchStrategy
    rank: int
    weight: float
    value: float


_NO_CONTRIBUTIONS: Mapping[str, tuple[LegContribution, ...]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SearchExplanation:
    """The legs of one search and, for a hybrid search, each returned hit's contributions.

    ``rrf_k`` is the fusion's ``k`` (``None`` when nothing was fused). ``contributions``
    holds the hits the search returned, by chunk id; a leg that did not find a hit adds
    nothing and is absent from its tuple.
    """

    legs: tuple[LegRanking, ...]
    rrf_k: float | None = None
    contributions: Mapping[str, tuple[LegContribution, ...]] = field(
        default_factory=lambda: _NO_CONTRIBUTIONS
    )

    def contributions_of(self, chunk_id: str) -> tuple[LegContribution, ...]:
        """The contributions to the fused score of ``chunk_id`` (empty if it was not fused)."""
        return self.contributions.get(chunk_id, ())


def _ranking(
    leg: SearchStrategy, query: str, weight: float | None, found: Sequence[ScoredChunk]
) -> LegRanking:
    hits = tuple(LegHit(hit.chunk, rank, hit.score) for rank, hit in enumerate(found, start=1))
    return LegRanking(leg, query, weight, hits)


def explain_single(
    leg: SearchStrategy, query: str, found: Sequence[ScoredChunk]
) -> SearchExplanation:
    """The explanation of a single-strategy search: its one leg, unfused."""
    return SearchExplanation((_ranking(leg, query, None, found),))


def explain_fusion(
    fusion: RrfFusion,
    legs: Sequence[tuple[SearchStrategy, str, float, Sequence[ScoredChunk]]],
    kept: Sequence[str],
) -> SearchExplanation:
    """The explanation of a hybrid search: each ``(leg, query, weight, found)`` as fused, and
    the contributions to the fused scores of the ``kept`` chunk ids (the hits returned)."""
    ranked = [([hit.chunk.id for hit in found], weight) for _, _, weight, found in legs]
    wanted = set(kept)
    shares = fusion.contributions(ranked, wanted)
    contributions = {
        chunk_id: tuple(
            LegContribution(legs[share.list_index][0], share.rank, share.weight, share.value)
            for share in shares.get(chunk_id, ())
        )
        for chunk_id in kept
    }
    return SearchExplanation(
        tuple(_ranking(leg, query, weight, found) for leg, query, weight, found in legs),
        fusion.k,
        MappingProxyType(contributions),
    )
