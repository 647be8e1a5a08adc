"""The result of typo-correcting a query against a vocabulary."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Correction:
    """One query word replaced by the closest vocabulary word."""

    original: str
    corrected: str
    distance: int


@dataclass(frozen=True, slots=True)
class QueryCorrection:
    """A query after typo correction, with every change made to it (distance > 0 only)."""

    query: str
    corrections: tuple[Correction, ...] = ()
