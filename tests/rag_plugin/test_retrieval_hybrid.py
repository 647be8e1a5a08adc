"""Multi-collection retrieval, hybrid: query expansion, typo correction, explained runs."""

from __future__ import annotations

import dataclasses
import math

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.fusion import HybridWeights
from rag_plugin.retrieval import CollectionRef, MultiCollectionRetriever, RetrievalProfile
from rag_plugin.search import SearchStrategy
from rag_plugin.stores.base import CollectionInfo
from rag_plugin.stores.memory import MemoryStore
from tests.rag_plugin.retrieval_helpers import *  # noqa: F403  (the fixtures)
from tests.rag_plugin.retrieval_helpers import FAQ, HANDBOOK, QUERY, Row, add_document, rows

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
