"""What the legs of one search share: its filter, validated once, the query's analyses, and
whatever one leg works out for the others (the ids of the chunks the filter matches, the
filter compiled to SQL or to a Qdrant condition).

:meth:`Store.dense <rag_plugin.stores.base.Store.dense>` and the other legs make one of the
filters they are given, or take the one the engine made for all the legs of a hybrid search,
and hand it to the store's hook, so no store looks at what kind of filter it got.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from rag_plugin.filters import FilterExpression, Filters, as_expression
from rag_plugin.lexical.analyzers import get_analyzer
from rag_plugin.lexical.fuzzy import fuzzy_query_words

__all__ = ["SearchContext"]

_T = TypeVar("_T")


class SearchContext:
    """One search's filter and what its legs share about it and about the query.

    A store keys what it keeps (:meth:`once`) by what it depends on besides the filter, such
    as the collection: the PostgreSQL store keeps the ids of the matching chunks, so a hybrid
    search reads them once instead of once a leg, and legs running at once in threads wait
    for the first reader instead of all reading them side by side. Each leg still has its own
    transaction, so the ids come from the snapshot of whichever leg read them first: as if the
    other legs ran a moment earlier or later. Valid for one search; never keep one across
    searches (writes change what matches).
    """

    __slots__ = ("_kept", "_lock", "expression")

    def __init__(self, expression: FilterExpression | None = None) -> None:
        self.expression = expression
        self._lock = threading.Lock()
        self._kept: dict[Hashable, Any] = {}

    @classmethod
    def of(cls, filters: Filters | SearchContext | None) -> SearchContext:
        """``filters`` validated (``InvalidInputError`` naming the problem), as a context of
        its own; a context is returned as it is, for the legs of one search to share."""
        if isinstance(filters, SearchContext):
            return filters
        return cls(as_expression(filters))

    @property
    def filtered(self) -> bool:
        """Whether the search has a filter."""
        return self.expression is not None

    def once(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``'s value, computed by the first caller with this ``key`` (the others
        wait for it, then get the same value)."""
        with self._lock:
            if key not in self._kept:
                self._kept[key] = compute()
            value: _T = self._kept[key]
            return value

    def tokens(self, analyzer: str, query: str) -> list[str]:
        """``query``'s terms by ``analyzer`` (what BM25 scores), in order, repetitions kept."""
        return self.once(("tokens", analyzer, query), lambda: get_analyzer(analyzer).tokens(query))

    def fuzzy_words(self, analyzer: str, query: str) -> list[str]:
        """``query``'s words the fuzzy leg scores (:func:`fuzzy_query_words` with the
        analyzer's stopwords), in order, repetitions kept."""
        return self.once(
            ("fuzzy_words", analyzer, query),
            lambda: fuzzy_query_words(query, get_analyzer(analyzer)),
        )
