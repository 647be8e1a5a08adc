"""Multi-collection retrieval (SPEC R1, R2) over the memory store with hand-made vectors.

Query vectors are unit vectors and chunk vectors are unit vectors, so every dense score is a
dot product written out in the comments; lexical scores come from normalised RRF ranks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rag_plugin.engine import CollectionSearcher
from rag_plugin.exceptions import CollectionNotFoundError, InvalidInputError
from rag_plugin.filters import FilterOperator, MetadataFilter
from rag_plugin.fusion import HybridWeights
from rag_plugin.outcome import SearchOutcome
from rag_plugin.rerank import NoReranker, Reranker, RerankMode, T
from rag_plugin.retrieval import (
    CollectionRef,
    MultiCollectionRetriever,
    RetrievalProfile,
    RetrievedChunk,
)
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.table_embedder import TableEmbedder

QUERY = "refund policy"
QUERY_VECTOR = [1.0, 0.0, 0.0]

Row = tuple[str, list[float], dict[str, Any]]

# (content, vector, extra metadata); dense score against QUERY_VECTOR is the first component.
HANDBOOK: list[Row] = [
    ("Refund policy: refunds within 30 days.", [1.0, 0.0, 0.0], {}),  # 1.0
    ("Shipping takes five days.", [0.6, 0.8, 0.0], {}),  # 0.6
    ("Office plants need water.", [0.0, 1.0, 0.0], {}),  # 0.0
]
FAQ: list[Row] = [
    ("FAQ: how do I ask for a refund?", [0.8, 0.6, 0.0], {}),  # 0.8
    ("Photo of the refund form.", [0.8, 0.6, 0.0], {"has_image": True}),  # 0.8, an image
    ("Opening hours are nine to five.", [0.0, 0.0, 1.0], {}),  # 0.0
]


def add_document(
    store: MemoryStore,
    collection: CollectionInfo,
    chunks: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]],
    source: str,
) -> None:
    inputs, start = [], 0
    for index, (text, vector, metadata) in enumerate(chunks):
        inputs.append(ChunkInput(index, text, start, start + len(text), vector, metadata))
        start += len(text) + 1
    store.upsert_document(collection, DocumentInput(source=source, title=source), inputs)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def handbook(store: MemoryStore) -> CollectionInfo:
    info = store.create_collection("handbook", dimensions=3, embedding_model="table")
    add_document(store, info, HANDBOOK, "handbook.md")
    return info


@pytest.fixture
def faq(store: MemoryStore) -> CollectionInfo:
    info = store.create_collection("faq", dimensions=3, embedding_model="table")
    add_document(store, info, FAQ, "faq.md")
    return info


@pytest.fixture
def searcher(store: MemoryStore) -> CollectionSearcher:
    table = {text: vector for text, vector, _ in HANDBOOK + FAQ}
    table.update({QUERY: QUERY_VECTOR, "Wer ist der Inhaber?": [0.0, 0.0, 1.0]})
    return CollectionSearcher(store, TableEmbedder(table))


@pytest.fixture
def retriever(searcher: CollectionSearcher) -> MultiCollectionRetriever:
    return MultiCollectionRetriever(searcher)


def semantic_profile(**options: Any) -> RetrievalProfile:
    """A profile on the dense leg alone (the default is hybrid): these tests check scores that
    are the fake embedder's cosine similarities."""
    return RetrievalProfile(**{"strategy": "semantic", **options})


OFF = semantic_profile(rerank="off")


def rows(chunks: Sequence[RetrievedChunk]) -> list[tuple[str, str, float]]:
    return [(c.label, c.content, round(c.score, 12)) for c in chunks]


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


def test_a_failing_collection_is_skipped_and_reported(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    gone = CollectionInfo("deleted", None, 3, "table")
    other_model = CollectionInfo("handbook", "user:1", 3, "another-model")
    refs = [CollectionRef(gone), CollectionRef(other_model, label="Mine"), CollectionRef(handbook)]
    result = retriever.run(QUERY, refs, OFF)
    assert [c.content for c in result.chunks] == [HANDBOOK[0][0], HANDBOOK[1][0]]
    assert [(f.label, f.error) for f in result.failures] == [
        ("deleted", str(CollectionNotFoundError("deleted"))),
        (
            "Mine",
            "Collection 'handbook' holds 3-d vectors of the model 'another-model', but the "
            "embedder is 'table' (3-d); use the collection's model.",
        ),
    ]


class RefusingSearcher(CollectionSearcher):
    def search(self, collection: CollectionInfo, query: str, **kwargs: Any) -> SearchOutcome:
        raise InvalidInputError("Unsupported filter on 'lang'.")


def test_invalid_input_from_the_search_propagates(
    store: MemoryStore, searcher: CollectionSearcher, handbook: CollectionInfo
) -> None:
    retriever = MultiCollectionRetriever(RefusingSearcher(store, searcher.embedder_for(handbook)))
    with pytest.raises(InvalidInputError, match="Unsupported filter on 'lang'"):
        retriever.retrieve(QUERY, [CollectionRef(handbook)], OFF)


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


# -- hybrid and query expansion ---------------------------------------------------------

SYNONYMS = {"inhaber": ["impressum", "betreiber", "verantwortlich", "geschäftsführer"]}
IMPRINT: list[Row] = [
    ("Impressum: Betreiber dieser Seite ist die Beispiel GmbH.", [0.0, 1.0, 0.0], {}),
    ("Unsere Öffnungszeiten sind montags bis freitags.", [0.0, 0.0, 1.0], {}),
    ("Verantwortlich für den Inhalt: Erika Muster.", [0.6, 0.8, 0.0], {}),
]
BM25_ONLY = HybridWeights(semantic=0.0, bm25=1.0, fuzzy=0.0)


@pytest.fixture
def imprint(store: MemoryStore) -> CollectionInfo:
    info = store.create_collection("imprint", dimensions=3, embedding_model="table")
    add_document(store, info, IMPRINT, "imprint")
    return info


def test_expansion_feeds_synonyms_to_the_lexical_leg(
    retriever: MultiCollectionRetriever, imprint: CollectionInfo
) -> None:
    question = "Wer ist der Inhaber?"
    plain = RetrievalProfile(strategy="hybrid", weights=BM25_ONLY, rerank="off")
    # without expansion only "ist" matches (the seed tokenizer keeps stopwords)
    assert rows(retriever.retrieve(question, [CollectionRef(imprint)], plain)) == [
        ("imprint", IMPRINT[0][0], 1.0)
    ]
    expanded = RetrievalProfile(
        strategy="hybrid",
        weights=BM25_ONLY,
        rerank="off",
        expand_query=True,
        language="german",
        synonyms=SYNONYMS,
    )
    result = retriever.run(question, [CollectionRef(imprint)], expanded)
    assert result.lexical_query == "inhaber impressum betreiber verantwortlich geschäftsführer"
    # BM25: chunk 0 matches two terms, chunk 2 one; normalised RRF (k 10): 1 and 11/12
    assert rows(result.chunks) == [
        ("imprint", IMPRINT[0][0], 1.0),
        ("imprint", IMPRINT[2][0], round(11 / 12, 12)),
    ]


# -- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weight": -1.0}, "The weight of collection 'handbook' must be a finite number ≥ 0"),
        ({"weight": float("inf")}, "must be a finite number ≥ 0, got inf."),
        ({"priority": 1.5}, "The priority of collection 'handbook' must be an integer, got 1.5."),
    ],
)
def test_collection_ref_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        CollectionRef(CollectionInfo("handbook", None, 3, "table"), **kwargs)
    assert message in str(caught.value)


def test_retrieve_refuses_bad_arguments(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    with pytest.raises(InvalidInputError, match="The query is empty"):
        retriever.retrieve("  ", [CollectionRef(handbook)])
    with pytest.raises(InvalidInputError, match="Collection 'handbook' is listed twice"):
        retriever.retrieve(QUERY, [CollectionRef(handbook), CollectionRef(handbook, weight=2)])
    with pytest.raises(InvalidInputError, match="collections must hold CollectionRef items"):
        retriever.retrieve(QUERY, [handbook])  # type: ignore[list-item]


def test_an_explained_retrieval_shows_each_search_and_the_order_before_the_rerank(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo, faq: CollectionInfo
) -> None:
    refs = [CollectionRef(handbook), CollectionRef(faq, weight=0.5, priority=1, label="Help")]
    profile = RetrievalProfile(rerank_alpha=1.0, retrieval_k=2)  # hybrid; overlap decides
    plain = retriever.run(QUERY, refs, profile)
    result = retriever.run(QUERY, refs, profile, explain=True)
    assert (plain.explanation, dataclasses.replace(result, explanation=None)) == (None, plain)
    explanation = result.explanation
    assert explanation is not None
    # Searched in priority order, each with its weight and the engine's explained outcome.
    assert [(s.label, s.weight, s.priority) for s in explanation.searches] == [
        ("Help", 0.5, 1),
        ("handbook", 1.0, 0),
    ]
    for search in explanation.searches:
        legs = search.outcome.explanation
        assert legs is not None
        assert [leg.leg for leg in legs.legs] == [
            SearchStrategy.SEMANTIC,
            SearchStrategy.BM25,
            SearchStrategy.FUZZY,
        ]
        for hit in search.outcome.hits:
            parts = legs.contributions_of(hit.id)
            assert math.fsum(part.value for part in parts) == hit.score
    # The candidates are every search's hits by weighted score; the reranker got those that
    # reached min_relevance, and the rerank's effect is each chunk's rank before and after.
    searched = {hit.id for s in explanation.searches for hit in s.outcome.hits}
    assert {c.id for c in explanation.candidates} == searched
    assert [c.score for c in explanation.candidates] == sorted(
        (c.score for c in explanation.candidates), reverse=True
    )
    assert list(explanation.before_rerank) == [
        c for c in explanation.candidates if c.score >= profile.min_relevance
    ]
    before = [explanation.rank_before_rerank(c.id) for c in result.chunks]
    assert [c.content for c in result.chunks] == [HANDBOOK[0][0], FAQ[0][0]]
    assert before == [
        [c.id for c in explanation.before_rerank].index(c.id) + 1 for c in result.chunks
    ]
    assert explanation.rank_before_rerank("nowhere") is None


def test_typo_correction_in_a_profile_corrects_the_lexical_legs(
    retriever: MultiCollectionRetriever, handbook: CollectionInfo
) -> None:
    lexical = HybridWeights(semantic=0.0, bm25=1.0, fuzzy=0.1)  # the table has no typos
    profile = RetrievalProfile(correct_typos=True, rerank="off", weights=lexical)
    result = retriever.run("refund polcy", [CollectionRef(handbook)], profile, explain=True)
    assert result.explanation is not None
    (search,) = result.explanation.searches
    assert search.outcome.corrected_query == "refund policy"
    assert result.chunks[0].content == HANDBOOK[0][0]


def test_typo_correction_needs_the_hybrid_strategy() -> None:
    with pytest.raises(InvalidInputError, match="correct_typos corrects the lexical legs"):
        RetrievalProfile(strategy="semantic", correct_typos=True)
