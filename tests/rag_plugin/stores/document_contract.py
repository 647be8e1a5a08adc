"""The store contract, documents: writes in one step, replace by source, ids, reads, deletes."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import pytest

from rag_plugin.exceptions import (
    CollectionNotFoundError,
    ConfigurationError,
    DimensionMismatchError,
    DocumentNotFoundError,
    InvalidInputError,
)
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.bm25 import Bm25Index
from rag_plugin.stores.base import (
    CollectionInfo,
    DocumentInput,
    Store,
)
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric

from .contract_base import (
    ALICE,
    BOB,
    LEXICAL_TOLERANCE,
    ContractBase,
    chunk_inputs,
    ids,
)


class DocumentContract(ContractBase):
    """The store contract, documents: writes in one step, replace by source, ids, reads, deletes."""

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
