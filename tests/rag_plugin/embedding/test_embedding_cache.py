"""E7: the in-memory embedding cache."""

from __future__ import annotations

import threading

from rag_plugin.embedding.cache import EmbeddingCache, InMemoryEmbeddingCache


def test_get_many_returns_only_hits_for_that_model() -> None:
    cache = InMemoryEmbeddingCache()
    cache.put_many("m1", {"h1": [1.0, 0.0], "h2": [0.0, 1.0]})
    cache.put_many("m2", {"h1": [0.5, 0.5]})

    assert cache.get_many("m1", ["h1", "h3"]) == {"h1": [1.0, 0.0]}
    assert cache.get_many("m2", ["h1", "h2"]) == {"h1": [0.5, 0.5]}
    assert cache.get_many("m3", ["h1"]) == {}
    assert len(cache) == 3


def test_put_many_replaces_an_entry() -> None:
    cache = InMemoryEmbeddingCache()
    cache.put_many("m", {"h": [1.0]})
    cache.put_many("m", {"h": [2.0]})

    assert cache.get_many("m", ["h"]) == {"h": [2.0]}


def test_stored_vectors_are_isolated_from_callers() -> None:
    cache = InMemoryEmbeddingCache()
    original = [1.0, 2.0]
    cache.put_many("m", {"h": original})
    original[0] = 99.0
    cache.get_many("m", ["h"])["h"][1] = 99.0

    assert cache.get_many("m", ["h"]) == {"h": [1.0, 2.0]}


def test_clear_forgets_everything() -> None:
    cache = InMemoryEmbeddingCache()
    cache.put_many("m", {"h": [1.0]})
    cache.clear()

    assert cache.get_many("m", ["h"]) == {}
    assert len(cache) == 0


def test_in_memory_cache_satisfies_the_protocol() -> None:
    assert isinstance(InMemoryEmbeddingCache(), EmbeddingCache)


def test_concurrent_writers_lose_no_entries() -> None:
    cache = InMemoryEmbeddingCache()

    def write(worker: int) -> None:
        for i in range(200):
            cache.put_many("m", {f"{worker}-{i}": [float(i)]})

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(cache) == 800
    assert cache.get_many("m", ["3-199"]) == {"3-199": [199.0]}
