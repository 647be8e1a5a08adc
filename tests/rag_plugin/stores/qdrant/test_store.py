"""QdrantStore: the shared store contract in qdrant-client's local mode, plus its own rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_plugin.exceptions import ConfigurationError
from rag_plugin.filters import FilterCondition, FilterGroup, as_expression, matches
from rag_plugin.filters import FilterOperator as Op
from rag_plugin.stores.base import DocumentInput, Store
from rag_plugin.stores.qdrant import QdrantStore
from rag_plugin.stores.usage import UsageLimits, WriteLimits
from rag_plugin.testing import FakeEmbedder
from rag_plugin.vectors import DistanceMetric
from tests.rag_plugin.stores.filter_contract import leaf
from tests.rag_plugin.stores.store_contract import StoreContract, chunk_inputs

NOT = FilterCondition.NOT


class TestQdrantStore(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[Store]:
        store = QdrantStore(location=":memory:")
        yield store
        store.close()


class TestQdrantStoreAskingQdrant(StoreContract):
    """The whole contract with the lexical legs asking Qdrant, as they ask a server."""

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        store = QdrantStore(location=":memory:", mirror=False)
        yield store
        store.close()


class TestSavedQdrantStore(StoreContract):
    """The whole contract again with Qdrant's local mode keeping its points in a folder."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Store]:
        store = QdrantStore(path=tmp_path / "qdrant")
        yield store
        store.close()


# -- configuration -----------------------------------------------------------------------


def test_exactly_one_place_is_required() -> None:
    with pytest.raises(ConfigurationError, match="exactly one of url="):
        QdrantStore()
    with pytest.raises(ConfigurationError, match="exactly one of url="):
        QdrantStore(url="http://localhost:6334", location=":memory:")


def test_a_missing_api_key_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_TEST_QDRANT_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="RAG_TEST_QDRANT_KEY"):
        QdrantStore(url="http://localhost:6334", api_key_env="RAG_TEST_QDRANT_KEY")


def test_an_unreachable_server_is_named_at_first_use() -> None:
    # Port 9 (discard) is closed here: the connection is refused at once.
    store = QdrantStore(url="http://127.0.0.1:9", timeout=2)
    with pytest.raises(ConfigurationError, match=r"http://127\.0\.0\.1:9.*cannot be reached"):
        store.list_collections()
    store.close()


def test_a_server_never_gets_a_mirror() -> None:
    with pytest.raises(ConfigurationError, match="mirror=True is for local mode only"):
        QdrantStore(url="http://localhost:6334", mirror=True)


def test_a_bad_prefix_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="prefix"):
        QdrantStore(location=":memory:", prefix="Rag-1")


# -- namespaces and layout ---------------------------------------------------------------


def test_namespaces_share_one_qdrant_without_seeing_each_other(tmp_path: Path) -> None:
    embedder = FakeEmbedder(dimensions=8)
    folder = tmp_path / "qdrant"
    for namespace, text in (("acme", "anvils and rockets"), ("globex", "hammocks")):
        store = QdrantStore(path=folder, namespace=namespace)
        collection = store.create_collection(
            "docs", dimensions=8, embedding_model=embedder.model_name
        )
        _, chunks = chunk_inputs([text], embedder.embed([text]))
        store.upsert_document(collection, DocumentInput(source="a.md"), chunks)
        store.close()
    store = QdrantStore(path=folder, namespace="acme")
    collection = store.get_collection("docs")
    assert collection.document_count == 1
    assert [hit.chunk.content for hit in store.bm25(collection, "anvils hammocks", 5)] == [
        "anvils and rockets"
    ]
    assert store.fuzzy(collection, "hammock", 5) == []
    store.close()


def test_collections_of_one_size_and_metric_share_a_qdrant_collection() -> None:
    store = QdrantStore(location=":memory:", prefix="t")
    for name in ("one", "two"):
        store.create_collection(name, dimensions=4, embedding_model="m")
    store.create_collection("three", dimensions=4, embedding_model="m", metric=DistanceMetric.L2)
    names = {c.name for c in store._client.get_collections().collections}
    assert names == {
        "t_collections",
        "t_documents",
        "t_vocabulary",
        "t_chunks_4_cosine",
        "t_chunks_4_l2",
    }
    store.close()


# -- writes without transactions ---------------------------------------------------------


@pytest.mark.parametrize("mirror", [True, False])
def test_the_lexical_legs_see_a_replacement_written_after_they_were_asked(mirror: bool) -> None:
    embedder = FakeEmbedder(dimensions=8)
    store = QdrantStore(location=":memory:", mirror=mirror)
    collection = store.create_collection("docs", dimensions=8, embedding_model="fake")

    def write(text: str) -> None:
        _, chunks = chunk_inputs([text], embedder.embed([text]))
        store.upsert_document(collection, DocumentInput(source="a.md"), chunks)

    def found(query: str) -> tuple[list[str], list[str], str]:
        return (
            [hit.chunk.content for hit in store.bm25(collection, query, 5)],
            [hit.chunk.content for hit in store.fuzzy(collection, query, 5)],
            store.correct_query(collection, query).query,
        )

    write("walrus tusks")
    assert found("walrus penguin") == (["walrus tusks"], ["walrus tusks"], "walrus penguin")
    assert found("walrsu") == ([], ["walrus tusks"], "walrus")
    write("penguin feathers")
    assert found("walrus penguin") == (["penguin feathers"], ["penguin feathers"], "walrus penguin")
    assert found("walrsu") == ([], [], "walrsu")
    assert found("pengiun") == ([], ["penguin feathers"], "penguin")
    store.close()


def test_a_write_that_dies_before_its_chunks_go_live_leaves_the_old_document(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedder = FakeEmbedder(dimensions=8)
    store = QdrantStore(location=":memory:")
    collection = store.create_collection("docs", dimensions=8, embedding_model="fake")

    def write(texts: list[str]) -> str:
        _, chunks = chunk_inputs(texts, embedder.embed(texts))
        return store.upsert_document(collection, DocumentInput(source="a.md"), chunks).id

    first = write(["old walrus text", "old walrus again"])
    original = store._client.set_payload

    def crash(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("payload") == {"live": True}:
            raise ConnectionError("the process died here")
        return original(*args, **kwargs)

    monkeypatch.setattr(store._client, "set_payload", crash)
    with pytest.raises(ConfigurationError):
        write(["new penguin text"])
    # The old document is whole and the new chunks are invisible to every leg.
    assert [c.content for c in store.document_chunks(collection, first)] == [
        "old walrus text",
        "old walrus again",
    ]
    assert store.get_collection("docs").chunk_count == 2
    assert store.bm25(collection, "penguin", 5) == []
    assert store.fuzzy(collection, "penguin", 5) == []
    vector = embedder.embed_query("new penguin text")
    assert {hit.chunk.content for hit in store.dense(collection, vector, 5)} == {
        "old walrus text",
        "old walrus again",
    }
    # The next write of the same source repairs it: one generation, the crashed one gone.
    monkeypatch.setattr(store._client, "set_payload", original)
    assert write(["newer penguin text"]) == first
    assert [c.content for c in store.document_chunks(collection, first)] == ["newer penguin text"]
    assert store._client.count("rag_chunks_8_cosine").count == 1
    assert [hit.chunk.content for hit in store.bm25(collection, "penguin walrus", 5)] == [
        "newer penguin text"
    ]
    assert store.correct_query(collection, "walrs").corrections == ()
    store.close()


def test_deleting_a_document_removes_its_points_and_unheld_words() -> None:
    embedder = FakeEmbedder(dimensions=8)
    store = QdrantStore(location=":memory:")
    collection = store.create_collection("docs", dimensions=8, embedding_model="fake")
    texts = ["shared zebra words", "only here"]
    _, chunks = chunk_inputs(texts, embedder.embed(texts))
    gone = store.upsert_document(collection, DocumentInput(source="a.md"), chunks).id
    _, chunks = chunk_inputs(["shared giraffe"], embedder.embed(["shared giraffe"]))
    store.upsert_document(collection, DocumentInput(source="b.md"), chunks)
    store.delete_document(collection, gone)
    entries = {
        point.payload["entry"]
        for point in store._client.scroll("rag_vocabulary", limit=100, with_payload=True)[0]
        if point.payload["kind"] == "word"
    }
    assert entries == {"shared", "giraffe"}
    assert store._client.count("rag_chunks_8_cosine").count == 1
    assert store._client.count("rag_documents").count == 1
    store.close()


def test_stores_for_namespaces_share_one_client_and_delete_their_own() -> None:
    embedder = FakeEmbedder(dimensions=8)
    acme = QdrantStore(location=":memory:", namespace="acme")
    globex = acme.for_namespace("globex")
    assert (acme.namespace, globex.namespace) == ("acme", "globex")
    for store, owner in ((acme, None), (acme, "user:1"), (globex, None)):
        collection = store.create_collection(
            "docs", dimensions=8, embedding_model=embedder.model_name, owner=owner
        )
        _, chunks = chunk_inputs(["kept apart"], embedder.embed(["kept apart"]))
        store.upsert_document(collection, DocumentInput(source="a.md"), chunks)
    assert globex.drop_namespace("acme") == 2
    assert acme.list_collections() == acme.list_collections(owner="user:1") == []
    assert [c.document_count for c in globex.list_collections()] == [1]
    acme.close()


# -- filters as Qdrant conditions --------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "evaluated_in_python"),
    [
        ({"topic": "birds"}, False),
        (leaf("year", Op.GTE, 2021), False),
        (FilterGroup(NOT, (leaf("labels", Op.ANY, ["wet", 2]),)), False),
        (leaf("labels", Op.IS_EMPTY), False),
        (leaf("name", Op.TEXT_MATCH, "eron"), True),
        (leaf("name", Op.GT, "M"), True),
    ],
)
def test_filters_are_qdrant_conditions_unless_qdrant_cannot_say_them_exactly(
    monkeypatch: pytest.MonkeyPatch, expression: Any, evaluated_in_python: bool
) -> None:
    embedder = FakeEmbedder(dimensions=8)
    store = QdrantStore(location=":memory:")
    collection = store.create_collection("docs", dimensions=8, embedding_model="fake")
    rows = [
        {"topic": "birds", "year": 2020, "labels": ["wet"], "name": "Heron"},
        {"topic": "fish", "year": 2022, "labels": [], "name": "Salmon"},
    ]
    texts = ["heron one", "heron two"]
    _, chunks = chunk_inputs(texts, embedder.embed(texts), rows)
    document = store.upsert_document(collection, DocumentInput(source="s"), chunks).id
    scrolled: list[Any] = []
    original = store._client.scroll

    def spy(*args: Any, **kwargs: Any) -> Any:
        # A numeric filter also asks for the few chunks listed under "fx" (numbers beyond
        # 2**53): an indexed lookup, not a pass over the collection.
        if kwargs.get("with_payload") == ["metadata"] and "'fx'" not in repr(kwargs):
            scrolled.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(store._client, "scroll", spy)
    expected = sorted(
        f"{document}_{i}"
        for i, row in enumerate(rows)
        if matches(as_expression(expression), {**row})  # type: ignore[arg-type]
    )
    assert sorted(hit.chunk.id for hit in store.bm25(collection, "heron", 5, expression)) == (
        expected
    )
    assert bool(scrolled) is evaluated_in_python
    store.close()


def test_numbers_no_double_holds_are_decided_in_python() -> None:
    embedder = FakeEmbedder(dimensions=8)
    store = QdrantStore(location=":memory:")
    collection = store.create_collection("docs", dimensions=8, embedding_model="fake")
    rows = [{"big": 2**70}, {"big": 2.0**70}, {"big": 2**53 + 1}, {"big": 2**53}]
    texts = [f"heron {i}" for i in range(len(rows))]
    _, chunks = chunk_inputs(texts, embedder.embed(texts), rows)
    document = store.upsert_document(collection, DocumentInput(source="s"), chunks).id
    for value in (2.0**70, 2**53, 2**53 + 1, 2**70):
        for operator in (Op.EQ, Op.NE, Op.LT, Op.GTE):
            expression = leaf("big", operator, value)
            expected = sorted(
                f"{document}_{i}" for i, row in enumerate(rows) if matches(expression, row)
            )
            found = sorted(hit.chunk.id for hit in store.bm25(collection, "heron", 9, expression))
            assert found == expected, (value, operator)
    store.close()


def test_usage_limits_are_refused_by_a_store_that_keeps_no_usage() -> None:
    store = QdrantStore(location=":memory:")
    collection = store.create_collection("docs", dimensions=8, embedding_model="fake-8")
    with pytest.raises(ConfigurationError, match="PostgreSQL store"):
        store.upsert_documents(
            collection,
            [(DocumentInput(source="a"), [])],
            limits=WriteLimits(owner=UsageLimits(documents=1)),
        )
    with pytest.raises(ConfigurationError, match="keeps no usage"):
        store.usage(owner=None)
    assert store.list_documents(collection) == []
    store.close()
