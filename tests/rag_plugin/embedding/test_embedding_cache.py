"""E7: the in-memory and SQLite embedding caches."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_plugin.embedding.cache import (
    EmbeddingCache,
    InMemoryEmbeddingCache,
    ReadOnlyEmbeddingCache,
    SqliteEmbeddingCache,
)
from rag_plugin.exceptions import StoreError
from rag_plugin.testing import FakeEmbedder


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


@pytest.fixture
def sqlite_cache(tmp_path: Path) -> Iterator[SqliteEmbeddingCache]:
    cache = SqliteEmbeddingCache(tmp_path / "cache" / "embeddings.sqlite3")
    yield cache
    cache.close()


def test_sqlite_cache_satisfies_the_protocol(sqlite_cache: SqliteEmbeddingCache) -> None:
    assert isinstance(sqlite_cache, EmbeddingCache)


def test_sqlite_cache_round_trips_exact_floats_per_model(
    sqlite_cache: SqliteEmbeddingCache,
) -> None:
    vector = [0.1, -0.7071067811865476, 1e-300, 0.0]
    sqlite_cache.put_many("m1", {"h1": vector, "h2": [1.0]})
    sqlite_cache.put_many("m2", {"h1": [2.0]})

    assert sqlite_cache.get_many("m1", ["h1", "h3", "h1"]) == {"h1": vector}
    assert sqlite_cache.get_many("m2", ["h1", "h2"]) == {"h1": [2.0]}
    assert sqlite_cache.get_many("m1", []) == {}
    assert len(sqlite_cache) == 3


def test_sqlite_cache_replaces_an_entry(sqlite_cache: SqliteEmbeddingCache) -> None:
    sqlite_cache.put_many("m", {"h": [1.0, 2.0]})
    sqlite_cache.put_many("m", {"h": [3.0]})

    assert sqlite_cache.get_many("m", ["h"]) == {"h": [3.0]}


def test_sqlite_cache_looks_up_many_hashes_at_once(sqlite_cache: SqliteEmbeddingCache) -> None:
    sqlite_cache.put_many("m", {f"h{i}": [float(i)] for i in range(2000)})

    found = sqlite_cache.get_many("m", [f"h{i}" for i in range(0, 4000, 2)])

    assert len(found) == 1000
    assert found["h1998"] == [1998.0]


def test_sqlite_cache_survives_reopening_and_serves_another_process(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite3"
    first = SqliteEmbeddingCache(path)
    first.put_many("m", {"h": [0.25, 0.5]})
    first.close()
    script = (
        "import sys\n"
        "from rag_plugin.embedding.cache import SqliteEmbeddingCache\n"
        "cache = SqliteEmbeddingCache(sys.argv[1])\n"
        "print(cache.get_many('m', ['h']))\n"
        "cache.put_many('m', {'from-child': [1.0]})\n"
    )
    root = Path(__file__).resolve().parents[3]
    child = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )

    assert child.stdout.strip() == "{'h': [0.25, 0.5]}"
    reopened = SqliteEmbeddingCache(path)
    assert reopened.get_many("m", ["from-child"]) == {"from-child": [1.0]}
    reopened.close()


def test_embedder_with_sqlite_cache_embeds_nothing_the_second_time(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite3"
    first = FakeEmbedder(cache=SqliteEmbeddingCache(path))
    vectors = first.embed(["alpha", "beta"])
    second = FakeEmbedder(cache=SqliteEmbeddingCache(path))

    assert second.embed(["beta", "alpha"]) == [vectors[1], vectors[0]]
    assert second.stats.texts_embedded == 0
    assert second.batches == []


def test_unopenable_sqlite_cache_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")

    with pytest.raises(StoreError, match="Cannot open the embedding cache"):
        SqliteEmbeddingCache(blocker / "embeddings.sqlite3")


def test_a_read_only_cache_serves_cached_vectors_and_stores_nothing() -> None:
    cache = InMemoryEmbeddingCache()
    embedder = FakeEmbedder(8, cache=cache)
    cached = embedder.embed_query("cached question")
    reader = FakeEmbedder(8, cache=ReadOnlyEmbeddingCache(cache))
    assert isinstance(reader.cache, EmbeddingCache)
    assert reader.embed_query("cached question") == cached
    assert reader.stats.cache_hits == 1
    reader.embed_query("a new question")
    assert len(cache) == 1
