"""ingest_texts of many documents: one embed call and one write, errors, progress, metadata."""

from __future__ import annotations

import pytest

from rag_plugin.chunking import Chunk, ChunkerConfig, ChunkingStrategy, TextChunker
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.ingest import ingest_text, ingest_texts
from rag_plugin.stores.base import CollectionInfo, DocumentInput, DocumentRecord
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from tests.rag_plugin.ingest_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.ingest_helpers import TEXT, WORDS_4


def test_ingest_texts_embeds_every_changed_document_in_one_call_and_one_write(
    store: MemoryStore, collection: CollectionInfo
) -> None:
    embedder = FakeEmbedder(dimensions=8, cache=InMemoryEmbeddingCache())
    kept = DocumentInput(source="kept.txt", title="Kept")
    ingest_text(store, embedder, collection, TEXT, document=kept, chunker=WORDS_4)
    calls = embedder.stats.calls
    shared = "alpha beta gamma delta epsilon zeta eta theta"
    batch = [
        (shared + " iota kappa lambda mu", DocumentInput(source="a.txt")),
        (TEXT, kept),  # unchanged
        (shared + " omicron sigma upsilon omega", None),  # no source: always new
    ]
    writes: list[int] = []
    upsert = store.upsert_documents

    def counting(*args: object, **kwargs: object) -> list[DocumentRecord]:
        writes.append(len(args[1]))  # type: ignore[arg-type]
        return upsert(*args, **kwargs)  # type: ignore[arg-type]

    store.upsert_documents = counting  # type: ignore[method-assign]
    results = ingest_texts(store, embedder, collection, batch, chunker=WORDS_4)

    assert [r.unchanged for r in results] == [False, True, False]
    assert [r.document.source for r in results] == ["a.txt", "kept.txt", ""]
    assert writes == [2]
    # One embed call; the two chunks both new documents share are embedded once.
    stats = embedder.stats
    assert stats.calls == calls + 1
    assert (stats.texts_requested - 4, stats.texts_embedded - 4) == (6, 4)
    for result in results:
        assert result.chunks == tuple(store.document_chunks(collection, result.document.id))
    assert store.get_collection("docs", owner="user:1").document_count == 3


def test_ingest_texts_names_the_bad_document_and_stores_nothing(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    good = (TEXT, DocumentInput(source="good.txt"))
    with pytest.raises(InvalidInputError, match=r"documents\[1\]: Content too small to chunk"):
        ingest_texts(store, embedder, collection, [good, ("tiny", None)], chunker=WORDS_4)
    with pytest.raises(InvalidInputError, match=r"documents\[1\]: the content is a int"):
        ingest_texts(store, embedder, collection, [good, (7, None)], chunker=WORDS_4)  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="documents 0 and 1 have the same source"):
        ingest_texts(store, embedder, collection, [good, good], chunker=WORDS_4)
    assert embedder.stats.calls == 0
    assert store.get_collection("docs", owner="user:1").document_count == 0
    assert ingest_texts(store, embedder, collection, []) == []


def test_ingest_texts_tells_progress_through_embedding_then_writing(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    told: list[tuple[str, int, int]] = []
    texts = [
        ("one two three four five six seven " * 40, DocumentInput(source=f"s{i}")) for i in range(2)
    ]
    ingest_texts(
        store,
        embedder,
        collection,
        texts,
        chunker=TextChunker(ChunkerConfig(ChunkingStrategy.WORD, chunk_size=50, chunk_overlap=0)),
        progress=lambda stage, done, total: told.append((stage, done, total)),
    )
    assert told[0] == ("embedding", 0, told[0][2])
    assert told[-2] == ("embedding", told[0][2], told[0][2])
    assert told[-1] == ("writing", 0, 2)


def test_an_exception_from_progress_before_writing_stores_nothing(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    def refuse_writing(stage: str, done: int, total: int) -> None:
        if stage == "writing":
            raise RuntimeError("cancelled")

    with pytest.raises(RuntimeError, match="cancelled"):
        ingest_texts(
            store,
            embedder,
            collection,
            [("one two three four five six seven " * 10, DocumentInput(source="s"))],
            progress=refuse_writing,
        )
    assert store.find_document(collection, source="s") is None


def test_chunk_metadata_is_stored_per_chunk_over_the_documents(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    def page(chunk: Chunk) -> dict[str, object]:
        return {"page_number": 1 + chunk.start_offset // 30, "topic": "chunk"}

    first, second = ingest_texts(
        store,
        embedder,
        collection,
        [
            (TEXT, DocumentInput(source="a", metadata={"topic": "doc", "lang": "en"})),
            (TEXT, DocumentInput(source="b")),
        ],
        chunker=WORDS_4,
        chunk_metadata=[page, None],
    )

    stored = store.document_chunks(collection, first.document.id)
    assert [(c.metadata["page_number"], c.metadata["topic"]) for c in stored] == [
        (1, "chunk"),
        (1, "chunk"),
        (2, "chunk"),
        (3, "chunk"),
    ]
    assert {c.metadata["lang"] for c in stored} == {"en"}  # the document's, beside the chunk's
    assert [c.metadata for c in first.chunks] == [c.metadata for c in stored]
    assert all("page_number" not in c.metadata for c in second.chunks)


def test_chunk_metadata_needs_one_entry_per_document(
    store: MemoryStore, embedder: FakeEmbedder, collection: CollectionInfo
) -> None:
    with pytest.raises(InvalidInputError, match="chunk_metadata has 1 entries for 2 documents"):
        ingest_texts(
            store,
            embedder,
            collection,
            [(TEXT, DocumentInput(source="a")), (TEXT, DocumentInput(source="b"))],
            chunk_metadata=[None],
        )
    assert store.list_documents(collection) == []
