"""The embedding cache kept in Qdrant (E7 for a Qdrant deployment), in local mode."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_plugin.embedding.cache import EmbeddingCache
from rag_plugin.stores.qdrant import QdrantEmbeddingCache, QdrantStore
from rag_plugin.testing import FakeEmbedder


@pytest.fixture
def store() -> Iterator[QdrantStore]:
    store = QdrantStore(location=":memory:")
    yield store
    store.close()


def test_the_cache_satisfies_the_protocol(store: QdrantStore) -> None:
    assert isinstance(store.embedding_cache(), EmbeddingCache)
    assert isinstance(store.embedding_cache(), QdrantEmbeddingCache)


def test_vectors_round_trip_exactly_per_model(store: QdrantStore) -> None:
    cache = store.embedding_cache()
    vector = [0.1, -0.7071067811865476, 1e-300, 0.0]
    cache.put_many("m1", {"h1": vector, "h2": [1.0]})
    cache.put_many("m2", {"h1": [2.0]})

    assert cache.get_many("m1", ["h1", "h3", "h1"]) == {"h1": vector}
    assert cache.get_many("m2", ["h1", "h2"]) == {"h1": [2.0]}
    assert cache.get_many("m1", []) == {}
    assert len(cache) == 3


def test_put_many_replaces_an_entry(store: QdrantStore) -> None:
    cache = store.embedding_cache()
    cache.put_many("m", {"h": [1.0, 2.0]})
    cache.put_many("m", {"h": [3.0]})

    assert cache.get_many("m", ["h"]) == {"h": [3.0]}


def test_many_hashes_are_looked_up_in_batches(store: QdrantStore) -> None:
    cache = store.embedding_cache()
    cache.put_many("m", {f"h{i}": [float(i)] for i in range(2500)})

    found = cache.get_many("m", [f"h{i}" for i in range(0, 5000, 2)])

    assert len(found) == 1250
    assert found["h2498"] == [2498.0]


def test_namespaces_keep_their_caches_apart(store: QdrantStore) -> None:
    acme, globex = store.for_namespace("acme"), store.for_namespace("globex")
    acme.embedding_cache().put_many("m", {"h": [1.0]})

    assert globex.embedding_cache().get_many("m", ["h"]) == {}
    assert acme.embedding_cache().get_many("m", ["h"]) == {"h": [1.0]}
    assert (len(acme.embedding_cache()), len(globex.embedding_cache())) == (1, 0)


def test_an_embedder_with_the_cache_never_embeds_a_text_twice_across_reopening(
    tmp_path: Path,
) -> None:
    texts = ["walrus tusks", "penguin feathers"]
    first = QdrantStore(path=tmp_path / "qdrant")
    embedder = FakeEmbedder(dimensions=8, cache=first.embedding_cache())
    vectors = embedder.embed(texts)
    first.close()

    reopened = QdrantStore(path=tmp_path / "qdrant")
    again = FakeEmbedder(dimensions=8, cache=reopened.embedding_cache())
    assert again.embed([*texts, "seal whiskers"])[:2] == vectors
    assert (again.stats.texts_embedded, again.stats.cache_hits) == (1, 2)
    reopened.close()


def test_deleting_a_namespace_deletes_its_cache_only(store: QdrantStore) -> None:
    acme, globex = store.for_namespace("acme"), store.for_namespace("globex")
    acme.embedding_cache().put_many("m", {"h": [1.0]})
    globex.embedding_cache().put_many("m", {"h": [2.0]})

    store.drop_namespace("acme")

    assert acme.embedding_cache().get_many("m", ["h"]) == {}
    assert globex.embedding_cache().get_many("m", ["h"]) == {"h": [2.0]}


def test_clear_forgets_the_namespaces_vectors_only(store: QdrantStore) -> None:
    acme, globex = store.for_namespace("acme"), store.for_namespace("globex")
    acme.embedding_cache().put_many("m", {"h": [1.0]})
    globex.embedding_cache().put_many("m", {"h": [2.0]})

    acme.embedding_cache().clear()

    assert (len(acme.embedding_cache()), len(globex.embedding_cache())) == (0, 1)
