"""Embedding caches keyed by (model, content hash), so unchanged text is never embedded twice."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["EmbeddingCache", "InMemoryEmbeddingCache"]


@runtime_checkable
class EmbeddingCache(Protocol):
    """Stores L2-normalised vectors by model name and :func:`content_hash_hex` of the text."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        ...

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        ...


class InMemoryEmbeddingCache:
    """A process-local cache in a dict, safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Tuples, so neither the caller's list nor a returned list can change a stored vector.
        self._vectors: dict[tuple[str, str], tuple[float, ...]] = {}

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        """Return the cached vectors among ``hashes`` for ``model``; misses are left out."""
        with self._lock:
            found = {h: self._vectors.get((model, h)) for h in hashes}
        return {h: list(vector) for h, vector in found.items() if vector is not None}

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (hash → vector) for ``model``, replacing any previous entry."""
        entries = {(model, h): tuple(float(x) for x in vector) for h, vector in vectors.items()}
        with self._lock:
            self._vectors.update(entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._vectors.clear()
