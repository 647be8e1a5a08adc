"""Weighted RRF (S2), rank_results (S4) and min-max score normalisation."""

from __future__ import annotations

import math

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.fusion import (
    DEFAULT_RRF_K,
    SEED_RRF_K,
    SEED_WEIGHTS,
    HybridWeights,
    RrfFusion,
    SearchResult,
    max_score,
    rank_results,
    score_normalization,
)


def rounded(fused: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(doc_id, round(score, 6)) for doc_id, score in fused]


def test_rrf_worked_example_from_the_docs() -> None:
    # SPEC S2's example: unit weights, k = 60.
    fused = RrfFusion(k=SEED_RRF_K).fuse([(["a", "b"], 1.0), (["b", "c"], 1.0)])
    assert rounded(fused) == [("b", 0.032522), ("a", 0.016393), ("c", 0.016129)]
    assert fused[0][1] == 1 / 61 + 1 / 62


def test_rrf_fusion_ties_break_by_best_rank_then_id() -> None:
    fused = RrfFusion(k=SEED_RRF_K).fuse(
        [(["doc2", "doc1", "doc4"], 1.0), (["doc1", "doc2", "doc3"], 1.0)]
    )
    assert rounded(fused) == [
        ("doc1", 0.032522),
        ("doc2", 0.032522),
        ("doc3", 0.015873),
        ("doc4", 0.015873),
    ]
    assert fused[0][1] == fused[1][1]  # an exact tie, whatever order the lists came in


def test_rrf_prefers_shared_top_ranks() -> None:
    fused = RrfFusion().fuse([(["doc_a", "doc_b"], 1.0), (["doc_c", "doc_b"], 1.0)])
    assert fused[0][0] == "doc_b"
    assert fused[0][1] > fused[1][1]


def test_rrf_weights_and_k() -> None:
    fused = RrfFusion(k=10).fuse([(["a", "b"], 0.6), (["b"], 0.3), (["c"], 0.1)])
    assert fused == [("b", math.fsum([0.6 / 12, 0.3 / 11])), ("a", 0.6 / 11), ("c", 0.1 / 11)]


def test_rrf_ignores_zero_weight_lists_and_repeated_ids() -> None:
    fused = RrfFusion(k=SEED_RRF_K).fuse([(["a", "a", "b"], 1.0), (["z"], 0.0), ([], 1.0)])
    assert fused == [("a", 1 / 61), ("b", 1 / 63)]
    assert RrfFusion().fuse([]) == []


@pytest.mark.parametrize("k", [0, -1.0, math.inf, math.nan])
def test_rrf_k_must_be_positive_and_finite(k: float) -> None:
    with pytest.raises(InvalidInputError, match="RRF k must be a finite number > 0"):
        RrfFusion(k=k)


def test_rrf_rejects_negative_weights() -> None:
    with pytest.raises(InvalidInputError, match="RRF weights must be finite and >= 0"):
        RrfFusion().fuse([(["a"], -1.0)])


def test_max_score_and_normalised_fusion() -> None:
    assert max_score(HybridWeights()) == pytest.approx(1.1 / 11)
    assert max_score(SEED_WEIGHTS, rrf_k=SEED_RRF_K) == pytest.approx(1.0 / 61)
    assert max_score([1.0, 1.0], rrf_k=9) == 0.2
    fusion = RrfFusion(k=60)
    assert fusion.max_score(HybridWeights(1, 1, 0)) == 2 / 61
    normalized = fusion.fuse_normalized([(["a", "b"], 1.0), (["a"], 1.0)])
    assert normalized == [("a", 1.0), ("b", pytest.approx((1 / 62) / (2 / 61)))]


def test_fusion_defaults_are_the_benchmarked_ones_and_the_seeds_stay_available() -> None:
    assert HybridWeights().as_tuple() == (0.5, 0.5, 0.1)
    assert (RrfFusion().k, DEFAULT_RRF_K) == (10.0, 10.0)
    assert SEED_WEIGHTS.as_tuple() == (0.6, 0.3, 0.1)
    assert SEED_RRF_K == 60.0
    assert HybridWeights(0.5, 0.4, 0.1).total == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"semantic": -0.1}, "Hybrid weight 'semantic' must be a finite number >= 0, got -0.1."),
        ({"bm25": math.nan}, "Hybrid weight 'bm25' must be a finite number >= 0, got nan."),
        ({"fuzzy": math.inf}, "Hybrid weight 'fuzzy' must be a finite number >= 0, got inf."),
        ({"fuzzy": "0.1"}, "Hybrid weight 'fuzzy' must be a number, got '0.1'."),
        (
            {"semantic": 0, "bm25": 0, "fuzzy": 0},
            "Hybrid weights must not all be 0; give semantic, bm25 or fuzzy a positive weight.",
        ),
    ],
)
def test_hybrid_weights_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        HybridWeights(**kwargs)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_search_result_display() -> None:
    assert str(SearchResult("doc42", 0.87654321)) == "doc42 (score=0.8765)"
    assert SearchResult("doc42", 1.0).metadata == {}


def r(doc_id: str, score: float) -> SearchResult:
    return SearchResult(doc_id, score)


@pytest.mark.parametrize(
    ("results", "threshold", "top_k", "expected"),
    [
        ([r("a", 0.9), r("b", 0.2), r("c", 0.05)], 0.25, 10, [("a", 0.9)]),
        ([r("a", 0.9), r("b", 0.8), r("c", 0.7)], 0.0, 2, [("a", 0.9), ("b", 0.8)]),
        ([r("high", 0.4), r("high", 0.95), r("low", 0.5)], 0.0, 10, [("high", 0.95), ("low", 0.5)]),
        ([r("a", 0.1), r("b", 0.3), r("c", 0.2)], 0.0, 10, [("b", 0.3), ("c", 0.2), ("a", 0.1)]),
        ([], 0.0, 10, []),
        ([r("a", 0.1), r("b", 0.2)], 0.5, 10, []),
        ([r("a", 0.9)], 0.0, 0, []),
        ([r("a", 0.95), r("b", 0.40), r("a", 0.50)], 0.5, 2, [("a", 0.95)]),
        ([r("b", 0.5), r("a", 0.5)], 0.5, 10, [("a", 0.5), ("b", 0.5)]),  # threshold inclusive
    ],
)
def test_rank_results(
    results: list[SearchResult], threshold: float, top_k: int, expected: list[tuple[str, float]]
) -> None:
    ranked = rank_results(results, threshold, top_k)
    assert [(result.id, result.score) for result in ranked] == expected


def test_rank_results_keeps_the_best_copys_content() -> None:
    ranked = rank_results(
        [SearchResult("a", 0.4, "old"), SearchResult("a", 0.9, "new", {"k": "v"})], 0.0, 5
    )
    assert ranked == [SearchResult("a", 0.9, "new", {"k": "v"})]


def test_rank_results_rejects_negative_top_k() -> None:
    with pytest.raises(InvalidInputError, match="top_k must be zero or a positive integer"):
        rank_results([], 0.0, -1)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([], []),
        ([0.42], [1.0]),
        ([0.3, 0.3, 0.3], [1.0, 1.0, 1.0]),
        ([0.0, 0.5, 1.0], [0.0, 0.5, 1.0]),
        ([2.0, 4.0, 3.0], [0.0, 1.0, 0.5]),
        ([1.0, 1.0 + 1e-8], [1.0, 1.0]),  # spread below f32 epsilon counts as equal
    ],
)
def test_score_normalization(scores: list[float], expected: list[float]) -> None:
    assert score_normalization(scores) == expected


def test_contributions_are_the_terms_of_the_fused_sum() -> None:
    fusion = RrfFusion(k=10)
    ranked = [(["a", "b", "a"], 0.5), (["c"], 0.0), (["b", "c"], 0.3)]
    shares = fusion.contributions(ranked, {"a", "b", "c"})
    assert {
        doc_id: [(s.list_index, s.rank, s.value) for s in parts] for doc_id, parts in shares.items()
    } == {
        "a": [(0, 1, 0.5 / 11)],  # its repeat at rank 3 counts once, as in fuse
        "b": [(0, 2, 0.5 / 12), (2, 1, 0.3 / 11)],
        "c": [(2, 2, 0.3 / 12)],  # the list of weight 0 adds nothing
    }
    for doc_id, score in fusion.fuse(ranked):
        assert math.fsum(share.value for share in shares[doc_id]) == score
    assert set(fusion.contributions(ranked, {"b"})) == {"b"}
