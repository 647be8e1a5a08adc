"""CollectionSearcher's explanations (SPEC T6): the legs as fused, each hit's share; leg timing."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.explain import LegRanking, SearchExplanation
from rag_plugin.fusion import HybridWeights
from rag_plugin.outcome import rerank_outcome
from rag_plugin.rerank import LexicalReranker
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.engine_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.engine_helpers import NORM, PRODUCT_FUSION, SEED_FUSION, pairs
from tests.rag_plugin.table_embedder import TableEmbedder


def leg_ids(ranking: LegRanking, doc: str) -> list[int]:
    return [int(hit.id.removeprefix(f"{doc}_")) for hit in ranking.hits]


@pytest.mark.parametrize("fusion", [PRODUCT_FUSION, SEED_FUSION], ids=["defaults", "seed"])
def test_an_explained_hybrid_search_lists_each_leg_and_what_it_added(
    searcher: CollectionSearcher, collection, doc, fusion
) -> None:
    settings, _, ranked = fusion
    outcome = searcher.search(collection, "quick fox", top_k=3, explain=True, **settings)
    explanation = outcome.explanation
    assert explanation is not None
    weights = settings.get("weights", HybridWeights())
    k = settings.get("rrf_k", 10.0)
    assert explanation.rrf_k == k
    assert [(leg.leg, leg.query, leg.weight) for leg in explanation.legs] == [
        (SearchStrategy.SEMANTIC, "quick fox", weights.semantic),
        (SearchStrategy.BM25, "quick fox", weights.bm25),
        (SearchStrategy.FUZZY, "quick fox", weights.fuzzy),
    ]
    # Ranks: dense [0, 2, 1, 3], bm25 [0, 2, 3], fuzzy [0, 3, 2] (see PRODUCT_FUSION).
    assert [leg_ids(leg, doc) for leg in explanation.legs] == [[0, 2, 1, 3], [0, 2, 3], [0, 3, 2]]
    dense = explanation.legs[0]
    assert [hit.rank for hit in dense.hits] == [1, 2, 3, 4]
    assert [hit.score for hit in dense.hits[:2]] == pytest.approx([NORM, 0.92 * NORM])
    assert [f"{doc}_{i}" for i, _ in ranked[:3]] == [hit.id for hit in outcome.hits]
    # Chunk 3: dense rank 4, bm25 rank 3, fuzzy rank 2.
    assert [
        (c.leg, c.rank, c.weight, c.value) for c in explanation.contributions_of(f"{doc}_3")
    ] == [
        (SearchStrategy.SEMANTIC, 4, weights.semantic, weights.semantic / (k + 4)),
        (SearchStrategy.BM25, 3, weights.bm25, weights.bm25 / (k + 3)),
        (SearchStrategy.FUZZY, 2, weights.fuzzy, weights.fuzzy / (k + 2)),
    ]
    for hit in outcome.hits:
        parts = explanation.contributions_of(hit.id)
        assert math.fsum(part.value for part in parts) == hit.score  # exactly the fused score
    assert set(explanation.contributions) == {hit.id for hit in outcome.hits}


def test_explaining_a_search_changes_none_of_its_results(
    searcher: CollectionSearcher, collection, doc
) -> None:
    for strategy in SearchStrategy:
        options: dict[str, Any] = {"strategy": strategy, "top_k": 3, "correct_typos": True}
        plain = searcher.search(collection, "quikc fox", **options)
        explained = searcher.search(collection, "quikc fox", explain=True, **options)
        assert plain.explanation is None
        assert explained.explanation is not None
        assert dataclasses.replace(explained, explanation=None) == plain


def test_a_leg_that_misses_a_hit_adds_nothing_to_it(
    searcher: CollectionSearcher, collection, doc
) -> None:
    # Chunk 1 ("lazy dogs sleep all day") is found by the dense leg only.
    outcome = searcher.search(collection, "quick fox", top_k=4, explain=True)
    assert outcome.explanation is not None
    (only,) = outcome.explanation.contributions_of(f"{doc}_1")
    assert (only.leg, only.rank, only.value) == (SearchStrategy.SEMANTIC, 3, 0.5 / 13)
    assert outcome.explanation.contributions_of("not-a-hit") == ()


def test_corrected_lexical_legs_show_the_words_they_searched_for(
    searcher: CollectionSearcher, collection, doc
) -> None:
    outcome = searcher.search(collection, "quikc fox", correct_typos=True, explain=True)
    assert outcome.explanation is not None
    assert [leg.query for leg in outcome.explanation.legs] == [
        "quikc fox",  # the dense leg embeds the question as typed
        "quick fox",
        "quick fox",
    ]


def test_a_leg_of_weight_zero_is_not_explained_because_it_did_not_run(
    searcher: CollectionSearcher, collection, doc
) -> None:
    weights = HybridWeights(semantic=0.0, bm25=1.0, fuzzy=0.0)
    outcome = searcher.search(collection, "quick fox", weights=weights, explain=True)
    assert outcome.explanation is not None
    assert [leg.leg for leg in outcome.explanation.legs] == [SearchStrategy.BM25]


@pytest.mark.parametrize(
    ("strategy", "ids"),
    [
        (SearchStrategy.SEMANTIC, [0, 2, 1]),
        (SearchStrategy.BM25, [0, 2, 3]),
        (SearchStrategy.FUZZY, [0, 3, 2]),
    ],
)
def test_a_single_strategy_explains_its_one_unfused_leg(
    searcher: CollectionSearcher, collection, doc, strategy: SearchStrategy, ids: list[int]
) -> None:
    outcome = searcher.search(collection, "quick fox", strategy=strategy, top_k=3, explain=True)
    assert outcome.explanation is not None
    (leg,) = outcome.explanation.legs
    assert (leg.leg, leg.weight, leg_ids(leg, doc)) == (strategy, None, ids)
    assert [hit.score for hit in leg.hits] == [hit.score for hit in outcome.hits]
    assert (outcome.explanation.rrf_k, dict(outcome.explanation.contributions)) == (None, {})


def test_rerank_keeps_the_explanation(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quick fox", explain=True)
    reranked = rerank_outcome(LexicalReranker(), outcome)
    assert reranked.explanation is outcome.explanation


def test_top_k_zero_explains_that_no_leg_ran(searcher: CollectionSearcher, collection) -> None:
    outcome = searcher.search(collection, "quick fox", top_k=0, explain=True)
    assert outcome.explanation == SearchExplanation(())


def test_a_leg_timer_is_told_each_legs_time_and_changes_no_result(
    store: MemoryStore, embedder: TableEmbedder, collection: CollectionInfo, doc: str
) -> None:
    timed: list[tuple[SearchStrategy, float]] = []
    plain = CollectionSearcher(store, embedder)
    timing = CollectionSearcher(store, embedder, leg_timer=lambda leg, s: timed.append((leg, s)))
    for strategy in ("hybrid", "bm25"):
        assert pairs(timing.search(collection, "quick fox", strategy=strategy).hits) == pairs(
            plain.search(collection, "quick fox", strategy=strategy).hits
        )
    assert [leg for leg, _ in timed] == [
        SearchStrategy.SEMANTIC,
        SearchStrategy.BM25,
        SearchStrategy.FUZZY,
        SearchStrategy.BM25,
    ]
    assert all(seconds >= 0 for _, seconds in timed)
