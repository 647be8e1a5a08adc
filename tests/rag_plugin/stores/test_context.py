"""The context the legs of one search share (``rag_plugin.stores.context``)."""

from __future__ import annotations

import threading
import time

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import as_expression
from rag_plugin.stores.context import SearchContext


def test_a_context_holds_the_filter_validated_once() -> None:
    shared = SearchContext.of({"topic": "birds"})
    assert shared.expression == as_expression({"topic": "birds"})
    assert shared.filtered
    assert SearchContext.of(shared) is shared
    assert SearchContext.of(None).expression is None
    assert not SearchContext.of({}).filtered
    with pytest.raises(InvalidInputError, match="finite"):
        SearchContext.of({"year": float("nan")})


def test_legs_in_threads_get_one_computed_value_per_key() -> None:
    shared = SearchContext.of({"topic": "birds"})
    calls: list[str] = []

    def slow(key: str) -> str:
        calls.append(key)
        time.sleep(0.05)  # the others arrive while the first computes
        return f"ids of {key}"

    found: list[str] = []
    threads = [
        threading.Thread(target=lambda: found.append(shared.once("a", lambda: slow("a"))))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == ["ids of a"] * 3
    assert shared.once("b", lambda: slow("b")) == "ids of b"
    assert calls == ["a", "b"]


def test_the_query_is_analysed_once_per_analyzer() -> None:
    context = SearchContext()
    tokens = context.tokens("english", "The birds are singing")
    assert tokens == ["bird", "sing"]
    assert context.tokens("english", "The birds are singing") is tokens
    assert context.tokens("seed", "The birds are singing") == ["the", "birds", "are", "singing"]
    assert context.fuzzy_words("english", "The birds are singing") == ["birds", "singing"]
