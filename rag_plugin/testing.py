"""Test doubles shipped with the library: a deterministic, dependency-free fake embedder."""

from __future__ import annotations

import hashlib
import struct
import threading

from rag_plugin.embedding.base import DEFAULT_BATCH_SIZE, Embedder
from rag_plugin.embedding.cache import EmbeddingCache
from rag_plugin.exceptions import InvalidInputError

__all__ = ["FakeEmbedder", "fake_vector"]

_WORDS_PER_DIGEST = 8  # a SHA-256 digest holds eight unsigned 32-bit words


class FakeEmbedder(Embedder):
    """Hash-based vectors: the same text always gets the same vector, similar texts need not.

    Every batch the base class sends to the "model" is recorded in :attr:`batches`, so tests
    can assert exactly what a backend would have seen.
    """

    def __init__(
        self,
        dimensions: int = 16,
        *,
        model_name: str | None = None,
        cache: EmbeddingCache | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise InvalidInputError(f"dimensions must be a positive integer, got {dimensions!r}.")
        super().__init__(cache=cache, batch_size=batch_size)
        self._dimensions = dimensions
        self._model_name = model_name or f"fake-{dimensions}"
        self._batches_lock = threading.Lock()
        self.batches: list[list[str]] = []

    @property
    def model_name(self) -> str:
        """``fake-<dimensions>`` unless a name was given."""
        return self._model_name

    @property
    def dimensions(self) -> int:
        """The configured dimension."""
        return self._dimensions

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        with self._batches_lock:
            self.batches.append(list(texts))
        return [fake_vector(text, self._dimensions) for text in texts]


def fake_vector(text: str, dimensions: int) -> list[float]:
    """A deterministic vector in [-1, 1]^dimensions derived from SHA-256 of ``text``."""
    values: list[float] = []
    block = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{block}:{text}".encode()).digest()
        words = struct.unpack(f"<{_WORDS_PER_DIGEST}I", digest)
        values.extend(word / 0xFFFFFFFF * 2.0 - 1.0 for word in words)
        block += 1
    return values[:dimensions]
