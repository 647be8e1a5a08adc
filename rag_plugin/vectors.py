"""Vector maths shared by every store: normalisation, cosine, distance → similarity, validation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum

from rag_plugin.exceptions import DimensionMismatchError, InvalidInputError, InvalidVectorError


class DistanceMetric(StrEnum):
    """How a store compares vectors; the value is the name used in configuration."""

    COSINE = "cosine"
    L2 = "l2"
    INNER_PRODUCT = "inner_product"

    @classmethod
    def parse(cls, name: str) -> DistanceMetric:
        """Parse a metric name case-insensitively (``ip`` and ``dot`` mean inner product)."""
        key = name.strip().lower().replace("-", "_")
        aliases = {"euclidean": cls.L2, "ip": cls.INNER_PRODUCT, "dot": cls.INNER_PRODUCT}
        if key in aliases:
            return aliases[key]
        try:
            return cls(key)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise InvalidInputError(f"Unknown distance metric: {name}. Use: {valid}") from None


def normalize_embedding(vector: Sequence[float]) -> list[float]:
    """Return ``vector`` scaled to unit L2 length; a zero vector comes back unchanged."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0:
        return list(vector)
    return [x / norm for x in vector]


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between ``a`` and ``b``, clamped to [-1, 1].

    Mismatched lengths, empty vectors and zero magnitudes give 0.0 rather than an error,
    as in the seed system, because a similarity is a ranking signal, not a validation step.
    """
    if len(a) != len(b) or not a:
        return 0.0
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    denominator = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if denominator == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / denominator))


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """``1 - cosine_similarity(a, b)``."""
    return 1.0 - cosine_similarity(a, b)


def distance_to_similarity(distance: float, metric: DistanceMetric | str) -> float:
    """Turn a store's distance into a similarity where higher is better.

    cosine → ``1 - d``; L2 → ``1 / (1 + max(d, 0))``; inner product (pgvector's ``<#>`` is the
    negated dot product) → ``-d``.
    """
    metric = DistanceMetric.parse(metric) if isinstance(metric, str) else metric
    if metric is DistanceMetric.COSINE:
        return 1.0 - distance
    if metric is DistanceMetric.L2:
        return 1.0 / (1.0 + max(distance, 0.0))
    return -distance


def validate_embedding(vector: Sequence[float], dimensions: int | None = None) -> None:
    """Raise :class:`InvalidVectorError` unless ``vector`` is non-empty, finite and sized right."""
    if len(vector) == 0:
        raise InvalidVectorError("embedding must not be empty")
    if not all(math.isfinite(x) for x in vector):
        raise InvalidVectorError("embedding contains non-finite values")
    if dimensions is not None and len(vector) != dimensions:
        raise DimensionMismatchError(dimensions, len(vector))
