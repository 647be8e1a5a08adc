"""Multi-collection retrieval's ranking: weights, priorities, image chunks, min_relevance."""

from __future__ import annotations

from rag_plugin.engine import CollectionSearcher
from rag_plugin.filters import FilterOperator, MetadataFilter
from rag_plugin.retrieval import CollectionRef, MultiCollectionRetriever
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.retrieval_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.retrieval_helpers import (
    FAQ,
    HANDBOOK,
    OFF,
    QUERY,
    add_document,
    rows,
    semantic_profile,
)


def test_weights_scale_scores_and_results_merge_by_score(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo, faq: CollectionInfo
) -> None:
    refs = [CollectionRef(handbook), CollectionRef(faq, weight=0.5, label="Help desk")]
    result = retriever.retrieve(QUERY, refs, OFF)
    # faq scores halve: 0.8 → 0.4; the image chunk is dropped (no vision); 0.0 scores fail
    # min_relevance 0.05
    assert rows(result) == [
        ("handbook", HANDBOOK[0][0], 1.0),
        ("handbook", HANDBOOK[1][0], 0.6),
        ("Help desk", FAQ[0][0], 0.4),
    ]
    assert [c.search_score for c in result] == [1.0, 0.6, 0.8]
    assert [c.collection.name for c in result] == ["handbook", "handbook", "faq"]


def test_vision_profiles_keep_image_chunks(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo, faq: CollectionInfo
) -> None:
    refs = [CollectionRef(handbook), CollectionRef(faq, weight=0.5)]
    result = retriever.retrieve(QUERY, refs, semantic_profile(rerank="off", vision=True))
    # the two faq chunks tie at 0.4 and keep the search's order (chunk index 0 before 1)
    assert rows(result) == [
        ("handbook", HANDBOOK[0][0], 1.0),
        ("handbook", HANDBOOK[1][0], 0.6),
        ("faq", FAQ[0][0], 0.4),
        ("faq", FAQ[1][0], 0.4),
    ]
    assert [c.has_image for c in result] == [False, False, False, True]


def test_image_chunks_are_left_out_before_ranking_so_k_come_back(
    retriever: MultiCollectionRetriever, faq: CollectionInfo
) -> None:
    # The image chunk ties for the best score; left out after ranking, a k of 2 would return
    # one chunk. Left out inside the legs, the next one takes its place.
    profile = semantic_profile(rerank="off", retrieval_k=2, min_relevance=0.0)
    result = retriever.retrieve(QUERY, [CollectionRef(faq)], profile)
    assert [c.chunk.content for c in result] == [FAQ[0][0], FAQ[2][0]]
    assert not any(c.has_image for c in result)


def test_profile_filters_combine_with_the_image_rule(
    retriever: MultiCollectionRetriever, faq: CollectionInfo
) -> None:
    images = MetadataFilter("has_image", FilterOperator.EQ, True)
    for vision, expected in ((False, []), (True, [FAQ[1][0]])):
        profile = semantic_profile(rerank="off", min_relevance=0.0, filters=images, vision=vision)
        result = retriever.retrieve(QUERY, [CollectionRef(faq)], profile)
        assert [c.chunk.content for c in result] == expected, vision


def test_equal_scores_follow_priority_then_the_callers_order(
    store: MemoryStore, retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    # a second collection with the same chunks: every score ties with the handbook's
    copy = store.create_collection("copy", dimensions=3, embedding_model="table")
    add_document(store, copy, HANDBOOK, "copy.md")
    profile = semantic_profile(rerank="off", retrieval_k=4)
    expected_pairs = [HANDBOOK[0][0], HANDBOOK[0][0], HANDBOOK[1][0], HANDBOOK[1][0]]

    def labels(refs: list[CollectionRef]) -> list[str]:
        result = retriever.retrieve(QUERY, refs, profile)
        assert [c.content for c in result] == expected_pairs
        return [c.label for c in result]

    first, second = CollectionRef(handbook), CollectionRef(copy, priority=5)
    assert labels([first, second]) == ["copy", "handbook", "copy", "handbook"]
    # equal priorities: the caller's order decides
    assert labels([CollectionRef(handbook), CollectionRef(copy)]) == [
        "handbook",
        "copy",
        "handbook",
        "copy",
    ]
    assert labels([CollectionRef(copy), CollectionRef(handbook)]) == [
        "copy",
        "handbook",
        "copy",
        "handbook",
    ]


def test_min_relevance_filters(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo, faq: CollectionInfo
) -> None:
    profile = semantic_profile(rerank="off", min_relevance=0.5)
    result = retriever.run(
        QUERY, [CollectionRef(handbook), CollectionRef(faq, weight=0.5)], profile
    )
    assert rows(result.chunks) == [
        ("handbook", HANDBOOK[0][0], 1.0),
        ("handbook", HANDBOOK[1][0], 0.6),
    ]
    assert result.relevance_fallback is False


def test_nothing_relevant_falls_back_to_the_unfiltered_top_final_k(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    profile = semantic_profile(rerank="off", min_relevance=1.0, retrieval_k=2)
    result = retriever.run(QUERY, [CollectionRef(handbook, weight=0.9)], profile)
    assert rows(result.chunks) == [
        ("handbook", HANDBOOK[0][0], 0.9),
        ("handbook", HANDBOOK[1][0], 0.54),
    ]
    assert result.relevance_fallback is True


def test_negative_similarities_clamp_to_zero(
    store: MemoryStore, searcher: CollectionSearcher, retriever: MultiCollectionRetriever
) -> None:
    info = store.create_collection("opposite", dimensions=3, embedding_model="table")
    add_document(
        store, info, [("Refund policy: refunds within 30 days.", [-1.0, 0.0, 0.0], {})], "x"
    )
    result = retriever.run(QUERY, [CollectionRef(info)], OFF)
    # cosine −1 clamps to 0, fails min_relevance, and comes back through the fallback
    assert [(c.score, c.search_score) for c in result.chunks] == [(0.0, 0.0)]
    assert result.relevance_fallback is True


def test_filters_restrict_every_collection(
    store: MemoryStore, retriever: MultiCollectionRetriever
) -> None:
    info = store.create_collection("mixed", dimensions=3, embedding_model="table")
    add_document(
        store,
        info,
        [
            ("Refund policy: refunds within 30 days.", [1.0, 0.0, 0.0], {"lang": "en"}),
            ("Shipping takes five days.", [0.6, 0.8, 0.0], {"lang": "de"}),
        ],
        "mixed",
    )
    profile = semantic_profile(rerank="off", filters={"lang": "de"})
    assert rows(retriever.retrieve(QUERY, [CollectionRef(info)], profile)) == [
        ("mixed", "Shipping takes five days.", 0.6)
    ]


def test_no_collections_find_nothing(retriever: MultiCollectionRetriever) -> None:
    assert retriever.retrieve(QUERY, [], semantic_profile()) == []
