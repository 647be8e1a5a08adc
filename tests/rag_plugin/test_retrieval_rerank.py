"""Multi-collection retrieval's candidates (candidate_k, searches by priority) and reranker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.outcome import SearchOutcome
from rag_plugin.rerank import NoReranker, Reranker, RerankMode, T
from rag_plugin.retrieval import CollectionRef, MultiCollectionRetriever, RetrievalProfile
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.retrieval_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.retrieval_helpers import (
    FAQ,
    HANDBOOK,
    QUERY,
    Row,
    add_document,
    rows,
    semantic_profile,
)


def test_lexical_rerank_reorders_but_relevance_stays_post_weight(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo, faq: CollectionInfo
) -> None:
    profile = semantic_profile(rerank_alpha=1.0)  # pure token overlap decides
    result = retriever.retrieve(QUERY, [CollectionRef(handbook), CollectionRef(faq)], profile)
    # overlap with {refund, policy}: handbook 0 has both (1.0), faq 0 "refund" (0.5),
    # handbook 1 none (0.0)
    assert [(c.content, c.rerank.score if c.rerank else None) for c in result] == [
        (HANDBOOK[0][0], 1.0),
        (FAQ[0][0], 0.5),
        (HANDBOOK[1][0], 0.0),
    ]
    assert [c.score for c in result] == [1.0, 0.8, 0.6]


def test_candidate_k_bounds_what_the_reranker_sees(
    store: MemoryStore, retriever: MultiCollectionRetriever
) -> None:
    info = store.create_collection("many", dimensions=3, embedding_model="table")
    # 40 chunks with falling similarity; chunks 30 and 35 mention the query words
    chunks: list[Row] = []
    for i in range(40):
        x = 1.0 - i / 100
        text = f"refund policy note {i}" if i in (30, 35) else f"note {i}"
        chunks.append((text, [x, (1 - x * x) ** 0.5, 0.0], {}))
    add_document(store, info, chunks, "many")
    profile = semantic_profile(retrieval_k=1, rerank_alpha=1.0)
    result = retriever.run(QUERY, [CollectionRef(info)], profile)
    assert result.candidate_k == 32
    # 35 is rank 36, outside the 32 candidates; 30 (rank 31) is inside and wins on overlap
    assert [c.content for c in result.chunks] == ["refund policy note 30"]


class RecordingSearcher(CollectionSearcher):
    """Records each search's collection, query, strategy and top_k."""

    calls: list[tuple[str, str, str, int]]

    def search(self, collection: CollectionInfo, query: str, **kwargs: Any) -> SearchOutcome:
        self.calls.append((collection.name, query, str(kwargs["strategy"]), kwargs["top_k"]))
        return super().search(collection, query, **kwargs)


@pytest.mark.parametrize(("final_k", "top_k"), [(3, 32), (8, 64)])
def test_collections_are_searched_by_priority_for_candidate_k(
    store: MemoryStore,
    searcher: CollectionSearcher,
    handbook: CollectionInfo,
    faq: CollectionInfo,
    final_k: int,
    top_k: int,
) -> None:
    recording = RecordingSearcher(store, searcher.embedder_for(handbook))
    recording.calls = []
    refs = [CollectionRef(handbook, priority=1), CollectionRef(faq, priority=2)]
    MultiCollectionRetriever(recording).retrieve(QUERY, refs, semantic_profile(retrieval_k=final_k))
    assert recording.calls == [
        ("faq", QUERY, "semantic", top_k),
        ("handbook", QUERY, "semantic", top_k),
    ]


class ExplodingReranker:
    def rerank(self, query: str, items: Sequence[T]) -> list[T]:
        raise RuntimeError("reranker crashed")


def test_a_failing_reranker_keeps_the_retrieval_order(
    searcher: CollectionSearcher, handbook: CollectionInfo
) -> None:
    def factory(profile: RetrievalProfile) -> Reranker:
        return ExplodingReranker()

    retriever = MultiCollectionRetriever(searcher, reranker_factory=factory)
    result = retriever.retrieve(QUERY, [CollectionRef(handbook)], semantic_profile())
    assert rows(result) == [("handbook", HANDBOOK[0][0], 1.0), ("handbook", HANDBOOK[1][0], 0.6)]


def test_the_profiles_reranker_is_built_from_the_profile(
    searcher: CollectionSearcher, handbook: CollectionInfo
) -> None:
    seen: list[RetrievalProfile] = []

    def factory(profile: RetrievalProfile) -> Reranker:
        seen.append(profile)
        return NoReranker()

    profile = semantic_profile(rerank="ce", reranker_model="m")
    MultiCollectionRetriever(searcher, reranker_factory=factory).retrieve(
        QUERY, [CollectionRef(handbook)], profile
    )
    assert seen == [profile]
    assert profile.rerank is RerankMode.CROSS_ENCODER
