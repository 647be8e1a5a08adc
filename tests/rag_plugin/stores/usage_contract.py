"""Usage and its limits (SPEC O7) for the stores that keep them: counts that follow every
write, and limited writes refused whole, with the limit and the usage named."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import QuotaExceededError
from rag_plugin.stores.base import CollectionInfo, DocumentInput, Store
from rag_plugin.stores.usage import Usage, UsageLimits, WriteLimits
from rag_plugin.testing import FakeEmbedder

from .store_contract import ALICE, BOB, chunk_inputs

TEXTS = ["Café au lait", "naïve résumé", "plain words"]


def usage_of(texts: list[str]) -> Usage:
    return Usage(1, len(texts), sum(len(t.encode()) for t in texts))


class UsageContract:
    """Mixed into a store's test class that provides ``store`` (an empty store)."""

    def put_usage(
        self,
        store: Store,
        collection: CollectionInfo,
        texts: list[str],
        source: str,
        limits: WriteLimits | None = None,
    ) -> None:
        embedder = FakeEmbedder(dimensions=collection.dimensions)
        _, chunks = chunk_inputs(texts, embedder.embed(texts))
        store.upsert_documents(collection, [(DocumentInput(source=source), chunks)], limits=limits)

    def collections(self, store: Store) -> tuple[CollectionInfo, CollectionInfo, CollectionInfo]:
        return (
            store.create_collection("a", dimensions=8, embedding_model="fake-8", owner=ALICE),
            store.create_collection("b", dimensions=8, embedding_model="fake-8", owner=ALICE),
            store.create_collection("a", dimensions=8, embedding_model="fake-8", owner=BOB),
        )

    def test_usage_follows_writes_replacements_and_deletions(self, store: Store) -> None:
        alice_a, alice_b, bob_a = self.collections(store)
        self.put_usage(store, alice_a, TEXTS, "one")
        self.put_usage(store, alice_b, TEXTS[:1], "two")
        self.put_usage(store, bob_a, TEXTS[1:], "three")
        assert store.usage(owner=ALICE) == usage_of(TEXTS) + usage_of(TEXTS[:1])
        assert store.usage(owner=BOB) == usage_of(TEXTS[1:])
        assert store.usage(owner=None) == Usage()
        assert store.usage(everyone=True) == (
            usage_of(TEXTS) + usage_of(TEXTS[:1]) + usage_of(TEXTS[1:])
        )
        self.put_usage(store, alice_a, TEXTS[2:], "one")  # a shorter replacement
        assert store.usage(owner=ALICE) == usage_of(TEXTS[2:]) + usage_of(TEXTS[:1])
        (document,) = store.list_documents(store.get_collection("b", owner=ALICE))
        store.delete_document(alice_b, document.id)
        assert store.usage(owner=ALICE) == usage_of(TEXTS[2:])
        store.delete_collection("a", owner=ALICE)
        assert store.usage(owner=ALICE) == Usage()
        assert store.usage(everyone=True) == usage_of(TEXTS[1:])

    @pytest.mark.parametrize(
        ("limits", "message"),
        [
            (WriteLimits(owner=UsageLimits(documents=1)), "owner may store at most 1 documents"),
            (WriteLimits(owner=UsageLimits(chunks=4)), "at most 4 chunks; 3 are stored"),
            (
                WriteLimits(store=UsageLimits(text_bytes=40), store_name="tenant"),
                "tenant may store at most 40 bytes of text",
            ),
        ],
    )
    def test_a_write_past_a_limit_is_refused_whole(
        self, store: Store, limits: WriteLimits, message: str
    ) -> None:
        alice_a, _, bob_a = self.collections(store)
        # Bob's 2 chunks (33 bytes) count towards the store's limits only.
        self.put_usage(store, bob_a, TEXTS[1:], "bob")
        self.put_usage(store, alice_a, TEXTS, "first", limits=WriteLimits())
        before = store.usage(everyone=True)
        with pytest.raises(QuotaExceededError, match=message) as refused:
            self.put_usage(store, alice_a, TEXTS[:2], "second", limits=limits)
        assert refused.value.code == "QUOTA_EXCEEDED"
        assert store.usage(everyone=True) == before
        assert [d.source for d in store.list_documents(store.get_collection("a", owner=ALICE))] == [
            "first"
        ]

    def test_a_write_that_grows_nothing_passes_a_limit_already_reached(self, store: Store) -> None:
        alice_a, _, _ = self.collections(store)
        self.put_usage(store, alice_a, TEXTS, "first")
        full = WriteLimits(owner=UsageLimits(documents=1, chunks=1, text_bytes=1))
        self.put_usage(store, alice_a, TEXTS[:1], "first", limits=full)  # replaces, shrinks
        assert store.usage(owner=ALICE) == usage_of(TEXTS[:1])
