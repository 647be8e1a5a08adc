"""ingest_text and get_or_create_collection over the memory store and the fake embedder."""

from __future__ import annotations

import dataclasses

import pytest

from rag_plugin.chunking import Chunk, ChunkerConfig, ChunkingStrategy, TextChunker
from rag_plugin.embedding.cache import InMemoryEmbeddingCache
from rag_plugin.embedding.dedup import content_hash_hex
from rag_plugin.exceptions import (
    CollectionNotFoundError,
    ConfigurationError,
    EmbeddingError,
    InvalidInputError,
)
from rag_plugin.ingest import (
    StoredSource,
    get_or_create_collection,
    ingest_text,
    ingest_texts,
    planned_collection,
)
from rag_plugin.stores.base import ChunkRecord, CollectionInfo, DocumentInput, DocumentRecord
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric

TEXT = (
    "alpha bravo charlie delta echo foxtrot golf hotel "
    "india juliet kilo lima mike november oscar papa"
)
WORDS_4 = TextChunker(ChunkerConfig.for_word(4, 0))


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dimensions=8)


@pytest.fixture
def collection(store: MemoryStore, embedder: FakeEmbedder) -> CollectionInfo:
    return get_or_create_collection(store, "docs", embedder=embedder, owner="user:1")


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
