"""SearchOutcome and rerank_outcome: the scores a reranker is shown, and what the hits keep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rag_plugin.outcome import SearchHit, SearchOutcome, rerank_outcome
from rag_plugin.rerank import RerankInfo
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkRecord


class _RecordingReranker:
    """Reverses the items and records the scores it was shown."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def rerank(self, query: str, items: Sequence[Any]) -> list[Any]:
        self.seen = [item.score for item in items]
        info = RerankInfo(mode="test", score=0.0)
        return [item.with_rerank(info) for item in reversed(items)]


@pytest.mark.parametrize(
    ("strategy", "scores", "normalized", "shown"),
    [
        ("bm25", [4.0, 2.0, 1.0], [None] * 3, [1.0, 0.5, 0.25]),
        ("semantic", [0.9, -0.2, -0.5], [None] * 3, [0.9, -0.2, -0.5]),
        ("hybrid", [0.03, 0.02, 0.01], [0.9, 0.6, 0.3], [0.9, 0.6, 0.3]),
    ],
)
def test_rerank_outcome_shows_the_reranker_similarity_scaled_scores(
    strategy: str, scores: list[float], normalized: list[float | None], shown: list[float]
) -> None:
    chunks = [ChunkRecord(f"d_{i}", "d", i, f"text {i}", 0, 6) for i in range(len(scores))]
    hits = tuple(
        SearchHit(chunk, score, norm)
        for chunk, score, norm in zip(chunks, scores, normalized, strict=True)
    )
    reranker = _RecordingReranker()
    outcome = rerank_outcome(reranker, SearchOutcome(hits, SearchStrategy(strategy), "q"))
    assert reranker.seen == shown
    assert [hit.id for hit in outcome.hits] == ["d_2", "d_1", "d_0"]
    assert [hit.score for hit in outcome.hits] == scores[::-1]  # their own scores stay
    assert all(hit.rerank == RerankInfo(mode="test", score=0.0) for hit in outcome.hits)
