"""Retrieval profiles: validation, normalised names, candidates per collection, leg filters."""

from __future__ import annotations

from typing import Any

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import FilterCondition, FilterGroup, FilterOperator, MetadataFilter, matches
from rag_plugin.profiles import RetrievalProfile, candidate_count, leg_filters
from rag_plugin.rerank import RerankMode
from rag_plugin.search import SearchStrategy


@pytest.mark.parametrize(("final_k", "expected"), [(1, 32), (2, 32), (4, 32), (5, 40), (8, 64)])
def test_candidate_count(final_k: int, expected: int) -> None:
    assert candidate_count(final_k) == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retrieval_k": 0}, "retrieval_k must be an integer from 1 to 100, got 0."),
        ({"retrieval_k": 101}, "retrieval_k must be an integer from 1 to 100, got 101."),
        ({"retrieval_k": True}, "retrieval_k must be an integer from 1 to 100, got True."),
        ({"min_relevance": 1.5}, "min_relevance must be a number from 0 to 1, got 1.5."),
        ({"min_relevance": float("nan")}, "min_relevance must be a number from 0 to 1, got nan."),
        ({"rerank_alpha": -0.1}, "rerank_alpha must be a number from 0 to 1, got -0.1."),
        ({"vision": "yes"}, "vision must be true or false, got 'yes'."),
        ({"rerank": "fancy"}, "Unknown rerank mode 'fancy'; use one of: lexical"),
        ({"strategy": "bm25"}, "searches with 'semantic' or 'hybrid'"),
        ({"strategy": "nope"}, "nope"),
        (
            {"expand_query": True, "strategy": "semantic"},
            "expand_query expands the lexical legs, so it needs the hybrid",
        ),
        ({"language": "klingon", "strategy": "hybrid"}, "Unknown query expansion language"),
        ({"synonyms": {"a b": ["c"]}}, "The synonym key 'a b' must be one word"),
        ({"reranker_model": 5}, "reranker_model must be a model name, got 5."),
    ],
)
def test_profile_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        RetrievalProfile(**kwargs)
    assert message in str(caught.value)


def test_profile_normalises_names_and_copies_the_synonym_table() -> None:
    table = {"Inhaber": ["Impressum"]}
    profile = RetrievalProfile(
        strategy="rrf", rerank="CE", language="de", synonyms=table, expand_query=True
    )
    assert profile.strategy is SearchStrategy.HYBRID
    assert profile.rerank is RerankMode.CROSS_ENCODER
    assert profile.language == "german"
    assert dict(profile.synonyms) == {"inhaber": ("impressum",)}
    assert table == {"Inhaber": ["Impressum"]}


YEAR = MetadataFilter("year", FilterOperator.GTE, 2020)


def test_a_vision_profile_filters_by_its_own_filters_only() -> None:
    assert leg_filters(RetrievalProfile(vision=True)) is None
    assert leg_filters(RetrievalProfile(vision=True, filters=YEAR)) == YEAR


@pytest.mark.parametrize(
    "chunk",
    [
        {},
        {"has_image": None},
        {"has_image": False},
        {"has_image": 0},
        {"has_image": ""},
        {"has_image": []},
    ],
)
def test_a_profile_without_vision_keeps_chunks_without_an_image(chunk: dict[str, Any]) -> None:
    rule = leg_filters(RetrievalProfile())
    assert rule is not None
    assert matches(rule, chunk)
    assert not matches(rule, {"has_image": True})


def test_a_profile_without_vision_adds_the_image_rule_to_its_filters() -> None:
    combined = leg_filters(RetrievalProfile(filters=YEAR))
    assert isinstance(combined, FilterGroup)
    assert combined.condition is FilterCondition.AND
    assert combined.filters[0] == YEAR
    assert matches(combined, {"year": 2021})
    assert not matches(combined, {"year": 2019})
    assert not matches(combined, {"year": 2021, "has_image": True})
