"""CollectionSearcher's rankings: each single strategy, hybrid weighted RRF, filters and ties."""

from __future__ import annotations

from typing import Any

import pytest

from rag_plugin.engine import MIN_HYBRID_CANDIDATES, CollectionSearcher, hybrid_candidates
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.fusion import HybridWeights
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkInput, DocumentInput
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.engine_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.engine_helpers import (
    NORM,
    PRODUCT_FUSION,
    SEED_FUSION,
    approx_pairs,
    pairs,
)
from tests.rag_plugin.table_embedder import TableEmbedder


def test_semantic_ranks_by_cosine(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quick fox", strategy="semantic", top_k=3)
    assert outcome.strategy is SearchStrategy.SEMANTIC
    assert pairs(outcome.hits) == approx_pairs(doc, [(0, NORM), (2, 0.92 * NORM), (1, 0.2 * NORM)])
    assert all(hit.normalized_score is None for hit in outcome.hits)


def test_threshold_drops_lower_scores(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quick fox", strategy="dense", top_k=10, threshold=0.5)
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0", f"{doc}_2"]


def test_fuzzy_scores_word_matches(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quick fox", strategy="approximate")
    assert pairs(outcome.hits) == approx_pairs(doc, [(0, 1.0), (3, 0.8), (2, 0.25)])


def test_bm25_orders_by_term_matches(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quick fox", strategy=SearchStrategy.BM25)
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0", f"{doc}_2", f"{doc}_3"]
    assert outcome.corrected_query is None


@pytest.mark.parametrize("top_k", [1, 2, 4])
@pytest.mark.parametrize("fusion", [PRODUCT_FUSION, SEED_FUSION], ids=["defaults", "seed"])
def test_hybrid_fuses_the_three_legs_by_weighted_rrf(
    searcher: CollectionSearcher, collection, doc, top_k: int, fusion
) -> None:
    settings, ceiling, ranked = fusion
    outcome = searcher.search(collection, "quick fox", strategy="rrf", top_k=top_k, **settings)
    assert outcome.strategy is SearchStrategy.HYBRID
    expected = ranked[:top_k]
    assert pairs(outcome.hits) == approx_pairs(doc, expected)
    assert [hit.normalized_score for hit in outcome.hits] == [
        pytest.approx(score / ceiling, abs=1e-12) for _, score in expected
    ]


def test_hybrid_takes_the_candidates_from_each_leg(
    searcher: CollectionSearcher, collection, doc
) -> None:
    # With 2 candidates each leg gives: dense [0, 2], bm25 [0, 2], fuzzy [0, 3].
    outcome = searcher.search(collection, "quick fox", strategy="hybrid", top_k=1, candidates=2)
    assert pairs(outcome.hits) == approx_pairs(doc, [(0, 1.1 / 11)])


@pytest.mark.parametrize(
    ("top_k", "candidates", "depth", "fuzzy"),
    [(1, None, 50, 2), (10, None, 50, 20), (25, None, 50, 50), (40, None, 80, 80), (10, 5, 5, 5)],
)
def test_each_hybrid_leg_is_asked_for_its_candidates(
    searcher: CollectionSearcher,
    collection,
    monkeypatch: pytest.MonkeyPatch,
    top_k: int,
    candidates: int | None,
    depth: int,
    fuzzy: int,
) -> None:
    asked: dict[str, int] = {}
    for leg in ("dense", "bm25", "fuzzy"):
        original = getattr(searcher.store, leg)

        def spy(*args: Any, _leg: str = leg, _original: Any = original, **kwargs: Any) -> Any:
            asked[_leg] = args[2]  # (collection, query or vector, n, ...)
            return _original(*args, **kwargs)

        monkeypatch.setattr(searcher.store, leg, spy)
    searcher.search(collection, "quick fox", strategy="hybrid", top_k=top_k, candidates=candidates)
    assert asked == {"dense": depth, "bm25": depth, "fuzzy": fuzzy}
    if candidates is None:
        assert hybrid_candidates(top_k) == depth == max(2 * top_k, MIN_HYBRID_CANDIDATES)


@pytest.mark.parametrize("candidates", [0, -1, 2.5, True])
def test_candidates_must_be_a_positive_integer(
    searcher: CollectionSearcher, collection, candidates: Any
) -> None:
    with pytest.raises(InvalidInputError, match="candidates must be a positive integer"):
        searcher.search(collection, "fox", strategy="hybrid", candidates=candidates)


def test_hybrid_threshold_applies_to_the_normalized_score(
    searcher: CollectionSearcher, collection, doc
) -> None:
    # Chunk 2 normalises to (11 / 1.1)·(1.0/12 + 0.1/13) = 0.9103; chunk 3 to 0.8250.
    outcome = searcher.search(collection, "quick fox", strategy="hybrid", threshold=0.9)
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0", f"{doc}_2"]


def test_hybrid_with_custom_weights_and_k(searcher: CollectionSearcher, collection, doc) -> None:
    weights = HybridWeights(semantic=0.0, bm25=1.0, fuzzy=1.0)
    outcome = searcher.search(
        collection, "quick fox", strategy="hybrid", weights=weights, rrf_k=10.0, top_k=3
    )
    # No dense leg: bm25 [0, 2, 3], fuzzy [0, 3, 2].
    expected = [(0, 2 / 11), (2, 1 / 12 + 1 / 13), (3, 1 / 13 + 1 / 12)]
    # 2 and 3 tie exactly (1/12 + 1/13 either way) with the same best rank (2): id decides.
    assert pairs(outcome.hits) == approx_pairs(doc, expected)


def test_a_zero_weight_leg_is_not_run(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    weights = HybridWeights(semantic=0.0, bm25=1.0, fuzzy=0.0)
    searcher.search(collection, "quick fox", strategy="hybrid", weights=weights)
    assert embedder.stats.calls == 0


def test_a_search_that_names_no_strategy_is_hybrid(
    searcher: CollectionSearcher, collection
) -> None:
    assert searcher.search(collection, "quick fox").strategy is SearchStrategy.HYBRID


def test_filters_reach_every_leg(
    store: MemoryStore, searcher: CollectionSearcher, collection, doc
) -> None:
    text = "quick fox in another document"
    other = store.upsert_document(
        collection,
        DocumentInput(source="other"),
        [ChunkInput(0, text, 0, len(text), [1.0, 0.2, 0.0])],
    ).id
    for strategy in SearchStrategy:
        outcome = searcher.search(
            collection, "quick fox", strategy=strategy, filters={"source": "other"}
        )
        assert [hit.id for hit in outcome.hits] == [f"{other}_0"], strategy


def test_equal_scores_are_ordered_by_chunk_id(
    store: MemoryStore, searcher: CollectionSearcher, collection
) -> None:
    text = "quick fox twin"
    twins = [
        store.upsert_document(
            collection, DocumentInput(), [ChunkInput(0, text, 0, len(text), [1.0, 0.0, 0.0])]
        ).id
        for _ in range(3)
    ]
    for strategy in SearchStrategy:
        outcome = searcher.search(collection, "quick fox", strategy=strategy)
        assert [hit.id for hit in outcome.hits] == sorted(f"{t}_0" for t in twins), strategy
