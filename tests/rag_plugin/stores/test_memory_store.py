"""MemoryStore: the shared store contract, plus saving, loading and thread safety."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.base import DocumentInput, Store
from rag_plugin.stores.memory import FILE_NAME, MemoryStore
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric
from tests.rag_plugin.stores.store_contract import CORPUS, StoreContract, chunk_inputs
from tests.rag_plugin.stores.usage_contract import UsageContract


class TestMemoryStore(StoreContract, UsageContract):
    @pytest.fixture
    def store(self) -> Store:
        return MemoryStore()


class TestSavedMemoryStore(StoreContract):
    """The whole contract again with every change written to disk."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Store:
        return MemoryStore(tmp_path)


def _fill(store: MemoryStore, embedder: FakeEmbedder) -> str:
    collection = store.create_collection(
        "docs",
        dimensions=embedder.dimensions,
        embedding_model=embedder.model_name,
        owner="user:1",
        metric=DistanceMetric.L2,
        analyzer="seed",
    )
    _, chunks = chunk_inputs(CORPUS, embedder.embed(CORPUS), [{"n": i} for i in range(5)])
    document = DocumentInput(source="a.md", title="A", tags=("x",), metadata={"k": [1, 2]})
    return store.upsert_document(collection, document, chunks).id


def test_saved_store_loads_back_identically(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    original = MemoryStore(tmp_path, autosave=False)
    document_id = _fill(original, embedder)
    original.save()

    loaded = MemoryStore(tmp_path)
    collection = loaded.get_collection("docs", owner="user:1")
    assert collection == original.get_collection("docs", owner="user:1")
    assert loaded.get_document(collection, document_id) == original.get_document(
        collection, document_id
    )
    assert loaded.document_chunks(collection, document_id) == original.document_chunks(
        collection, document_id
    )
    query = embedder.embed_query(CORPUS[2])
    assert loaded.dense(collection, query, 5) == original.dense(collection, query, 5)
    assert loaded.bm25(collection, "quick fox", 5) == original.bm25(collection, "quick fox", 5)
    assert loaded.fuzzy(collection, "machne", 5) == original.fuzzy(collection, "machne", 5)
    # The replace-by-source index survives the round trip too.
    _, chunks = chunk_inputs(["replacement text"], embedder.embed(["replacement text"]))
    assert loaded.upsert_document(collection, DocumentInput(source="a.md"), chunks).id == (
        document_id
    )
    assert loaded.get_collection("docs", owner="user:1").chunk_count == 1


def test_autosave_writes_every_change(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    _fill(store, FakeEmbedder())
    assert MemoryStore(tmp_path).get_collection("docs", owner="user:1").chunk_count == 5
    store.delete_collection("docs", owner="user:1")
    assert MemoryStore(tmp_path).list_collections(owner="user:1") == []


def test_without_autosave_nothing_is_written_until_save(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, autosave=False)
    _fill(store, FakeEmbedder())
    assert not (tmp_path / FILE_NAME).exists()
    store.save()
    assert MemoryStore(tmp_path).get_collection("docs", owner="user:1").document_count == 1


def test_missing_folder_gives_an_empty_store(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "not-yet")
    assert store.list_collections() == []
    store.create_collection("docs", dimensions=2, embedding_model="m")
    assert (tmp_path / "not-yet" / FILE_NAME).exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps({"version": 99, "collections": []}),
        json.dumps({"version": 1, "collections": [{"name": "x; DROP"}]}),
        json.dumps([1, 2, 3]),
    ],
)
def test_corrupt_file_gives_an_empty_store_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: str
) -> None:
    (tmp_path / FILE_NAME).write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="rag_plugin.stores.memory"):
        store = MemoryStore(tmp_path)
    assert store.list_collections() == []
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert str(tmp_path / FILE_NAME) in caplog.records[0].getMessage()


def test_save_without_a_path_raises() -> None:
    with pytest.raises(InvalidInputError, match="no path"):
        MemoryStore().save()


def test_concurrent_upserts_are_all_kept() -> None:
    store = MemoryStore()
    embedder = FakeEmbedder()
    collection = store.create_collection(
        "docs", dimensions=embedder.dimensions, embedding_model=embedder.model_name
    )

    def ingest(worker: int) -> None:
        for n in range(20):
            texts = [f"worker {worker} text {n} part {p}" for p in range(3)]
            _, chunks = chunk_inputs(texts, embedder.embed(texts))
            store.upsert_document(collection, DocumentInput(source=f"{worker}-{n}"), chunks)

    threads = [threading.Thread(target=ingest, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    info = store.get_collection("docs")
    assert (info.document_count, info.chunk_count) == (80, 240)
    assert len(store.bm25(collection, "worker", 1000)) == 240


def test_returned_metadata_is_detached_from_the_callers_objects() -> None:
    store = MemoryStore()
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    metadata = {"pages": [1, 2]}
    _, chunks = chunk_inputs(["heron text"], [[1.0, 0.0]], [metadata])
    document = store.upsert_document(collection, DocumentInput(), chunks).id
    metadata["pages"].append(3)
    assert store.document_chunks(collection, document)[0].metadata["pages"] == [1, 2]


def test_metadata_that_cannot_be_saved_is_rejected() -> None:
    store = MemoryStore()
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    _, chunks = chunk_inputs(["heron text"], [[1.0, 0.0]], [{"when": object()}])
    with pytest.raises(InvalidInputError, match="JSON"):
        store.upsert_document(collection, DocumentInput(), chunks)
    assert store.get_collection("docs").document_count == 0
