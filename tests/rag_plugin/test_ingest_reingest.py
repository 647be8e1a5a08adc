"""Ingesting a source again: unchanged, re-described or re-chunked, and stored sources given."""

from __future__ import annotations

import dataclasses

import pytest

from rag_plugin.chunking import ChunkerConfig, ChunkingStrategy, TextChunker
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.ingest import StoredSource, get_or_create_collection, ingest_text, ingest_texts
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, DocumentInput, DocumentRecord
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from tests.rag_plugin.ingest_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.ingest_helpers import TEXT, WORDS_4


def test_reingesting_an_unchanged_document_redoes_nothing(
    store: MemoryStore, collection: CollectionInfo
) -> None:
    embedder = FakeEmbedder(dimensions=8, cache=InMemoryEmbeddingCache())
    document = DocumentInput(source="n.txt", title="Notes", tags=("a",))
    first = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)
    calls = embedder.stats.calls
    second = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)

    assert (first.unchanged, second.unchanged) == (False, True)
    assert second.document == first.document
    assert second.chunk_ids == first.chunk_ids
    assert embedder.stats.calls == calls  # not even a cache lookup
    assert store.get_collection("docs", owner="user:1").document_count == 1


@pytest.mark.parametrize(
    "change",
    [
        {"title": "Renamed"},
        {"tags": ("b",)},
        {"metadata": {"lang": "en"}},
    ],
)
def test_a_changed_description_rewrites_the_document_from_the_embedding_cache(
    store: MemoryStore, collection: CollectionInfo, change: dict[str, object]
) -> None:
    embedder = FakeEmbedder(dimensions=8, cache=InMemoryEmbeddingCache())
    document = DocumentInput(source="n.txt", title="Notes", tags=("a",))
    first = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)
    changed = dataclasses.replace(document, **change)  # type: ignore[arg-type]
    second = ingest_text(store, embedder, collection, TEXT, document=changed, chunker=WORDS_4)

    assert second.unchanged is False
    assert second.document.id == first.document.id
    assert embedder.stats.texts_embedded == 4  # the second pass came from the cache
    assert embedder.stats.cache_hits == 4
    assert store.get_collection("docs", owner="user:1").document_count == 1


def test_a_changed_chunking_reingests_the_same_text(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    document = DocumentInput(source="n.txt")
    first = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)
    other = TextChunker(ChunkerConfig(ChunkingStrategy.CHARACTER, 40, 0, 5))
    second = ingest_text(store, embedder, collection, TEXT, document=document, chunker=other)

    assert second.unchanged is False
    assert second.document.metadata["chunking"] == "character:40:0:5"
    assert first.document.metadata["chunking"] != second.document.metadata["chunking"]
    assert [c.content for c in second.chunks] == [c.content for c in other.chunk(TEXT)]


class _CountingStore(MemoryStore):
    """Counts the reads ingest_text makes to decide whether a source changed."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[str] = []

    def find_document(self, collection: CollectionInfo, *, source: str) -> DocumentRecord | None:
        self.lookups.append(f"find {source}")
        return super().find_document(collection, source=source)

    def document_chunks(self, collection: CollectionInfo, document_id: str) -> list[ChunkRecord]:
        self.lookups.append("chunks")
        return super().document_chunks(collection, document_id)


def test_a_stored_source_given_by_the_caller_replaces_the_lookups(
    embedder: FakeEmbedder,
) -> None:
    store = _CountingStore()
    collection = get_or_create_collection(store, "docs", embedder=embedder)
    document = DocumentInput(source="n.txt", title="Notes")
    first = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)
    stored = StoredSource(first.document, first.chunks)
    again = ingest_text(
        store, embedder, collection, TEXT, document=document, chunker=WORDS_4, stored=stored
    )
    retitled = dataclasses.replace(document, title="Renamed")
    changed = ingest_text(
        store, embedder, collection, TEXT, document=retitled, chunker=WORDS_4, stored=stored
    )
    new = ingest_text(
        store,
        embedder,
        collection,
        TEXT,
        document=DocumentInput(source="m.txt"),
        chunker=WORDS_4,
        stored=StoredSource(None),
    )

    assert store.lookups == ["find n.txt"]  # only the first call looked
    assert (again.unchanged, again.document, again.chunks) == (True, first.document, first.chunks)
    assert (changed.unchanged, changed.document.id, changed.document.title) == (
        False,
        first.document.id,
        "Renamed",
    )
    assert new.chunks == tuple(store.document_chunks(collection, new.document.id))
    assert store.get_collection("docs").document_count == 2


def test_a_stored_source_of_another_source_is_refused(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    first = ingest_text(
        store, embedder, collection, TEXT, document=DocumentInput(source="n.txt"), chunker=WORDS_4
    )
    with pytest.raises(InvalidInputError, match=r"'n\.txt', not 'm\.txt'"):
        ingest_text(
            store,
            embedder,
            collection,
            TEXT,
            document=DocumentInput(source="m.txt"),
            chunker=WORDS_4,
            stored=StoredSource(first.document, first.chunks),
        )
    assert store.get_collection("docs", owner="user:1").document_count == 1


def test_ingest_texts_with_stored_sources_given_looks_nothing_up(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    document = DocumentInput(source="n.txt")
    first = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)
    known = {"n.txt": StoredSource(first.document, first.chunks)}
    store.find_document = None  # type: ignore[assignment,method-assign]
    store.document_chunks = None  # type: ignore[assignment,method-assign]
    again, new = ingest_texts(
        store,
        embedder,
        collection,
        [(TEXT, document), (TEXT, DocumentInput(source="m.txt"))],
        chunker=WORDS_4,
        stored=known,
    )
    assert (again.unchanged, again.chunks) == (True, first.chunks)
    assert (new.unchanged, new.document.source) == (False, "m.txt")
