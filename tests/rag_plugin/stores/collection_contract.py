"""The store contract, collections: create, get, list, delete, per owner, names checked."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import (
    CollectionExistsError,
    CollectionNotFoundError,
    InvalidInputError,
)
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
    ContractBase,
    chunk_inputs,
)


class CollectionContract(ContractBase):
    """The store contract, collections: create, get, list, delete, per owner, names checked."""

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
