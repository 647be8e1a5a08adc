"""CollectionSearcher over the memory store: strategies, RRF, thresholds, typo correction.

Dense expectations follow from hand-made vectors; lexical leg orders are argued in comments
from the chunk texts; RRF scores are the formula ``Σ w / (k + rank)`` written out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import pytest

from rag_plugin.embedding.base import Embedder
from rag_plugin.engine import MIN_HYBRID_CANDIDATES, CollectionSearcher, hybrid_candidates
from rag_plugin.exceptions import ConfigurationError, InvalidInputError
from rag_plugin.explain import LegRanking, SearchExplanation
from rag_plugin.fusion import SEED_RRF_K, SEED_WEIGHTS, HybridWeights
from rag_plugin.outcome import SearchHit, rerank_outcome
from rag_plugin.rerank import LexicalReranker
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import (
    ChunkInput,
    CollectionInfo,
    Correction,
    DocumentInput,
)
from rag_plugin.stores.memory import MemoryStore
from rag_plugin.testing import FakeEmbedder
from tests.rag_plugin.table_embedder import TableEmbedder

CHUNKS = {
    "the quick brown fox jumps": [1.0, 0.0, 0.0],
    "lazy dogs sleep all day": [0.0, 1.0, 0.0],
    "quick thinking brown bears": [0.8, 0.6, 0.0],
    "foxes are quick and clever": [0.0, 0.0, 1.0],
}
QUERIES = {"quick fox": [1.0, 0.2, 0.0], "quikc fox": [1.0, 0.2, 0.0], "bears": [0.0, 0.1, 1.0]}


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def embedder() -> TableEmbedder:
    return TableEmbedder({**CHUNKS, **QUERIES})


@pytest.fixture
def collection(store: MemoryStore) -> CollectionInfo:
    return store.create_collection("docs", dimensions=3, embedding_model="table")


@pytest.fixture
def doc(store: MemoryStore, collection: CollectionInfo) -> str:
    """One document whose chunks 0..3 are CHUNKS in order; returns its id."""
    chunks, start = [], 0
    for index, (text, vector) in enumerate(CHUNKS.items()):
        chunks.append(ChunkInput(index, text, start, start + len(text), vector))
        start += len(text) + 1
    return store.upsert_document(collection, DocumentInput(source="animals"), chunks).id


@pytest.fixture
def searcher(store: MemoryStore, embedder: TableEmbedder) -> CollectionSearcher:
    return CollectionSearcher(store, embedder)


def pairs(hits: Sequence[SearchHit]) -> list[tuple[str, float]]:
    return [(hit.chunk.id, hit.score) for hit in hits]


def approx_pairs(doc: str, expected: list[tuple[int, float]]) -> list[tuple[str, object]]:
    return [(f"{doc}_{i}", pytest.approx(score, abs=1e-12)) for i, score in expected]


# Legs for "quick fox" (chunk numbers):
#   dense  cosine to (1, 0.2, 0): 0 (0.981), 2 (0.902), 1 (0.196), 3 (0.0)
#   bm25   0 has both terms; 2 and 3 only "quick" ("foxes" is another token), 2 is shorter
#   fuzzy  0 = 1.0; 3 = (1 + 0.6)/2 ("fox"~"foxes", d=2) = 0.8; 2 = (1/2)·(1/2) = 0.25
NORM = 1.0 / 1.04**0.5


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


# Ranks: dense [0, 2, 1, 3], bm25 [0, 2, 3], fuzzy [0, 3, 2].
PRODUCT_FUSION = (
    {},  # the defaults: 0.5 / 0.5 / 0.1, k 10
    1.1 / 11,
    [
        (0, 0.5 / 11 + 0.5 / 11 + 0.1 / 11),
        (2, 0.5 / 12 + 0.5 / 12 + 0.1 / 13),
        (3, 0.5 / 14 + 0.5 / 13 + 0.1 / 12),
        (1, 0.5 / 13),
    ],
)
SEED_FUSION = (
    {"weights": SEED_WEIGHTS, "rrf_k": SEED_RRF_K},  # 0.6 / 0.3 / 0.1, k 60
    1.0 / 61,
    [
        (0, 0.6 / 61 + 0.3 / 61 + 0.1 / 61),
        (2, 0.6 / 62 + 0.3 / 62 + 0.1 / 63),
        (3, 0.6 / 64 + 0.3 / 63 + 0.1 / 62),
        (1, 0.6 / 63),
    ],
)


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


def test_typo_correction_reruns_the_lexical_legs(
    searcher: CollectionSearcher, collection, doc
) -> None:
    plain = searcher.search(collection, "quikc fox", strategy="bm25")
    assert [hit.id for hit in plain.hits] == [f"{doc}_0"]
    corrected = searcher.search(collection, "quikc fox", strategy="bm25", correct_typos=True)
    assert corrected.query == "quikc fox"
    assert corrected.corrected_query == "quick fox"
    assert corrected.corrections == (Correction("quikc", "quick", 2),)
    assert [hit.id for hit in corrected.hits] == [f"{doc}_0", f"{doc}_2", f"{doc}_3"]


def test_hybrid_correction_embeds_the_original_query(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    outcome = searcher.search(
        collection, "quikc fox", strategy="hybrid", correct_typos=True, top_k=4
    )
    assert embedder.seen == ["quikc fox"]
    assert outcome.corrected_query == "quick fox"
    assert pairs(outcome.hits) == pairs(
        searcher.search(collection, "quick fox", strategy="hybrid", top_k=4).hits
    )


def test_a_lexical_query_feeds_the_lexical_legs_and_the_question_the_dense_one(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    # dense for "bears" (0, 0.1, 1): [3, 1, 2, 0]; bm25 and fuzzy for "quick fox" as above
    outcome = searcher.search(
        collection, "bears", strategy="hybrid", lexical_query="quick fox", top_k=4
    )
    assert embedder.seen == ["bears"]
    assert outcome.query == "bears"
    assert pairs(outcome.hits) == approx_pairs(
        doc,
        [
            (3, 0.5 / 11 + 0.5 / 13 + 0.1 / 12),
            (0, 0.5 / 14 + 0.5 / 11 + 0.1 / 11),
            (2, 0.5 / 13 + 0.5 / 12 + 0.1 / 13),
            (1, 0.5 / 12),
        ],
    )


def test_typo_correction_corrects_the_lexical_query(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc
) -> None:
    outcome = searcher.search(
        collection, "bears", strategy="bm25", lexical_query="quikc fox", correct_typos=True
    )
    assert outcome.corrected_query == "quick fox"
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0", f"{doc}_2", f"{doc}_3"]
    assert embedder.seen == []


@pytest.mark.parametrize("lexical", ["", "  ", 3])
def test_an_empty_lexical_query_is_invalid(
    searcher: CollectionSearcher, collection, lexical
) -> None:
    with pytest.raises(InvalidInputError, match="lexical query is empty"):
        searcher.search(collection, "bears", strategy="hybrid", lexical_query=lexical)


def test_semantic_search_makes_no_correction(searcher: CollectionSearcher, collection, doc) -> None:
    outcome = searcher.search(collection, "quikc fox", strategy="semantic", correct_typos=True)
    assert (outcome.corrected_query, outcome.corrections) == (None, ())


def test_a_search_that_names_no_strategy_is_hybrid(
    searcher: CollectionSearcher, collection
) -> None:
    assert searcher.search(collection, "quick fox").strategy is SearchStrategy.HYBRID


def test_a_query_without_typos_reports_no_correction(
    searcher: CollectionSearcher, collection, doc
) -> None:
    outcome = searcher.search(collection, "quick fox", strategy="fuzzy", correct_typos=True)
    assert (outcome.corrected_query, outcome.corrections) == (None, ())


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


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_invalid(searcher: CollectionSearcher, collection, query: str) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        searcher.search(collection, query)


def test_negative_top_k_is_invalid(searcher: CollectionSearcher, collection) -> None:
    with pytest.raises(InvalidInputError, match="top_k"):
        searcher.search(collection, "quick fox", top_k=-1)


@pytest.mark.parametrize("strategy", list(SearchStrategy))
def test_top_k_zero_returns_nothing_without_work(
    searcher: CollectionSearcher, embedder: TableEmbedder, collection, doc, strategy
) -> None:
    outcome = searcher.search(collection, "quick fox", strategy=strategy, top_k=0)
    assert outcome.hits == ()
    assert embedder.stats.calls == 0


def test_unknown_strategy_names_the_valid_ones(searcher: CollectionSearcher, collection) -> None:
    with pytest.raises(InvalidInputError, match="semantic, bm25, fuzzy, hybrid"):
        searcher.search(collection, "quick fox", strategy="telepathy")


@pytest.mark.parametrize(
    "other", [TableEmbedder(CHUNKS, model="another-model"), FakeEmbedder(dimensions=4)]
)
def test_dense_search_with_another_model_is_a_configuration_error(
    store: MemoryStore, collection, doc, other: Embedder
) -> None:
    searcher = CollectionSearcher(store, other)
    for strategy in (SearchStrategy.SEMANTIC, SearchStrategy.HYBRID):
        with pytest.raises(ConfigurationError, match="docs"):
            searcher.search(collection, "quick fox", strategy=strategy)
    # Lexical strategies embed nothing, so the model does not matter to them.
    assert len(searcher.search(collection, "quick fox", strategy="bm25").hits) == 3


def test_a_resolver_picks_the_embedder_per_collection(
    store: MemoryStore, embedder: TableEmbedder, collection, doc
) -> None:
    asked: list[str] = []

    def resolve(info: CollectionInfo) -> Embedder:
        asked.append(info.name)
        return embedder

    outcome = CollectionSearcher(store, resolve).search(collection, "quick fox", top_k=1)
    assert asked == ["docs"]
    assert [hit.id for hit in outcome.hits] == [f"{doc}_0"]


# Explanations (SPEC T6): the legs as fused and each hit's share of its score.


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
