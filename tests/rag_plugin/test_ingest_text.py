"""ingest_text of one document: what it stores, embeds and returns, and what it refuses."""

from __future__ import annotations

import pytest

from rag_plugin.embedding.dedup import content_hash_hex
from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.ingest import ingest_text
from rag_plugin.stores.base import CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from tests.rag_plugin.ingest_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.ingest_helpers import TEXT, WORDS_4


def test_ingest_stores_exact_chunks_and_the_content_hash(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    result = ingest_text(
        store,
        embedder,
        collection,
        TEXT,
        document=DocumentInput(source="n.txt", title="Numbers", tags=("t",)),
        chunker=WORDS_4,
    )
    document = result.document
    assert (document.source, document.title, document.tags) == ("n.txt", "Numbers", ("t",))
    assert document.content_hash == content_hash_hex(TEXT)
    assert document.chunk_count == 4
    assert result.chunk_ids == [f"{document.id}_{i}" for i in range(4)]
    assert [(c.start_offset, c.end_offset) for c in result.chunks] == [
        (0, 25),
        (26, 49),
        (50, 72),
        (73, 97),
    ]
    assert [TEXT[c.start_offset : c.end_offset] for c in result.chunks] == [
        c.content for c in result.chunks
    ]
    assert result.chunks == tuple(store.document_chunks(collection, document.id))
    assert store.get_collection("docs", owner="user:1").chunk_count == 4


def test_ingest_embeds_all_chunks_in_one_deduplicated_call(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    text = "alpha beta gamma delta " * 3 + "epsilon zeta eta theta"
    ingest_text(store, embedder, collection, text, chunker=WORDS_4)
    stats = embedder.stats
    assert (stats.calls, stats.texts_requested, stats.texts_embedded) == (1, 4, 2)
    assert embedder.batches == [["alpha beta gamma delta", "epsilon zeta eta theta"]]


def test_the_chunks_returned_are_the_stored_ones_with_the_documents_metadata(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    document = DocumentInput(source="n.txt", title="T", tags=("a", "b"), metadata={"k": [1, 2]})
    result = ingest_text(store, embedder, collection, TEXT, document=document, chunker=WORDS_4)
    assert result.chunks == tuple(store.document_chunks(collection, result.document.id))
    assert result.chunks[0].metadata == {
        "k": [1, 2],
        "chunking": "word:4:0:20",
        "title": "T",
        "source": "n.txt",
        "created_at": result.document.created_at.isoformat(),
        "tags": ["a", "b"],
    }


@pytest.mark.parametrize("text", ["", "   \n\t", "too short"])
def test_content_too_small_to_chunk_raises_and_stores_nothing(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo, text: str
) -> None:
    with pytest.raises(InvalidInputError, match="Content too small to chunk"):
        ingest_text(store, embedder, collection, text, chunker=WORDS_4)
    assert embedder.stats.calls == 0
    assert store.get_collection("docs", owner="user:1").document_count == 0


def test_ingest_with_another_model_raises_and_stores_nothing(
    store: MemoryStore, collection: CollectionInfo
) -> None:
    other = FakeEmbedder(dimensions=8, model_name="other-model")
    with pytest.raises(ConfigurationError, match="other-model"):
        ingest_text(store, other, collection, TEXT, chunker=WORDS_4)
    assert other.stats.calls == 0
    assert store.get_collection("docs", owner="user:1").document_count == 0
