"""The contract every store passes (SPEC V4): one mixin, inherited by each store's test class.

A store's test module provides the ``store`` fixture, returning an *empty* store::

    class TestMemoryStore(StoreContract):
        @pytest.fixture
        def store(self) -> Store:
            return MemoryStore()

Expected scores never come from the store under test: dense similarities are computed here
from the vectors with plain maths, BM25 and fuzzy scores from a fresh reference index over the
same chunk texts. Dense scores are compared with ``abs=1e-6`` because a database may keep
vectors as float32; lexical scores with ``abs=1e-9``.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pytest

from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConfigurationError,
    DimensionMismatchError,
    DocumentNotFoundError,
    InvalidInputError,
)
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.lexical.fuzzy import FuzzyIndex
from rag_plugin.stores.base import (
    ChunkInput,
    CollectionInfo,
    Correction,
    DocumentInput,
    ScoredChunk,
    Store,
)
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric, cosine_similarity

from .correction_contract import CorrectionContract
from .filter_contract import FilterContract

DENSE_TOLERANCE = 1e-6
LEXICAL_TOLERANCE = 1e-9
ALICE = "user:alice"
BOB = "user:bob"

# Hand-built 2-d vectors whose order differs per metric (see test_dense_orders_by_metric).
QUERY_2D = [2.0, 1.0]
VECTORS_2D = {"a": [1.0, 0.0], "b": [3.0, 3.0], "c": [0.0, 3.0], "d": [-1.0, 0.0]}
EXPECTED_ORDER_2D = {
    DistanceMetric.COSINE: ["b", "a", "c", "d"],
    DistanceMetric.L2: ["a", "b", "c", "d"],
    DistanceMetric.INNER_PRODUCT: ["b", "c", "a", "d"],
}

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "the quick brown fox is quick and brown",
    "a lazy cat sleeps all day long",
    "machine learning algorithms learn from data",
    "machne learning basics for beginners",
]


def expected_similarity(vector: Sequence[float], query: Sequence[float], metric: str) -> float:
    """The similarity SPEC S5 defines, from first principles."""
    if metric == DistanceMetric.COSINE:
        return cosine_similarity(vector, query)
    if metric == DistanceMetric.L2:
        return 1.0 / (1.0 + math.dist(vector, query))
    return math.fsum(x * y for x, y in zip(vector, query, strict=True))


def chunk_inputs(
    texts: Sequence[str],
    vectors: Sequence[Sequence[float]],
    metadata: Sequence[dict[str, Any]] | None = None,
) -> tuple[str, list[ChunkInput]]:
    """Join ``texts`` with single spaces into a document; return it and exact chunks of it."""
    chunks: list[ChunkInput] = []
    start = 0
    for index, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        chunks.append(
            ChunkInput(
                index=index,
                content=text,
                start_offset=start,
                end_offset=start + len(text),
                embedding=list(vector),
                metadata=metadata[index] if metadata else {},
            )
        )
        start += len(text) + 1
    return " ".join(texts), chunks


def ids(hits: Sequence[ScoredChunk]) -> list[str]:
    return [hit.chunk.id for hit in hits]


class StoreContract(CorrectionContract, FilterContract):
    """Behaviour shared by every :class:`Store`; subclasses provide the ``store`` fixture."""

    @pytest.fixture
    def store(self) -> Store:
        """An empty store; every store's test class overrides this."""
        raise NotImplementedError("a StoreContract subclass must provide the store fixture")

    @pytest.fixture
    def embedder(self) -> FakeEmbedder:
        return FakeEmbedder(dimensions=16)

    @pytest.fixture
    def collection(self, store: Store, embedder: FakeEmbedder) -> CollectionInfo:
        return store.create_collection(
            "docs", dimensions=embedder.dimensions, embedding_model=embedder.model_name
        )

    def add(
        self,
        store: Store,
        collection: CollectionInfo,
        embedder: FakeEmbedder,
        texts: Sequence[str],
        *,
        source: str = "",
        title: str = "",
        tags: tuple[str, ...] = (),
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> str:
        """Store ``texts`` as one document's chunks; return the document id."""
        _, chunks = chunk_inputs(texts, embedder.embed(list(texts)), metadata)
        document = DocumentInput(source=source, title=title, tags=tags)
        return store.upsert_document(collection, document, chunks).id

    # -- collections -------------------------------------------------------------------

    def test_create_collection_returns_its_settings_with_zero_counts(self, store: Store) -> None:
        info = store.create_collection(
            "notes",
            dimensions=3,
            embedding_model="m",
            owner=ALICE,
            metric=DistanceMetric.L2,
            analyzer="seed",
        )
        assert info == CollectionInfo("notes", ALICE, 3, "m", DistanceMetric.L2, "seed", 0, 0)
        assert store.get_collection("notes", owner=ALICE) == info

    def test_create_existing_collection_raises(self, store: Store) -> None:
        store.create_collection("notes", dimensions=3, embedding_model="m", owner=ALICE)
        with pytest.raises(CollectionExistsError, match="notes"):
            store.create_collection("notes", dimensions=3, embedding_model="m", owner=ALICE)

    def test_same_name_is_a_different_collection_per_owner(self, store: Store) -> None:
        for owner, dimensions in ((ALICE, 2), (BOB, 3), (None, 4)):
            store.create_collection(
                "notes", dimensions=dimensions, embedding_model="m", owner=owner
            )
        assert store.get_collection("notes", owner=ALICE).dimensions == 2
        assert store.get_collection("notes", owner=BOB).dimensions == 3
        assert store.get_collection("notes", owner=None).dimensions == 4

    def test_list_collections_shows_only_the_owners_sorted_by_name(self, store: Store) -> None:
        for name, owner in (("zeta", ALICE), ("alpha", ALICE), ("beta", BOB), ("shared", None)):
            store.create_collection(name, dimensions=2, embedding_model="m", owner=owner)
        assert [c.name for c in store.list_collections(owner=ALICE)] == ["alpha", "zeta"]
        assert [c.name for c in store.list_collections(owner=BOB)] == ["beta"]
        assert [c.name for c in store.list_collections()] == ["shared"]
        assert store.list_collections(owner="user:nobody") == []

    @pytest.mark.parametrize(
        ("created_by", "asked_by"), [(ALICE, BOB), (ALICE, None), (None, ALICE)]
    )
    def test_another_owner_cannot_get_or_delete_a_collection(
        self, store: Store, created_by: str | None, asked_by: str | None
    ) -> None:
        store.create_collection("notes", dimensions=2, embedding_model="m", owner=created_by)
        with pytest.raises(CollectionNotFoundError, match="notes"):
            store.get_collection("notes", owner=asked_by)
        with pytest.raises(CollectionNotFoundError, match="notes"):
            store.delete_collection("notes", owner=asked_by)
        assert store.get_collection("notes", owner=created_by).name == "notes"

    def test_delete_collection_returns_its_document_count_and_removes_it(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        self.add(store, collection, embedder, ["first document text"])
        self.add(store, collection, embedder, ["second document text"])
        assert store.delete_collection("docs") == 2
        with pytest.raises(CollectionNotFoundError):
            store.get_collection("docs")
        assert store.list_collections() == []

    def test_deleted_collection_can_be_created_again_empty(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        self.add(store, collection, embedder, ["quick brown fox"])
        store.delete_collection("docs")
        again = store.create_collection(
            "docs", dimensions=embedder.dimensions, embedding_model=embedder.model_name
        )
        assert (again.document_count, again.chunk_count) == (0, 0)
        assert store.bm25(again, "quick", 10) == []

    def test_missing_collection_raises_not_found(self, store: Store) -> None:
        with pytest.raises(CollectionNotFoundError, match="ghost"):
            store.get_collection("ghost")
        with pytest.raises(CollectionNotFoundError, match="ghost"):
            store.delete_collection("ghost")
        ghost = CollectionInfo("ghost", None, 2, "m")
        with pytest.raises(CollectionNotFoundError, match="ghost"):
            store.upsert_document(ghost, DocumentInput(), chunk_inputs(["x y"], [[1.0, 0.0]])[1])
        with pytest.raises(CollectionNotFoundError, match="ghost"):
            store.dense(ghost, [1.0, 0.0], 5)

    def test_collection_info_counts_documents_and_chunks(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        self.add(store, collection, embedder, ["one alpha", "one beta", "one gamma"])
        self.add(store, collection, embedder, ["two alpha", "two beta"])
        info = store.get_collection("docs")
        assert (info.document_count, info.chunk_count) == (2, 5)
        assert store.list_collections() == [info]

    @pytest.mark.parametrize(
        "name",
        [
            "x; DROP TABLE users",
            "x'; DROP TABLE users; --",
            'quoted"name',
            "a" * 100,
            "naïve",
            "名前",
            "",
            "1starts_with_digit",
            "with-dash",
            "with space",
        ],
    )
    def test_hostile_collection_names_are_rejected_and_nothing_is_created(
        self, store: Store, name: str
    ) -> None:
        with pytest.raises(InvalidInputError):
            store.create_collection(name, dimensions=2, embedding_model="m", owner=ALICE)
        with pytest.raises(InvalidInputError):
            store.get_collection(name, owner=ALICE)
        with pytest.raises(InvalidInputError):
            store.delete_collection(name, owner=ALICE)
        with pytest.raises(InvalidInputError):
            store.dense(CollectionInfo(name, ALICE, 2, "m"), [1.0, 0.0], 1)
        assert store.list_collections(owner=ALICE) == []

    # -- documents ---------------------------------------------------------------------

    def test_upsert_returns_the_document_record(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        _, chunks = chunk_inputs(["alpha beta", "gamma delta"], embedder.embed(["a", "b"]))
        document = DocumentInput(
            source="notes.md",
            title="Notes",
            tags=("x", "y"),
            metadata={"lang": "en"},
            content_hash="abc123",
        )
        record = store.upsert_document(collection, document, chunks)
        assert uuid.UUID(hex=record.id).version == 5  # named by the collection and source
        assert record.id == uuid.UUID(hex=record.id).hex
        assert (record.collection, record.source, record.title, record.tags) == (
            "docs",
            "notes.md",
            "Notes",
            ("x", "y"),
        )
        assert (record.content_hash, record.chunk_count) == ("abc123", 2)
        assert dict(record.metadata) == {"lang": "en"}
        assert record.created_at.tzinfo is not None
        assert store.get_document(collection, record.id) == record

    def test_document_chunks_keep_exact_offsets_ids_and_metadata(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        texts = ["The first chunk.", "The second one.", "And a third."]
        text, chunks = chunk_inputs(texts, embedder.embed(texts), [{"page": 1}, {}, {"page": 2}])
        document = DocumentInput(source="s.txt", title="T", tags=("t1",))
        record = store.upsert_document(collection, document, list(reversed(chunks)))
        stored = store.document_chunks(collection, record.id)
        assert [c.id for c in stored] == [f"{record.id}_{i}" for i in range(3)]
        assert [(c.index, c.document_id) for c in stored] == [(i, record.id) for i in range(3)]
        assert [(c.start_offset, c.end_offset) for c in stored] == [(0, 16), (17, 32), (33, 45)]
        assert [text[c.start_offset : c.end_offset] for c in stored] == texts
        assert [c.content for c in stored] == texts
        first = dict(stored[0].metadata)
        assert datetime.fromisoformat(first.pop("created_at")) == record.created_at
        assert first == {"title": "T", "source": "s.txt", "tags": ["t1"], "page": 1}
        assert "page" not in stored[1].metadata

    def test_upsert_with_an_existing_source_replaces_the_document(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        old_texts = ["obsolete zebra words", "more obsolete zebra", "zebra again"]
        first = self.add(store, collection, embedder, old_texts, source="a.md")
        second = self.add(store, collection, embedder, ["fresh giraffe words"], source="a.md")
        assert second == first
        info = store.get_collection("docs")
        assert (info.document_count, info.chunk_count) == (1, 1)
        assert [c.content for c in store.document_chunks(collection, first)] == [
            "fresh giraffe words"
        ]
        assert store.get_document(collection, first).chunk_count == 1
        assert store.bm25(collection, "zebra", 10) == []
        assert store.fuzzy(collection, "zebra", 10) == []
        assert store.correct_query(collection, "zebr").corrections == ()
        for old in embedder.embed(old_texts):
            assert ids(store.dense(collection, old, 10)) == [f"{first}_0"]

    def test_upsert_documents_stores_a_batch_in_input_order_replacing_by_source(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        kept = self.add(store, collection, embedder, ["obsolete zebra words"], source="a.md")
        batch = [
            (["brand new giraffe"], DocumentInput(source="b.md", title="B", tags=("t",))),
            (["fresh lion text", "second lion chunk"], DocumentInput(source="a.md", title="A")),
            (["no source giraffe"], DocumentInput()),
        ]
        records = store.upsert_documents(
            collection,
            [(d, chunk_inputs(t, embedder.embed(t))[1]) for t, d in batch],
        )
        assert [(r.source, r.title, r.tags, r.chunk_count) for r in records] == [
            ("b.md", "B", ("t",), 1),
            ("a.md", "A", (), 2),
            ("", "", (), 1),
        ]
        assert records[1].id == kept
        assert len({r.id for r in records}) == 3
        assert [store.get_document(collection, r.id) for r in records] == records
        info = store.get_collection("docs")
        assert (info.document_count, info.chunk_count) == (3, 4)
        # Newest first: the batch's last document is the newest.
        assert [d.id for d in store.list_documents(collection)] == [r.id for r in reversed(records)]
        assert store.bm25(collection, "zebra", 10) == []
        reference = Bm25Index(analyzer=get_analyzer(collection.analyzer))
        for record, (texts, _) in zip(records, batch, strict=True):
            for index, text in enumerate(texts):
                reference.add_document(f"{record.id}_{index}", text)
        for query in ("giraffe", "lion chunk", "fresh giraffe text"):
            expected = reference.search(query, 10)
            hits = store.bm25(collection, query, 10)
            assert ids(hits) == [chunk_id for chunk_id, _ in expected]
            assert [h.score for h in hits] == pytest.approx(
                [score for _, score in expected], abs=LEXICAL_TOLERANCE
            )

    def test_upsert_documents_with_one_bad_chunk_stores_nothing(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        kept = self.add(store, collection, embedder, ["stored zebra words"], source="a.md")
        _, good = chunk_inputs(["good new text"], embedder.embed(["good new text"]))
        _, bad = chunk_inputs(["bad chunk"], [[1.0]])
        with pytest.raises(DimensionMismatchError, match="expected 16 dimensions, got 1"):
            store.upsert_documents(
                collection, [(DocumentInput(source="a.md"), good), (DocumentInput(), bad)]
            )
        info = store.get_collection("docs")
        assert (info.document_count, info.chunk_count) == (1, 1)
        assert [c.content for c in store.document_chunks(collection, kept)] == [
            "stored zebra words"
        ]
        assert store.bm25(collection, "good", 10) == []

    def test_upsert_documents_rejects_two_documents_with_one_source(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        _, chunks = chunk_inputs(["some text"], embedder.embed(["some text"]))
        with pytest.raises(InvalidInputError, match="documents 0 and 2 have the same source 'x'"):
            store.upsert_documents(
                collection,
                [
                    (DocumentInput(source="x"), chunks),
                    (DocumentInput(source="y"), chunks),
                    (DocumentInput(source="x"), chunks),
                ],
            )
        assert store.get_collection("docs").document_count == 0
        assert store.upsert_documents(collection, []) == []

    def planned(self, embedder: FakeEmbedder, **settings: Any) -> CollectionInfo:
        """A collection that does not exist yet: what ``upsert_documents(create=True)`` makes."""
        return CollectionInfo(
            settings.pop("name", "fresh"),
            settings.pop("owner", ALICE),
            embedder.dimensions,
            embedder.model_name,
            **settings,
        )

    def test_upsert_with_create_makes_the_missing_collection_in_the_same_write(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        planned = self.planned(embedder, metric=DistanceMetric.L2, analyzer="english")
        _, chunks = chunk_inputs(["running foxes"], embedder.embed(["running foxes"]))
        record = store.upsert_document(planned, DocumentInput(source="a.md"), chunks, create=True)
        info = store.get_collection("fresh", owner=ALICE)
        assert (info.dimensions, info.embedding_model, info.metric, info.analyzer) == (
            16,
            embedder.model_name,
            DistanceMetric.L2,
            "english",
        )
        assert (info.document_count, info.chunk_count) == (1, 1)
        assert ids(store.bm25(info, "run fox", 5)) == [f"{record.id}_0"]  # stemmed: english
        # Again, into the collection it made: it is used, not made twice.
        again = store.upsert_document(planned, DocumentInput(source="b.md"), chunks, create=True)
        assert store.get_collection("fresh", owner=ALICE).document_count == 2
        assert again.id != record.id
        assert store.list_collections(owner=ALICE) == [store.get_collection("fresh", owner=ALICE)]

    def test_a_failed_write_with_create_leaves_no_collection(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        _, good = chunk_inputs(["good text"], embedder.embed(["good text"]))
        _, bad = chunk_inputs(["bad chunk"], [[1.0]])
        with pytest.raises(DimensionMismatchError):
            store.upsert_documents(
                self.planned(embedder),
                [(DocumentInput(source="a.md"), good), (DocumentInput(), bad)],
                create=True,
            )
        with pytest.raises(CollectionNotFoundError):
            store.get_collection("fresh", owner=ALICE)
        assert store.list_collections(owner=ALICE) == []

    def test_upsert_without_create_into_a_missing_collection_raises_not_found(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        _, chunks = chunk_inputs(["some text"], embedder.embed(["some text"]))
        with pytest.raises(CollectionNotFoundError):
            store.upsert_document(self.planned(embedder), DocumentInput(), chunks)
        assert store.list_collections(owner=ALICE) == []

    def test_upsert_with_create_refuses_a_collection_of_another_model(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        store.create_collection("fresh", owner=ALICE, dimensions=16, embedding_model="other")
        _, chunks = chunk_inputs(["some text"], embedder.embed(["some text"]))
        with pytest.raises(ConfigurationError, match="of the model 'other'"):
            store.upsert_document(self.planned(embedder), DocumentInput(), chunks, create=True)
        assert store.get_collection("fresh", owner=ALICE).document_count == 0

    @pytest.mark.parametrize(
        ("settings", "message"),
        [
            ({"name": "bad name"}, "invalid characters"),
            ({"analyzer": "klingon"}, "klingon"),
        ],
    )
    @pytest.mark.parametrize("exists", [False, True], ids=["missing", "existing"])
    def test_upsert_with_create_validates_the_new_collection(
        self,
        store: Store,
        embedder: FakeEmbedder,
        settings: dict[str, Any],
        message: str,
        exists: bool,
    ) -> None:
        if exists and "name" not in settings:
            store.create_collection(
                "fresh", owner=ALICE, dimensions=16, embedding_model=embedder.model_name
            )
        before = store.list_collections(owner=ALICE)
        _, chunks = chunk_inputs(["some text"], embedder.embed(["some text"]))
        with pytest.raises(InvalidInputError, match=message):
            store.upsert_document(
                self.planned(embedder, **settings), DocumentInput(), chunks, create=True
            )
        assert store.list_collections(owner=ALICE) == before

    def test_a_word_longer_than_an_index_entry_is_stored_and_found(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        blob = "𝔵" * 3000  # 12,000 UTF-8 bytes in one word and one token
        doc = self.add(store, collection, embedder, [f"image {blob} end", "other text here"])
        assert ids(store.bm25(collection, blob, 5)) == [f"{doc}_0"]
        assert ids(store.fuzzy(collection, f"{blob} end", 5)) == [f"{doc}_0"]
        assert store.get_collection("docs").chunk_count == 2

    def test_find_document_by_source(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        stored = self.add(store, collection, embedder, ["found by its source"], source="f.md")
        self.add(store, collection, embedder, ["no source at all"])
        assert store.find_document(collection, source="f.md") == store.get_document(
            collection, stored
        )
        assert store.find_document(collection, source="missing.md") is None
        assert store.find_document(collection, source="") is None

    def test_a_documents_id_follows_from_its_collection_and_source(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        first = self.add(store, collection, embedder, ["named by its source"], source="n.md")
        store.delete_document(collection, first)
        # Stored again from scratch (a fresh ingest), it gets the same id.
        again = self.add(store, collection, embedder, ["named by its source"], source="n.md")
        other = self.add(store, collection, embedder, ["another source"], source="m.md")
        mine = store.create_collection(
            "docs", dimensions=embedder.dimensions, embedding_model=embedder.model_name, owner=ALICE
        )
        owned = self.add(store, mine, embedder, ["named by its source"], source="n.md")
        assert again == first
        assert len({first, other, owned}) == 3

    def test_documents_without_a_source_never_replace_each_other(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        first = self.add(store, collection, embedder, ["same text here"])
        second = self.add(store, collection, embedder, ["same text here"])
        assert first != second
        assert store.get_collection("docs").document_count == 2

    def test_delete_document_removes_it_from_every_leg(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        gone = self.add(store, collection, embedder, ["walrus tusks", "walrus whiskers"])
        kept = self.add(store, collection, embedder, ["penguin feathers"])
        # Every leg asked before the delete too, so a store that keeps answers must drop them.
        assert len(store.bm25(collection, "walrus", 10)) == 2
        assert len(store.fuzzy(collection, "walrus", 10)) == 2
        assert store.correct_query(collection, "walrs tusk").corrections != ()
        store.delete_document(collection, gone)
        assert store.bm25(collection, "walrus", 10) == []
        assert store.fuzzy(collection, "walrus", 10) == []
        assert store.correct_query(collection, "walrs tusk").corrections == ()
        assert ids(store.dense(collection, embedder.embed_query("walrus tusks"), 10)) == [
            f"{kept}_0"
        ]
        with pytest.raises(DocumentNotFoundError, match=gone):
            store.get_document(collection, gone)
        with pytest.raises(DocumentNotFoundError, match=gone):
            store.document_chunks(collection, gone)
        info = store.get_collection("docs")
        assert (info.document_count, info.chunk_count) == (1, 1)

    def test_delete_missing_document_raises(self, store: Store, collection: CollectionInfo) -> None:
        with pytest.raises(DocumentNotFoundError, match="nope"):
            store.delete_document(collection, "nope")

    def test_list_documents_is_newest_first_with_limit_and_offset(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        added = [self.add(store, collection, embedder, [f"document number {i}"]) for i in range(4)]
        newest_first = list(reversed(added))
        assert [d.id for d in store.list_documents(collection)] == newest_first
        assert [d.id for d in store.list_documents(collection, limit=2, offset=1)] == newest_first[
            1:3
        ]

    def test_documents_of_another_owner_are_out_of_reach(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        mine = store.create_collection("docs", dimensions=16, embedding_model="m", owner=ALICE)
        theirs = store.create_collection("docs", dimensions=16, embedding_model="m", owner=BOB)
        secret = self.add(store, theirs, embedder, ["bob secret plans"])
        with pytest.raises(DocumentNotFoundError):
            store.get_document(mine, secret)
        with pytest.raises(DocumentNotFoundError):
            store.delete_document(mine, secret)
        assert store.list_documents(mine) == []
        assert store.bm25(mine, "secret", 10) == []
        assert store.fuzzy(mine, "secret", 10) == []
        assert store.dense(mine, embedder.embed_query("bob secret plans"), 10) == []
        assert store.get_document(theirs, secret).id == secret

    def test_wrong_dimension_vector_raises_and_stores_nothing(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        _, chunks = chunk_inputs(["good chunk", "bad chunk"], [embedder.embed_query("x"), [1.0]])
        with pytest.raises(DimensionMismatchError, match="expected 16 dimensions, got 1"):
            store.upsert_document(collection, DocumentInput(source="a"), chunks)
        info = store.get_collection("docs")
        assert (info.document_count, info.chunk_count) == (0, 0)
        assert store.bm25(collection, "good", 10) == []

    def test_wrong_dimension_query_raises(self, store: Store, collection: CollectionInfo) -> None:
        with pytest.raises(DimensionMismatchError, match="expected 16 dimensions, got 3"):
            store.dense(collection, [1.0, 0.0, 0.0], 5)

    # -- dense leg ---------------------------------------------------------------------

    @pytest.mark.parametrize("metric", list(DistanceMetric))
    def test_dense_orders_by_metric(self, store: Store, metric: DistanceMetric) -> None:
        collection = store.create_collection(
            "vectors", dimensions=2, embedding_model="hand", metric=metric
        )
        names = list(VECTORS_2D)
        _, chunks = chunk_inputs(names, [VECTORS_2D[n] for n in names])
        document = store.upsert_document(collection, DocumentInput(), chunks).id
        hits = store.dense(collection, QUERY_2D, 4)
        assert [hit.chunk.content for hit in hits] == EXPECTED_ORDER_2D[metric]
        assert [hit.chunk.id for hit in hits] == [
            f"{document}_{names.index(n)}" for n in EXPECTED_ORDER_2D[metric]
        ]
        for hit in hits:
            expected = expected_similarity(VECTORS_2D[hit.chunk.content], QUERY_2D, metric)
            assert hit.score == pytest.approx(expected, abs=DENSE_TOLERANCE)
        top_two = store.dense(collection, QUERY_2D, 2)
        assert [hit.chunk.content for hit in top_two] == EXPECTED_ORDER_2D[metric][:2]
        assert store.dense(collection, QUERY_2D, 0) == []

    def test_dense_on_an_empty_collection_is_empty(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        assert store.dense(collection, embedder.embed_query("anything"), 10) == []

    # -- lexical legs ------------------------------------------------------------------

    @pytest.mark.parametrize("analyzer", ["seed", "english"])
    def test_bm25_scores_equal_a_fresh_index_over_the_collection(
        self, store: Store, embedder: FakeEmbedder, analyzer: str
    ) -> None:
        collection = store.create_collection(
            "lex", dimensions=16, embedding_model="m", analyzer=analyzer
        )
        first = self.add(store, collection, embedder, CORPUS[:3])
        second = self.add(store, collection, embedder, CORPUS[3:])
        chunk_ids = [f"{first}_{i}" for i in range(3)] + [f"{second}_{i}" for i in range(2)]
        reference = Bm25Index(analyzer=get_analyzer(collection.analyzer))
        for chunk_id, text in zip(chunk_ids, CORPUS, strict=True):
            reference.add_document(chunk_id, text)
        for query in ("quick brown fox", "lazy", "learning data", "the the fox"):
            expected = reference.search(query, 10)
            hits = store.bm25(collection, query, 10)
            assert ids(hits) == [chunk_id for chunk_id, _ in expected]
            assert [h.score for h in hits] == pytest.approx(
                [score for _, score in expected], abs=LEXICAL_TOLERANCE
            )
        assert ids(store.bm25(collection, "quick brown fox", 1)) == [
            reference.search("quick brown fox", 1)[0][0]
        ]
        assert store.bm25(collection, "unrelated words", 10) == []

    def test_bm25_statistics_ignore_other_owners_collections(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        mine = store.create_collection("docs", dimensions=16, embedding_model="m", owner=ALICE)
        theirs = store.create_collection("docs", dimensions=16, embedding_model="m", owner=BOB)
        document = self.add(store, mine, embedder, CORPUS[:2])
        self.add(store, theirs, embedder, ["fox fox fox", "brown fox", "fox"])
        reference = Bm25Index(analyzer=get_analyzer(mine.analyzer))
        for index, text in enumerate(CORPUS[:2]):
            reference.add_document(f"{document}_{index}", text)
        hits = store.bm25(mine, "fox", 10)
        assert [(h.chunk.id, h.score) for h in hits] == [
            (chunk_id, pytest.approx(score, abs=LEXICAL_TOLERANCE))
            for chunk_id, score in reference.search("fox", 10)
        ]

    @pytest.mark.parametrize("analyzer", ["seed", "english"])
    def test_fuzzy_scores_equal_a_fresh_index_over_the_collection(
        self, store: Store, embedder: FakeEmbedder, analyzer: str
    ) -> None:
        collection = store.create_collection(
            "lex", dimensions=16, embedding_model="m", analyzer=analyzer
        )
        document = self.add(store, collection, embedder, CORPUS)
        reference = FuzzyIndex(analyzer=get_analyzer(collection.analyzer))
        for index, text in enumerate(CORPUS):
            reference.add_document(f"{document}_{index}", text)
        hits = store.fuzzy(collection, "machine", 10)
        assert [(h.chunk.id, h.score) for h in hits] == [
            (f"{document}_3", pytest.approx(1.0, abs=LEXICAL_TOLERANCE)),
            (f"{document}_4", pytest.approx(6 / 7, abs=LEXICAL_TOLERANCE)),
        ]
        # No query word here is close only to a stopword: a store may find fuzzy candidates
        # through analyzer terms, which drop stopwords (see rag_plugin/stores/postgres/lexical.py).
        for query in ("machine", "quikc brwn", "lazzy cat"):
            expected = reference.search(query, 10)
            assert [(h.chunk.id, h.score) for h in store.fuzzy(collection, query, 10)] == [
                (chunk_id, pytest.approx(score, abs=LEXICAL_TOLERANCE))
                for chunk_id, score in expected
            ]

    def test_correct_query_uses_the_collection_vocabulary(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        self.add(store, collection, embedder, ["machine learning", "deep networks"])
        corrected = store.correct_query(collection, "machne lerning netwrks")
        assert corrected.query == "machine learning networks"
        assert corrected.corrections == (
            Correction("machne", "machine", 1),
            Correction("lerning", "learning", 1),
            Correction("netwrks", "networks", 1),
        )
        unchanged = store.correct_query(collection, "machine learning")
        assert (unchanged.query, unchanged.corrections) == ("machine learning", ())

    def test_correct_query_ignores_another_owners_vocabulary(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        mine = store.create_collection("docs", dimensions=16, embedding_model="m", owner=ALICE)
        theirs = store.create_collection("docs", dimensions=16, embedding_model="m", owner=BOB)
        self.add(store, theirs, embedder, ["machine learning"])
        assert store.correct_query(mine, "machne").corrections == ()

    def test_find_sources_gives_the_collection_and_each_stored_source_with_its_chunks(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        collection = store.create_collection(
            "docs", dimensions=16, embedding_model="m", owner=ALICE
        )
        a = self.add(store, collection, embedder, ["one", "two"], source="a.md")
        self.add(store, collection, embedder, ["three"], source="b.md")
        info, found = store.find_sources("docs", owner=ALICE, sources=["a.md", "missing", ""])
        assert (info.name, info.owner, info.document_count) == ("docs", ALICE, 2)
        assert list(found) == ["a.md"]
        record, chunks = found["a.md"]
        assert record.id == a
        assert [c.content for c in chunks] == ["one", "two"]
        assert store.find_sources("docs", owner=ALICE, sources=[])[1] == {}
        with pytest.raises(CollectionNotFoundError):
            store.find_sources("docs", owner=BOB, sources=["a.md"])

    def test_concurrent_legs_is_a_declared_capability(self, store: Store) -> None:
        assert isinstance(store.concurrent_legs, bool)

    # -- filters -----------------------------------------------------------------------

    def test_filters_apply_before_ranking_on_every_leg(
        self, store: Store, embedder: FakeEmbedder
    ) -> None:
        collection = store.create_collection("filtered", dimensions=2, embedding_model="hand")
        keep = {7, 42, 93}
        texts, vectors, metadata = [], [], []
        for i in range(100):
            kept = i in keep
            # Kept chunks are the worst matches for every leg, so ranking first and filtering
            # afterwards would find none of them in the top 10.
            texts.append(f"otter chunk{i}" if kept else f"otter otter seal chunk{i}")
            vectors.append([-1.0, i / 100] if kept else [1.0, i / 100])
            metadata.append({"group": "keep" if kept else "other"})
        _, chunks = chunk_inputs(texts, vectors, metadata)
        document = store.upsert_document(collection, DocumentInput(), chunks).id
        expected = {f"{document}_{i}" for i in keep}
        legs = {
            "dense": lambda f: store.dense(collection, [1.0, 0.0], 10, f),
            "bm25": lambda f: store.bm25(collection, "otter", 10, f),
            "fuzzy": lambda f: store.fuzzy(collection, "otter seal", 10, f),
        }
        for leg, search in legs.items():
            assert not expected & set(ids(search(None))), leg
            assert set(ids(search({"group": "keep"}))) == expected, leg

    def test_filters_match_document_fields_and_typed_values(
        self, store: Store, collection: CollectionInfo, embedder: FakeEmbedder
    ) -> None:
        a = self.add(
            store,
            collection,
            embedder,
            ["heron text"],
            source="a.md",
            title="A",
            metadata=[{"page": 3, "flag": True}],
        )
        b = self.add(
            store,
            collection,
            embedder,
            ["heron text"],
            source="b.md",
            title="B",
            metadata=[{"page": 4, "flag": 1}],
        )
        vector = embedder.embed_query("heron text")
        cases: list[tuple[dict[str, Any], list[str]]] = [
            ({"source": "a.md"}, [f"{a}_0"]),
            ({"title": "B"}, [f"{b}_0"]),
            ({"page": 3}, [f"{a}_0"]),
            ({"flag": True}, [f"{a}_0"]),
            ({"source": "a.md", "page": 4}, []),
            ({"missing": "x"}, []),
        ]
        for filters, expected in cases:
            assert sorted(ids(store.dense(collection, vector, 10, filters))) == expected, filters
            assert sorted(ids(store.bm25(collection, "heron", 10, filters))) == expected, filters
            assert sorted(ids(store.fuzzy(collection, "heron", 10, filters))) == expected, filters
