"""Grouping ``ragctl ingest-dir``'s text documents into batch requests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["MAX_BATCH_BYTES", "plan_batches"]

T = TypeVar("T")

MAX_BATCH_BYTES = 1024 * 1024
"""JSON bytes of documents per batch request: half the portal's default 2 MiB body limit."""


def plan_batches(
    documents: Sequence[T],
    *,
    max_documents: int,
    max_bytes: int,
    size: Callable[[T], int],
) -> list[tuple[T, ...]]:
    """Consecutive groups of at most ``max_documents`` and ``max_bytes`` (by ``size``), in order.

    A document bigger than ``max_bytes`` on its own makes a group of one.
    """
    batches: list[tuple[T, ...]] = []
    current: list[T] = []
    current_bytes = 0
    for document in documents:
        document_bytes = size(document)
        if current and (
            len(current) >= max_documents or current_bytes + document_bytes > max_bytes
        ):
            batches.append(tuple(current))
            current, current_bytes = [], 0
        current.append(document)
        current_bytes += document_bytes
    if current:
        batches.append(tuple(current))
    return batches
