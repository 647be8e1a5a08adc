"""ChunkFilter: the best candidates checked by primary key, or every match read at once."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rag_plugin.stores.base import DocumentInput
from rag_plugin.stores.postgres import PostgresStore
from rag_plugin.stores.postgres import chunk_filter as chunk_filter_module
from rag_plugin.stores.postgres.chunk_filter import ChunkFilter
from rag_plugin.stores.postgres.filters import sql_filter

from .store_contract import chunk_inputs

CHUNKS = 2000


@pytest.fixture
def filled(
    dsn: str, pg_schema: str
) -> Iterator[tuple[PostgresStore, Any, np.ndarray, dict[int, int]]]:
    """2,000 chunks; ``shard`` is i % 10 and ``rare`` is set on chunk 1,234 only."""
    store = PostgresStore(dsn, schema=pg_schema)
    collection = store.create_collection("docs", dimensions=2, embedding_model="m")
    texts = [f"chunk number {i}" for i in range(CHUNKS)]
    metadata = [{"shard": i % 10, **({"rare": True} if i == 1234 else {})} for i in range(CHUNKS)]
    _, chunks = chunk_inputs(texts, [[1.0, 0.0]] * CHUNKS, metadata)
    store.upsert_document(collection, DocumentInput(source="all"), chunks)
    with store._db.transaction() as conn:
        rows = conn.execute(
            store._tables("SELECT id, (metadata->>'shard')::int FROM {chunks} ORDER BY id")
        ).fetchall()
    ids = np.asarray([r[0] for r in rows], dtype=np.int64)
    yield store, collection, ids, {int(r[0]): int(r[1]) for r in rows}
    store.close()


def run(
    store: PostgresStore,
    collection: Any,
    filters: dict[str, Any],
    ids: np.ndarray,
    scores: np.ndarray,
    n: int,
) -> tuple[ChunkFilter, np.ndarray, np.ndarray]:
    with store._db.transaction() as conn:
        row = store._collection(conn, collection)
        chunk_filter = ChunkFilter(conn, store._tables, row, sql_filter(filters))
        got_ids, got_scores = chunk_filter.top(ids, scores, n)
    return chunk_filter, got_ids, got_scores


def expected(ids: np.ndarray, scores: np.ndarray, passes: np.ndarray, n: int) -> set[int]:
    """Every passing chunk scoring at least the n-th best passing score."""
    kept = scores[passes]
    if len(kept) == 0:
        return set()
    nth = np.sort(kept)[::-1][min(n, len(kept)) - 1]
    return set(ids[passes & (scores >= nth)].tolist())


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
def test_a_broad_filter_checks_only_the_best_candidates(filled: Any, ties: bool) -> None:
    store, collection, ids, shard = filled
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 40, len(ids)).astype(float) if ties else rng.random(len(ids))
    chunk_filter, got, _ = run(store, collection, {"shard": 3}, ids, scores, 20)
    passes = np.asarray([shard[int(i)] == 3 for i in ids])
    assert expected(ids, scores, passes, 20) <= set(got.tolist())
    assert all(shard[int(i)] == 3 for i in got)
    assert not chunk_filter.read_all
    assert chunk_filter.checked < len(ids)  # never every candidate


def test_a_selective_filter_reads_its_matches_at_once(
    filled: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunk_filter_module, "VERIFY_LIMIT", 500)  # below the 2,000 candidates
    store, collection, ids, _ = filled
    scores = np.random.default_rng(3).random(len(ids))
    chunk_filter, got, _ = run(store, collection, {"rare": True}, ids, scores, 20)
    rare = ids[1234]  # chunk ids follow the chunk order in one document
    assert got.tolist() == [rare]
    assert chunk_filter.read_all
    assert chunk_filter.checked <= 500  # the first batch, then no more checks


def test_mask_answers_for_any_ids_and_remembers_them(filled: Any) -> None:
    store, collection, ids, shard = filled
    with store._db.transaction() as conn:
        row = store._collection(conn, collection)
        chunk_filter = ChunkFilter(conn, store._tables, row, sql_filter({"shard": 5}))
        picked = np.asarray(random.Random(1).sample(ids.tolist(), 300), dtype=np.int64)
        first = chunk_filter.mask(picked)
        again = chunk_filter.mask(picked[::-1])
    assert first.tolist() == [shard[int(i)] == 5 for i in picked]
    assert again.tolist() == first.tolist()[::-1]
    assert chunk_filter.checked == 300  # the second call checked nothing new
