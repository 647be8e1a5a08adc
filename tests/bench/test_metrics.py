"""The quality benchmark's metrics against hand-computed values."""

from __future__ import annotations

import pytest

from bench.metrics import best_chunk_documents, evaluate, mrr_at_k, ndcg_at_k, recall_at_k

JUDGED = {"d2": 1, "d3": 1, "d9": 1, "d0": 0}


@pytest.mark.parametrize(
    ("ranked", "judged", "k", "expected"),
    [
        # (1/log2 3 + 1/log2 4) / (1 + 1/log2 3 + 1/log2 4)
        (["d1", "d2", "d3"], JUDGED, 10, 0.5307212739772434),
        (["d1", "d2", "d3"], JUDGED, 1, 0.0),
        (["d2", "d3", "d9"], JUDGED, 10, 1.0),
        # graded: 2/log2 3 over the ideal 2 + 1/log2 3
        (["x", "a"], {"a": 2, "b": 1}, 10, 0.4796249331362629),
        ([], JUDGED, 10, 0.0),
        (["d0"], {"d0": 0}, 10, 0.0),
    ],
)
def test_ndcg_at_k(ranked: list[str], judged: dict[str, int], k: int, expected: float) -> None:
    assert ndcg_at_k(ranked, judged, k) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("ranked", "k", "recall", "mrr"),
    [
        (["d1", "d2", "d3"], 10, 2 / 3, 1 / 2),
        (["d1", "d2", "d3"], 2, 1 / 3, 1 / 2),
        (["d1", "d0", "d4"], 10, 0.0, 0.0),
        (["d9", "d1"], 1, 1 / 3, 1.0),
    ],
)
def test_recall_and_mrr(ranked: list[str], k: int, recall: float, mrr: float) -> None:
    assert recall_at_k(ranked, JUDGED, k) == pytest.approx(recall, abs=1e-12)
    assert mrr_at_k(ranked, JUDGED, k) == pytest.approx(mrr, abs=1e-12)


def test_best_chunk_documents_keeps_first_occurrence() -> None:
    assert best_chunk_documents(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]


def test_evaluate_means_over_judged_queries_and_missing_runs_score_zero() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 0}}
    run = {"q1": ["d1"], "q3": ["d3"]}
    assert evaluate(run, qrels, ndcg_k=10, recall_k=100, mrr_k=10) == {
        "ndcg@10": 0.5,
        "recall@100": 0.5,
        "mrr@10": 0.5,
    }


def test_evaluate_refuses_qrels_without_relevant_documents() -> None:
    with pytest.raises(ValueError, match="no document relevant"):
        evaluate({}, {"q": {"d": 0}})
