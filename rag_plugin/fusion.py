"""Fusing ranked lists by weighted reciprocal rank, and ranking scored results (SPEC S2, S4).

RRF keys on document ids and ignores the lists' raw scores: ``score(d) = Σ w_l / (k + rank_l(d))``
with ranks from 1. Each sum is computed with :func:`math.fsum`, so documents whose
contributions are equal as numbers get equal scores whatever order the lists came in, and ties
are then broken by the best single rank, then by id.

Two sets of fusion settings exist. The seed's (``SEED_WEIGHTS``, ``SEED_RRF_K``: semantic 0.6,
bm25 0.3, fuzzy 0.1, k 60, SPEC S2's figures) are what the seed-compatible
:class:`~rag_plugin.lexical.seed_engine.SearchEngine` uses. The product's defaults
(``HybridWeights()``, ``DEFAULT_RRF_K``: 0.5 / 0.5 / 0.1, k 10) were chosen by the quality
benchmark, as issue 8 asks: on SciFact train and Vaswani with the bundled MiniLM model and the
English analyzer they score nDCG@10 0.715 / 0.489 against 0.683 / 0.493 for the seed's settings
and 0.703 / 0.464 for stock LlamaIndex hybrid (bench/RESULTS.md), and 0.718 / 0.501 since the
engine's dense and BM25 legs hand 50 candidates each to the fusion
(``engine.hybrid_candidates``). The seed's dense-heavy weights let the weaker dense leg outvote
BM25 at the top of the list; a small k sharpens the top ranks.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_plugin.exceptions import InvalidInputError

__all__ = [
    "DEFAULT_RRF_K",
    "SEED_RRF_K",
    "SEED_WEIGHTS",
    "HybridWeights",
    "RrfContribution",
    "RrfFusion",
    "SearchResult",
    "max_score",
    "rank_results",
    "score_normalization",
]

DEFAULT_RRF_K = 10.0
"""The product's RRF ``k`` (chosen by bench/quality.py; see the module docstring)."""

SEED_RRF_K = 60.0
"""The seed's RRF ``k`` (SPEC S2)."""

# Rust's f32::EPSILON: the seed treats a smaller spread as "all scores equal".
_F32_EPSILON = 1.1920929e-07


@dataclass(frozen=True, slots=True)
class HybridWeights:
    """How much each leg of a hybrid search counts in the fusion (defaults: the product's)."""

    semantic: float = 0.5
    bm25: float = 0.5
    fuzzy: float = 0.1

    def __post_init__(self) -> None:
        for name in ("semantic", "bm25", "fuzzy"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInputError(f"Hybrid weight '{name}' must be a number, got {value!r}.")
            if not math.isfinite(value) or value < 0:
                raise InvalidInputError(
                    f"Hybrid weight '{name}' must be a finite number >= 0, got {value!r}."
                )
        if self.total <= 0:
            raise InvalidInputError(
                "Hybrid weights must not all be 0; give semantic, bm25 or fuzzy a positive weight."
            )

    @property
    def total(self) -> float:
        """The sum of the three weights."""
        return float(self.semantic + self.bm25 + self.fuzzy)

    def as_tuple(self) -> tuple[float, float, float]:
        """``(semantic, bm25, fuzzy)``."""
        return (float(self.semantic), float(self.bm25), float(self.fuzzy))


SEED_WEIGHTS = HybridWeights(semantic=0.6, bm25=0.3, fuzzy=0.1)
"""The seed's hybrid weights (SPEC S2)."""


def _validate_k(k: float) -> float:
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k <= 0:
        raise InvalidInputError(f"RRF k must be a finite number > 0, got {k!r}.")
    return float(k)


def _check_weight(weight: float) -> None:
    if isinstance(weight, bool) or not math.isfinite(weight) or weight < 0:
        raise InvalidInputError(f"RRF weights must be finite and >= 0, got {weight!r}.")


def max_score(weights: HybridWeights | Iterable[float], rrf_k: float = DEFAULT_RRF_K) -> float:
    """The highest fused score possible, ``Σw / (k + 1)``: rank 1 in every list."""
    k = _validate_k(rrf_k)
    values = weights.as_tuple() if isinstance(weights, HybridWeights) else tuple(weights)
    return math.fsum(values) / (k + 1.0)


@dataclass(frozen=True, slots=True)
class RrfContribution:
    """What the ``list_index``-th ranked list added to an id's fused score: the term
    ``weight / (k + rank)`` of :meth:`RrfFusion.fuse`'s sum."""

    list_index: int
    rank: int
    weight: float
    value: float


class RrfFusion:
    """Weighted reciprocal rank fusion keyed on ids."""

    def __init__(self, k: float = DEFAULT_RRF_K) -> None:
        self.k = _validate_k(k)

    def __repr__(self) -> str:
        return f"RrfFusion(k={self.k!r})"

    def fuse(self, ranked: Sequence[tuple[Sequence[str], float]]) -> list[tuple[str, float]]:
        """Every id of every list with its fused score, best first.

        A list of weight 0 contributes nothing, and its ids are not added. An id repeated
        within one list counts at its first (best) rank only.
        """
        contributions: dict[str, list[float]] = {}
        best_rank: dict[str, int] = {}
        for ids, weight in ranked:
            _check_weight(weight)
            if weight == 0:
                continue
            seen: set[str] = set()
            for rank, doc_id in enumerate(ids, start=1):
                if doc_id in seen:
                    continue
                seen.add(doc_id)
                contributions.setdefault(doc_id, []).append(weight / (self.k + rank))
                best_rank[doc_id] = min(rank, best_rank.get(doc_id, rank))
        fused = [(doc_id, math.fsum(parts)) for doc_id, parts in contributions.items()]
        fused.sort(key=lambda pair: (-pair[1], best_rank[pair[0]], pair[0]))
        return fused

    def contributions(
        self, ranked: Sequence[tuple[Sequence[str], float]], ids: Collection[str]
    ) -> dict[str, tuple[RrfContribution, ...]]:
        """The terms of :meth:`fuse`'s sum for each of ``ids``, in list order.

        The same terms, computed the same way, so ``math.fsum`` of an id's values is exactly
        its fused score. A separate pass over the lists: :meth:`fuse` does none of this work.
        """
        found: dict[str, list[RrfContribution]] = {}
        for index, (list_ids, weight) in enumerate(ranked):
            _check_weight(weight)
            if weight == 0:
                continue
            seen: set[str] = set()
            for rank, doc_id in enumerate(list_ids, start=1):
                if doc_id in seen:
                    continue
                seen.add(doc_id)
                if doc_id in ids:
                    value = weight / (self.k + rank)
                    found.setdefault(doc_id, []).append(RrfContribution(index, rank, weight, value))
        return {doc_id: tuple(parts) for doc_id, parts in found.items()}

    def max_score(self, weights: HybridWeights | Iterable[float]) -> float:
        """The highest fused score possible with these weights, ``Σw / (k + 1)``."""
        return max_score(weights, rrf_k=self.k)

    def fuse_normalized(
        self, ranked: Sequence[tuple[Sequence[str], float]]
    ) -> list[tuple[str, float]]:
        """:meth:`fuse` with each score divided by the highest possible, so it lies in [0, 1]."""
        ceiling = self.max_score(weight for _, weight in ranked)
        if ceiling <= 0:
            return []
        return [(doc_id, score / ceiling) for doc_id, score in self.fuse(ranked)]


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One search result: an id and its score, with optional content and metadata."""

    id: str
    score: float
    content: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.id} (score={self.score:.4f})"


def rank_results(
    results: Iterable[SearchResult], threshold: float, top_k: int
) -> list[SearchResult]:
    """Drop scores under ``threshold``, keep each id's best copy, best first, at most ``top_k``.

    Ties keep a stable order by id.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InvalidInputError(f"top_k must be zero or a positive integer, got {top_k!r}.")
    if top_k == 0:
        return []
    best: dict[str, SearchResult] = {}
    for result in results:
        if result.score < threshold:
            continue
        kept = best.get(result.id)
        if kept is None or result.score > kept.score:
            best[result.id] = result
    ranked = sorted(best.values(), key=lambda result: (-result.score, result.id))
    return ranked[:top_k]


def score_normalization(scores: Sequence[float]) -> list[float]:
    """Min-max scale ``scores`` to [0, 1] in place order; all 1.0 when they are (nearly) equal."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    spread = high - low
    if spread < _F32_EPSILON:
        return [1.0] * len(scores)
    return [(score - low) / spread for score in scores]
