"""Search strategies (SPEC S1): the four names and their aliases, and the default.

Searching is :class:`~rag_plugin.engine.CollectionSearcher`'s (over a store) or, for code
written against the seed, :class:`~rag_plugin.lexical.seed_engine.SearchEngine`'s.
"""

from __future__ import annotations

from enum import StrEnum

from rag_plugin.exceptions import InvalidInputError

__all__ = ["DEFAULT_STRATEGY", "SEED_STRATEGY", "SearchStrategy"]


class SearchStrategy(StrEnum):
    """How a query is matched: dense vectors, BM25, fuzzy words, or all three fused."""

    SEMANTIC = "semantic"
    BM25 = "bm25"
    FUZZY = "fuzzy"
    HYBRID = "hybrid"

    @classmethod
    def parse(cls, name: str | SearchStrategy) -> SearchStrategy:
        """The strategy called ``name`` or one of its aliases, case-insensitively."""
        if isinstance(name, SearchStrategy):
            return name
        strategy = _ALIASES.get(str(name).strip().lower())
        if strategy is None:
            raise InvalidInputError(
                f"Unknown search strategy: {name}. Use: semantic, bm25, fuzzy, hybrid"
            )
        return strategy

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every name :meth:`parse` knows (in lower case): the values and their aliases."""
        return tuple(_ALIASES)

    @classmethod
    def default(cls) -> SearchStrategy:
        """The strategy used when none is given: :data:`DEFAULT_STRATEGY` (hybrid)."""
        return DEFAULT_STRATEGY


_ALIASES: dict[str, SearchStrategy] = {
    "semantic": SearchStrategy.SEMANTIC,
    "dense": SearchStrategy.SEMANTIC,
    "vector": SearchStrategy.SEMANTIC,
    "bm25": SearchStrategy.BM25,
    "lexical": SearchStrategy.BM25,
    "sparse": SearchStrategy.BM25,
    "fuzzy": SearchStrategy.FUZZY,
    "approximate": SearchStrategy.FUZZY,
    "hybrid": SearchStrategy.HYBRID,
    "combined": SearchStrategy.HYBRID,
    "rrf": SearchStrategy.HYBRID,
}

DEFAULT_STRATEGY = SearchStrategy.HYBRID
"""The strategy of a search that names none: hybrid, the best measured (SPEC S1; bench/RESULTS.md
§1 round 3: nDCG@10 0.718 / 0.502 on SciFact train / Vaswani against 0.655 / 0.435 for
semantic)."""

SEED_STRATEGY = SearchStrategy.SEMANTIC
"""The seed's default strategy: pass ``strategy="semantic"`` for it."""
