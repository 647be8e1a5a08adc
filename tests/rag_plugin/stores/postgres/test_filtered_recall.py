"""A collection shared by 50 owners: an owner's filtered query still gets k of its own chunks."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import numpy as np
import pytest

from rag_plugin.stores.base import CollectionInfo, DocumentInput, ScoredChunk
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres import dense as postgres_dense
from rag_plugin.stores.postgres.dense import DensePlan
from rag_plugin.vectors import DistanceMetric

from ..store_contract import chunk_inputs

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


# The signatures' first pass (dense.py): a filter matching more chunks than the pass keeps.
# The collection has more chunks than exact_search_below and the filter fewer, so without the
# pass the exact plan would rank every match. The pass keeps 20 a result asked for (its floor
# of 1,000 is set to 0 here): 200 of a filter's 400 matches for the top 10.
CLUSTERS = 20
SIGNED_DIMENSIONS = 128


@pytest.fixture(params=[DistanceMetric.COSINE, DistanceMetric.L2], ids=lambda m: m.value)
def clustered(
    request: pytest.FixtureRequest, dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[PostgresStore, CollectionInfo, np.ndarray, list[str]]]:
    """1,200 chunks around 20 centres (a third of them ``kind: kept``; ``group`` is the index
    modulo 30), their vectors and kinds."""
    monkeypatch.setattr(postgres_dense, "QUANTIZED_KEEP", 0)
    store = PostgresStore(dsn, schema=pg_schema, exact_search_below=500)
    collection = store.create_collection(
        "clustered", dimensions=SIGNED_DIMENSIONS, embedding_model="m", metric=request.param
    )
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(CLUSTERS, SIGNED_DIMENSIONS))
    vectors = centres[rng.integers(CLUSTERS, size=1200)] + 0.6 * rng.normal(
        size=(1200, SIGNED_DIMENSIONS)
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    kinds = ["kept" if i % 3 == 0 else "other" for i in range(1200)]
    texts = [f"chunk {i}" for i in range(1200)]
    for start in range(0, 1200, 100):
        _, chunks = chunk_inputs(
            texts[start : start + 100],
            vectors[start : start + 100].tolist(),
            [{"kind": kinds[i], "group": i % 30} for i in range(start, start + 100)],
        )
        store.upsert_document(collection, DocumentInput(source=f"d{start}"), chunks)
    yield store, collection, vectors, kinds
    store.close()


def test_a_large_filter_is_ranked_by_signatures_first_and_finds_the_exact_top_10(
    clustered: tuple[PostgresStore, CollectionInfo, np.ndarray, list[str]],
) -> None:
    store, collection, vectors, kinds = clustered
    kept = np.flatnonzero(np.array(kinds) == "kept")  # 400 matches, more than the 200 kept
    rng = np.random.default_rng(11)
    found = 0
    for _ in range(10):
        query = vectors[rng.integers(1200)] + 0.3 * rng.normal(size=SIGNED_DIMENSIONS)
        query /= np.linalg.norm(query)
        hits = store.dense(collection, query.tolist(), 10, {"kind": "kept"})
        expected_plan = (
            DensePlan.QUANTIZED if collection.metric is DistanceMetric.COSINE else DensePlan.EXACT
        )
        assert (len(hits), store.last_dense_plan) == (10, expected_plan)
        assert {h.chunk.metadata["kind"] for h in hits} == {"kept"}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        best = kept[np.argsort(-(vectors[kept] @ query), kind="stable")[:10]]
        found += len({int(h.chunk.content.split()[1]) for h in hits} & set(best.tolist()))
    # The exact plan ranks every match; the signs of 128 dimensions keep nearly all of the
    # top 10 (99 of 100 in numpy on these vectors).
    if collection.metric is DistanceMetric.COSINE:
        assert found >= 95
    else:
        assert found == 100


def test_a_filter_matching_no_more_than_the_pass_keeps_is_ranked_exactly(
    clustered: tuple[PostgresStore, CollectionInfo, np.ndarray, list[str]],
) -> None:
    store, collection, vectors, _ = clustered
    group = np.arange(1200)[np.arange(1200) % 30 == 4]  # 40 matches, fewer than the 200 kept
    query = vectors[5]
    hits = store.dense(collection, query.tolist(), 10, {"group": 4})
    assert store.last_dense_plan == DensePlan.EXACT
    best = group[np.argsort(-(vectors[group] @ query), kind="stable")[:10]]
    assert [int(h.chunk.content.split()[1]) for h in hits] == best.tolist()
    assert store.dense(collection, query.tolist(), 10, {"group": 99}) == []
