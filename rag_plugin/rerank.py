"""Rerankers for retrieved chunks: lexical overlap, a cross-encoder, or none (SPEC R3).

Decisions:

- A reranker never mutates what it is given: it returns a new list whose items are copies
  carrying a :class:`RerankInfo` (see :class:`Rerankable`); the input's ``score`` is kept, so
  the post-weight relevance stays reportable (the seed reports relevance before reranking).
- **Lexical** (the seed's ``rerank_results``): tokens are ``[\\wäöüÄÖÜß]+`` of the lowercased
  text with at least 2 characters; ``overlap = |Q ∩ T| / max(1, |Q|)`` on sets;
  ``s = (1 − α)·score + α·overlap``. The order is by ``round(s, 4)`` descending with a stable
  sort, exactly as the seed sorted by its stored, rounded score. A query without tokens
  returns the input order unchanged. ``α`` is the explicit value, else ``RAG_RERANK_ALPHA``,
  else 0.15; an unparsable environment value gives 0.15; every value is clamped to [0, 1].
- **Cross-encoder** scores ``(query, content)`` pairs with a model that has fastembed's
  ``TextCrossEncoder.rerank(query, documents)`` interface, loaded offline only
  (:mod:`rag_plugin.cross_encoder`). Any failure — the model cannot be loaded, or scoring
  raises — is logged and the lexical reranker is used instead.
- **Mode names** follow the seed: ``off``/``false``/``0``/``disabled``/``none``;
  ``cross-encoder``/``cross_encoder``/``ce``; ``lexical``. Unlike the seed, an unknown name is
  an error naming the valid ones rather than a silent fallback to lexical; ``None`` reads
  ``RAG_RERANK_MODE`` (default ``lexical``).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, Self, TypeVar

from rag_plugin.cross_encoder import CrossEncoderLoader, load_cross_encoder
from rag_plugin.exceptions import ConfigurationError, InvalidInputError

__all__ = [
    "ALPHA_ENV",
    "DEFAULT_ALPHA",
    "DEFAULT_CROSS_ENCODER_MODEL",
    "MODEL_ENV",
    "MODE_ENV",
    "CrossEncoderReranker",
    "LexicalReranker",
    "NoReranker",
    "RerankInfo",
    "RerankMode",
    "Rerankable",
    "Reranker",
    "make_reranker",
    "parse_rerank_mode",
    "rerank_alpha",
    "rerank_tokens",
]

logger = logging.getLogger(__name__)

ALPHA_ENV = "RAG_RERANK_ALPHA"
MODE_ENV = "RAG_RERANK_MODE"
MODEL_ENV = "RAG_RERANKER_MODEL"
DEFAULT_ALPHA = 0.15
DEFAULT_CROSS_ENCODER_MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"
"""fastembed's smallest cross-encoder; used when cross-encoder mode names no model."""

_TOKEN = re.compile(r"[\wäöüÄÖÜß]+")


class RerankMode(StrEnum):
    """How retrieved chunks are reordered."""

    LEXICAL = "lexical"
    CROSS_ENCODER = "cross-encoder"
    OFF = "off"


_MODE_ALIASES = {
    "lexical": RerankMode.LEXICAL,
    "cross-encoder": RerankMode.CROSS_ENCODER,
    "cross_encoder": RerankMode.CROSS_ENCODER,
    "ce": RerankMode.CROSS_ENCODER,
    "off": RerankMode.OFF,
    "false": RerankMode.OFF,
    "0": RerankMode.OFF,
    "disabled": RerankMode.OFF,
    "none": RerankMode.OFF,
}
_VALID_MODES = "lexical, cross-encoder (cross_encoder, ce), off (false, 0, disabled, none)"


@dataclass(frozen=True, slots=True)
class RerankInfo:
    """What a reranker did to one chunk; :meth:`as_dict` gives the seed's ``rerank`` dict."""

    mode: str
    score: float
    alpha: float | None = None
    overlap: float | None = None
    model: str | None = None
    original_score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The seed's keys: lexical ``mode, alpha, overlap, score``; cross-encoder
        ``mode, model, score, orig_score``."""
        if self.mode == RerankMode.LEXICAL.value:
            return {
                "mode": self.mode,
                "alpha": self.alpha,
                "overlap": self.overlap,
                "score": self.score,
            }
        return {
            "mode": self.mode,
            "model": self.model,
            "score": self.score,
            "orig_score": self.original_score,
        }


class Rerankable(Protocol):
    """A retrieved item a reranker can reorder: its text, its score, and a copy with info."""

    @property
    def content(self) -> str:
        """The text the query is compared with."""
        ...

    @property
    def score(self) -> float:
        """The retrieval score (higher is better)."""
        ...

    @property
    def rerank(self) -> RerankInfo | None:
        """What a reranker did to this item, if any."""
        ...

    def with_rerank(self, info: RerankInfo) -> Self:
        """A copy of this item carrying ``info``."""
        ...


T = TypeVar("T", bound=Rerankable)


class Reranker(Protocol):
    """Reorders retrieved items for a query; returns a new list, never mutates its input."""

    def rerank(self, query: str, items: Sequence[T]) -> list[T]:
        """Return ``items`` reordered (copies with rerank info where a score was computed)."""
        ...


def rerank_tokens(text: str) -> set[str]:
    """The seed reranker's tokens: lowercase ``[\\wäöüÄÖÜß]+`` runs of at least 2 characters."""
    return {token for token in _TOKEN.findall(text.lower()) if len(token) >= 2}


def rerank_alpha(value: float | str | None = None) -> float:
    """α for lexical reranking: ``value``, else ``RAG_RERANK_ALPHA``, else 0.15; clamped.

    A string that is not a finite number gives the default, as in the seed.
    """
    if value is None:
        value = os.environ.get(ALPHA_ENV)
        if value is None or not value.strip():
            return DEFAULT_ALPHA
    try:
        alpha = float(value)
    except (TypeError, ValueError):
        logger.warning("%s=%r is not a number; using alpha %s.", ALPHA_ENV, value, DEFAULT_ALPHA)
        return DEFAULT_ALPHA
    if not math.isfinite(alpha):
        logger.warning("Rerank alpha %r is not finite; using %s.", value, DEFAULT_ALPHA)
        return DEFAULT_ALPHA
    return min(1.0, max(0.0, alpha))


class NoReranker:
    """Keeps the retrieval order (mode ``off``)."""

    def rerank(self, query: str, items: Sequence[T]) -> list[T]:
        """Return the items unchanged, in a new list."""
        return list(items)


class LexicalReranker:
    """Blends the retrieval score with the query's token overlap (the seed's default)."""

    def __init__(self, alpha: float | str | None = None) -> None:
        self.alpha = rerank_alpha(alpha)

    def rerank(self, query: str, items: Sequence[T]) -> list[T]:
        """Reorder by ``(1 − α)·score + α·overlap``; a query without tokens keeps the order."""
        query_tokens = rerank_tokens(query)
        if not query_tokens:
            return list(items)
        alpha = self.alpha
        scored: list[T] = []
        for item in items:
            overlap = len(query_tokens & rerank_tokens(item.content)) / max(1, len(query_tokens))
            blended = (1.0 - alpha) * float(item.score) + alpha * overlap
            info = RerankInfo(
                mode=RerankMode.LEXICAL.value,
                score=round(blended, 4),
                alpha=alpha,
                overlap=round(overlap, 4),
            )
            scored.append(item.with_rerank(info))
        return _sorted_by_rerank(scored)


class CrossEncoderReranker:
    """Orders by a cross-encoder's score; on any failure, falls back to ``fallback`` (lexical).

    ``loader`` turns a model name into a :class:`~rag_plugin.cross_encoder.CrossEncoderModel`;
    the default, :func:`~rag_plugin.cross_encoder.load_cross_encoder`, loads fastembed models
    offline and keeps the last four.
    """

    def __init__(
        self,
        model_name: str,
        *,
        fallback: Reranker | None = None,
        loader: CrossEncoderLoader | None = None,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise InvalidInputError(
                f"A cross-encoder reranker needs a model name, got {model_name!r}."
            )
        self.model_name = model_name.strip()
        self.fallback: Reranker = fallback if fallback is not None else LexicalReranker()
        self._loader: CrossEncoderLoader = loader if loader is not None else load_cross_encoder

    def rerank(self, query: str, items: Sequence[T]) -> list[T]:
        """Reorder by the model's score, or by the fallback if the model fails."""
        if not items:
            return []
        try:
            model = self._loader(self.model_name)
            scores = [float(s) for s in model.rerank(query, [item.content for item in items])]
            if len(scores) != len(items):
                raise ValueError(f"the model returned {len(scores)} scores for {len(items)} texts")
            if not all(math.isfinite(score) for score in scores):
                raise ValueError("the model returned a score that is not a finite number")
        except Exception as exc:  # any model or runtime failure means: use the fallback
            logger.warning(
                "Cross-encoder reranking with '%s' failed (%s); falling back to %s.",
                self.model_name,
                exc,
                type(self.fallback).__name__,
            )
            return self.fallback.rerank(query, items)
        scored = [
            item.with_rerank(
                RerankInfo(
                    mode=RerankMode.CROSS_ENCODER.value,
                    score=score,
                    model=self.model_name,
                    original_score=float(item.score),
                )
            )
            for item, score in zip(items, scores, strict=True)
        ]
        return _sorted_by_rerank(scored)


def _sorted_by_rerank(items: list[T]) -> list[T]:
    # Python's sort is stable, so equal scores keep the retrieval order (as in the seed).
    return sorted(items, key=lambda item: -_rerank_score(item))


def _rerank_score(item: Rerankable) -> float:
    info = item.rerank
    return info.score if info is not None else float(item.score)


def parse_rerank_mode(value: RerankMode | str | None) -> RerankMode:
    """The :class:`RerankMode` for a name; ``None`` reads ``RAG_RERANK_MODE`` (default lexical).

    Raises :class:`InvalidInputError` for an unknown name and :class:`ConfigurationError` for
    an unknown ``RAG_RERANK_MODE``.
    """
    if isinstance(value, RerankMode):
        return value
    if value is None:
        configured = os.environ.get(MODE_ENV, "").strip().lower()
        if not configured:
            return RerankMode.LEXICAL
        mode = _MODE_ALIASES.get(configured)
        if mode is None:
            raise ConfigurationError(
                f"{MODE_ENV}={configured!r} is not a rerank mode; use one of: {_VALID_MODES}."
            )
        return mode
    if not isinstance(value, str):
        raise InvalidInputError(f"Unknown rerank mode {value!r}; use one of: {_VALID_MODES}.")
    mode = _MODE_ALIASES.get(value.strip().lower())
    if mode is None:
        raise InvalidInputError(f"Unknown rerank mode {value!r}; use one of: {_VALID_MODES}.")
    return mode


def make_reranker(
    mode: RerankMode | str | None = None,
    model: str | None = None,
    *,
    alpha: float | str | None = None,
    loader: CrossEncoderLoader | None = None,
) -> Reranker:
    """The reranker for ``mode``; cross-encoder uses ``model``, else ``RAG_RERANKER_MODEL``,
    else :data:`DEFAULT_CROSS_ENCODER_MODEL`, and falls back to lexical with ``alpha``."""
    chosen = parse_rerank_mode(mode)
    if chosen is RerankMode.OFF:
        return NoReranker()
    lexical = LexicalReranker(alpha)
    if chosen is RerankMode.LEXICAL:
        return lexical
    name = (model or "").strip() or os.environ.get(MODEL_ENV, "").strip()
    return CrossEncoderReranker(
        name or DEFAULT_CROSS_ENCODER_MODEL, fallback=lexical, loader=loader
    )
