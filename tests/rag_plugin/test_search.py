"""Search strategies (S1)."""

from __future__ import annotations

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.search import DEFAULT_STRATEGY, SearchStrategy


@pytest.mark.parametrize(
    ("name", "strategy"),
    [
        ("semantic", SearchStrategy.SEMANTIC),
        ("dense", SearchStrategy.SEMANTIC),
        ("vector", SearchStrategy.SEMANTIC),
        ("bm25", SearchStrategy.BM25),
        ("lexical", SearchStrategy.BM25),
        ("sparse", SearchStrategy.BM25),
        ("fuzzy", SearchStrategy.FUZZY),
        ("approximate", SearchStrategy.FUZZY),
        ("hybrid", SearchStrategy.HYBRID),
        ("combined", SearchStrategy.HYBRID),
        ("rrf", SearchStrategy.HYBRID),
        ("SEMANTIC", SearchStrategy.SEMANTIC),
        (" Hybrid ", SearchStrategy.HYBRID),
        (SearchStrategy.FUZZY, SearchStrategy.FUZZY),
    ],
)
def test_strategy_parse_accepts_names_and_aliases(
    name: str | SearchStrategy, strategy: SearchStrategy
) -> None:
    assert SearchStrategy.parse(name) is strategy


@pytest.mark.parametrize("name", ["unknown-strategy", "", "keyword"])
def test_strategy_parse_rejects_unknown_names_naming_the_four(name: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        SearchStrategy.parse(name)
    assert str(raised.value) == (
        f"Unknown search strategy: {name}. Use: semantic, bm25, fuzzy, hybrid"
    )


def test_strategy_default_and_display() -> None:
    assert SearchStrategy.default() is DEFAULT_STRATEGY is SearchStrategy.HYBRID
    assert [str(s) for s in SearchStrategy] == ["semantic", "bm25", "fuzzy", "hybrid"]
