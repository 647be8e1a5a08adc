"""A collection shared by 50 owners: an owner's filtered query still gets k of its own chunks."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest

from rag_plugin.stores.base import CollectionInfo, DocumentInput, ScoredChunk
from rag_plugin.stores.postgres import PostgresStore

from .store_contract import chunk_inputs

OWNERS = 50
PER_OWNER = 20
DIMENSIONS = 32


def unit_vector(rng: random.Random) -> list[float]:
    values = [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


@pytest.fixture(params=[(10_000, "exact"), (0, "hnsw")], ids=["exact", "hnsw"])
def shared(
    request: pytest.FixtureRequest, dsn: str, pg_schema: str
) -> Iterator[tuple[PostgresStore, CollectionInfo, str]]:
    exact_below, plan = request.param
    store = PostgresStore(dsn, schema=pg_schema, exact_search_below=exact_below)
    collection = store.create_collection("shared", dimensions=DIMENSIONS, embedding_model="m")
    rng = random.Random(50)
    for owner in range(OWNERS):
        count = 5 if owner == 0 else PER_OWNER  # owner 0 has fewer chunks than it asks for
        texts = [f"owner {owner} chunk {i}" for i in range(count)]
        vectors = [unit_vector(rng) for _ in texts]
        _, chunks = chunk_inputs(texts, vectors, [{"owner": f"user:{owner}"}] * count)
        store.upsert_document(collection, DocumentInput(source=f"o{owner}"), chunks)
    yield store, collection, plan
    store.close()


def owners_of(hits: list[ScoredChunk]) -> set[str]:
    return {hit.chunk.metadata["owner"] for hit in hits}


@pytest.mark.parametrize("owner", [1, 17, 49])
def test_an_owner_with_20_chunks_gets_its_top_10(
    shared: tuple[PostgresStore, CollectionInfo, str], owner: int
) -> None:
    store, collection, plan = shared
    rng = random.Random(owner)
    for _ in range(5):
        query = unit_vector(rng)
        hits = store.dense(collection, query, 10, {"owner": f"user:{owner}"})
        assert (len(hits), owners_of(hits), store.last_dense_plan) == (
            10,
            {f"user:{owner}"},
            plan,
        )
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        unfiltered = store.dense(collection, query, 10)
        assert len(owners_of(unfiltered)) > 1  # the filter, not luck, made them all its own


def test_recall_against_the_exact_answer_is_at_least_095(
    shared: tuple[PostgresStore, CollectionInfo, str], dsn: str
) -> None:
    store, collection, _ = shared
    exact = PostgresStore(dsn, schema=store.schema, exact_search_below=10**9)
    rng = random.Random(3)
    found = 0
    for owner in range(1, 11):
        query = unit_vector(rng)
        filters = {"owner": f"user:{owner}"}
        approximate = {h.chunk.id for h in store.dense(collection, query, 10, filters)}
        found += len(
            approximate & {h.chunk.id for h in exact.dense(collection, query, 10, filters)}
        )
    exact.close()
    assert found / 100 >= 0.95


def test_an_owner_with_fewer_chunks_than_k_gets_all_of_them(
    shared: tuple[PostgresStore, CollectionInfo, str],
) -> None:
    store, collection, _ = shared
    hits = store.dense(collection, [1.0] + [0.0] * (DIMENSIONS - 1), 10, {"owner": "user:0"})
    assert sorted(h.chunk.content for h in hits) == [f"owner 0 chunk {i}" for i in range(5)]
