"""get_or_create_collection and planned_collection: a collection for the embedder's model."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import (
    CollectionNotFoundError,
    ConfigurationError,
    EmbeddingError,
    InvalidInputError,
)
from rag_plugin.ingest import (
    get_or_create_collection,
    ingest_text,
    ingest_texts,
    planned_collection,
)
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric
from tests.rag_plugin.ingest_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.ingest_helpers import TEXT, WORDS_4


def test_get_or_create_creates_for_the_embedders_model(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    created = get_or_create_collection(
        store,
        "notes",
        embedder=embedder,
        owner="user:2",
        metric=DistanceMetric.INNER_PRODUCT,
        analyzer="seed",
    )
    assert created == CollectionInfo(
        "notes", "user:2", 8, "fake-8", DistanceMetric.INNER_PRODUCT, "seed", 0, 0
    )
    with pytest.raises(CollectionNotFoundError):
        store.get_collection("notes", owner="user:3")


def test_get_or_create_returns_the_existing_collection_with_its_settings(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    ingest_text(store, embedder, collection, TEXT, chunker=WORDS_4)
    again = get_or_create_collection(
        store, "docs", embedder=embedder, owner="user:1", metric=DistanceMetric.L2
    )
    assert again.metric is DistanceMetric.COSINE
    assert (again.document_count, again.chunk_count) == (1, 4)


@pytest.mark.parametrize(
    "embedder", [FakeEmbedder(dimensions=8, model_name="other"), FakeEmbedder(dimensions=4)]
)
def test_get_or_create_refuses_a_collection_of_another_model(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    store.create_collection("docs", dimensions=8, embedding_model="fake-8")
    with pytest.raises(ConfigurationError, match="docs"):
        get_or_create_collection(store, "docs", embedder=embedder)


class _RacingStore(MemoryStore):
    """Another caller creates the collection between our lookup and our create."""

    def get_collection(self, name: str, *, owner: str | None = None) -> CollectionInfo:
        if not self.list_collections(owner=owner) and not getattr(self, "raced", False):
            self.raced = True
            self.create_collection(name, dimensions=8, embedding_model="fake-8", owner=owner)
            raise CollectionNotFoundError(name)
        return super().get_collection(name, owner=owner)


def test_get_or_create_uses_a_collection_created_concurrently(embedder: FakeEmbedder) -> None:
    store = _RacingStore()
    found = get_or_create_collection(store, "docs", embedder=embedder)
    assert found.name == "docs"
    assert [c.name for c in store.list_collections()] == ["docs"]


@pytest.mark.parametrize(
    ("options", "analyzer", "found"),
    [
        # The default analyzer stems and drops stopwords: "run dog" finds "dogs were running".
        ({}, "english", ["0"]),
        ({"analyzer": "seed"}, "seed", []),
    ],
)
def test_new_collections_default_to_the_english_analyzer(
    store: MemoryStore,
    embedder: FakeEmbedder,
    options: dict[str, str],
    analyzer: str,
    found: list[str],
) -> None:
    created = get_or_create_collection(store, "stems", embedder=embedder, **options)
    assert created.analyzer == analyzer
    result = ingest_text(store, embedder, created, "The dogs were running across the fields")
    hits = store.bm25(created, "run dog", 5)
    assert [hit.chunk.id.removeprefix(f"{result.document.id}_") for hit in hits] == found


class FailingEmbedder(FakeEmbedder):
    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the model crashed")


def test_an_ingest_with_create_makes_the_collection_with_its_first_write(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    planned = planned_collection("new", embedder=embedder, owner="user:1")
    assert (planned.dimensions, planned.embedding_model, planned.analyzer) == (
        8,
        embedder.model_name,
        "english",
    )
    (result,) = ingest_texts(
        store, embedder, planned, [(TEXT, None)], chunker=WORDS_4, stored={}, create=True
    )
    info = store.get_collection("new", owner="user:1")
    assert (info.document_count, info.chunk_count, info.analyzer) == (1, 4, "english")
    assert result.document.chunk_count == 4


@pytest.mark.parametrize(
    ("embedder", "text", "error"),
    [
        (FakeEmbedder(dimensions=8), "tiny", InvalidInputError),
        (FailingEmbedder(dimensions=8), TEXT, EmbeddingError),
    ],
    ids=["too-small", "embedder-fails"],
)
def test_an_ingest_with_create_that_fails_leaves_no_collection(
    store: MemoryStore, embedder: FakeEmbedder, text: str, error: type[Exception]
) -> None:
    planned = planned_collection("new", embedder=embedder, owner="user:1")
    with pytest.raises(error):
        ingest_texts(store, embedder, planned, [(text, None)], stored={}, create=True)
    assert store.list_collections(owner="user:1") == []


def test_an_ingest_with_create_needs_what_is_stored(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    planned = planned_collection("new", embedder=embedder)
    with pytest.raises(InvalidInputError, match="needs stored="):
        ingest_texts(store, embedder, planned, [(TEXT, None)], create=True)
