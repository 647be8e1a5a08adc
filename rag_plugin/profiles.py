"""Retrieval profiles (SPEC R1): how a question is answered from several collections.

A :class:`RetrievalProfile` is validated once, when it is made, and is immutable; the
:class:`~rag_plugin.retrieval.MultiCollectionRetriever` runs it. This module also holds
what a profile implies for every search it makes: how many candidates each collection is
asked for (:func:`candidate_count`), its reranker (:func:`reranker_for_profile`) and the
filters every leg applies (:func:`leg_filters`: the profile's own and, for a model without
vision, no image chunks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import (
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    Filters,
    MetadataFilter,
    as_expression,
)
from rag_plugin.fusion import HybridWeights
from rag_plugin.lexical.expansion import QueryExpander, normalize_synonyms
from rag_plugin.rerank import Reranker, RerankMode, make_reranker, parse_rerank_mode
from rag_plugin.search import DEFAULT_STRATEGY, SearchStrategy

__all__ = [
    "MAX_RETRIEVAL_K",
    "RetrievalProfile",
    "candidate_count",
    "leg_filters",
    "reranker_for_profile",
]

MAX_RETRIEVAL_K = 100
"""The largest ``retrieval_k``: it already means 800 candidates per collection."""

_PROFILE_STRATEGIES = (SearchStrategy.SEMANTIC, SearchStrategy.HYBRID)


def candidate_count(final_k: int) -> int:
    """How many chunks each collection is asked for: ``max(final_k·8, 32)``."""
    return max(final_k * 8, 32)


@dataclass(frozen=True, slots=True)
class RetrievalProfile:
    """How a question is answered from several collections (R1); validated on creation.

    ``rerank`` and ``strategy`` accept their names; ``rerank=None`` reads
    ``RAG_RERANK_MODE``. ``rerank_alpha=None`` reads ``RAG_RERANK_ALPHA`` (default 0.15).
    ``vision`` says whether the answering model reads images. ``expand_query`` (hybrid only)
    expands the lexical legs' query with ``language``'s stopwords and the ``synonyms`` table.
    ``correct_typos`` (hybrid only) corrects the lexical legs' words against each
    collection's vocabulary, as the engine's typo correction does for one search.
    ``include_sources`` is for the caller: whether its response lists the sources.
    """

    retrieval_k: int = 8
    min_relevance: float = 0.05
    include_sources: bool = True
    rerank: RerankMode | str | None = RerankMode.LEXICAL
    reranker_model: str | None = None
    rerank_alpha: float | None = None
    vision: bool = False
    strategy: SearchStrategy | str = DEFAULT_STRATEGY
    weights: HybridWeights | None = None
    expand_query: bool = False
    language: str = "english"
    synonyms: Mapping[str, Sequence[str]] = field(default_factory=dict)
    filters: Filters | None = None
    correct_typos: bool = False

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
        for name in ("include_sources", "vision", "expand_query", "correct_typos"):
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
        if self.correct_typos and strategy is not SearchStrategy.HYBRID:
            raise InvalidInputError(
                "correct_typos corrects the lexical legs, so it needs the hybrid strategy; "
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


_WITHOUT_IMAGE = FilterGroup(
    FilterCondition.OR,
    (
        MetadataFilter("has_image", FilterOperator.IS_EMPTY, None),
        MetadataFilter("has_image", FilterOperator.EQ, False),
        MetadataFilter("has_image", FilterOperator.EQ, 0),
    ),
)
"""Chunks whose ``has_image`` is absent or false: what a model without vision can read."""


def leg_filters(profile: RetrievalProfile) -> FilterExpression | None:
    """The profile's filters, and for a model without vision no image chunks, applied in
    every leg before ranking (so ``retrieval_k`` chunks come back when that many qualify)."""
    filters = as_expression(profile.filters)
    if profile.vision:
        return filters
    if filters is None:
        return _WITHOUT_IMAGE
    return FilterGroup(FilterCondition.AND, (filters, _WITHOUT_IMAGE))
