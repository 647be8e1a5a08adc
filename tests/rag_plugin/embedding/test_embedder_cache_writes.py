"""E7: when an embedder writes new vectors to its cache (one write per second of model time,
and whatever stops the work keeps the batches already embedded)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import pytest

from rag_plugin.embedding import base
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.dedup import content_hash_hex
from rag_plugin.exceptions import EmbeddingError
from rag_plugin.testing import FakeEmbedder


class CountingCache(InMemoryEmbeddingCache):
    """Records the size of every write; ``fail_writes`` makes them raise."""

    def __init__(self, *, fail_writes: bool = False) -> None:
        super().__init__()
        self.writes: list[int] = []
        self.fail_writes = fail_writes

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        self.writes.append(len(vectors))
        if self.fail_writes:
            raise OSError("cache unavailable")
        super().put_many(model, vectors)


class FailingOn(FakeEmbedder):
    """Fails on the batch holding ``bad``; ``pause`` seconds per batch otherwise."""

    def __init__(self, bad: str, cache: CountingCache, *, pause: float = 0.0) -> None:
        super().__init__(4, cache=cache, batch_size=1)
        self.bad, self.pause = bad, pause

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        if self.bad in texts:
            raise RuntimeError("onnx failed")
        time.sleep(self.pause)
        return super()._embed_batch(texts)


def cached(cache: InMemoryEmbeddingCache, model: str, *texts: str) -> int:
    return len(cache.get_many(model, [content_hash_hex(text) for text in texts]))


def test_the_batches_of_one_call_are_written_in_one_cache_write() -> None:
    cache = CountingCache()
    embedder = FakeEmbedder(4, cache=cache, batch_size=2)

    embedder.embed(["a", "bb", "ccc", "dddd", "eeeee"])

    assert embedder.stats.batches == 3
    assert cache.writes == [5]


def test_a_long_call_writes_at_least_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "CACHE_PUT_EVERY_S", 0.05)
    cache = CountingCache()
    embedder = FailingOn("never", cache, pause=0.03)

    embedder.embed(["one", "two", "three", "four"])

    # 30 ms or more per batch: the first write comes by the second batch (the first, on a
    # machine slow enough to take 50 ms for it), and every vector is written once.
    assert cache.writes[0] <= 2
    assert len(cache.writes) >= 2
    assert sum(cache.writes) == 4


def test_a_failing_batch_keeps_the_batches_before_it_in_the_cache() -> None:
    cache = CountingCache()
    embedder = FailingOn("three", cache)

    with pytest.raises(EmbeddingError, match="onnx failed"):
        embedder.embed(["one", "two", "three"])

    assert cached(cache, embedder.model_name, "one", "two") == 2
    assert cache.writes == [2]


def test_a_cache_that_fails_too_does_not_hide_the_models_error() -> None:
    cache = CountingCache(fail_writes=True)
    embedder = FailingOn("two", cache)

    with pytest.raises(EmbeddingError, match="onnx failed"):
        embedder.embed(["one", "two"])

    assert cache.writes == [1]


def test_a_cache_write_that_fails_at_the_end_is_the_callers_error() -> None:
    embedder = FakeEmbedder(4, cache=CountingCache(fail_writes=True))

    with pytest.raises(OSError, match="cache unavailable"):
        embedder.embed(["one"])
