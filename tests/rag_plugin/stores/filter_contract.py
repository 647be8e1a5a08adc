"""Metadata filter expressions, as every store must apply them (``rag_plugin.filters``).

:class:`~tests.rag_plugin.stores.store_contract.StoreContract` inherits this mixin. Each case
names the chunks it must keep, by hand: the memory store evaluates the rules in Python and
PostgreSQL compiles them to SQL, and both must keep exactly these, in all three legs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import (
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    MetadataFilter,
    as_expression,
    filters_from_json,
)
from rag_plugin.stores.base import ChunkInput, CollectionInfo, DocumentInput, SearchContext, Store
from rag_plugin.testing import FakeEmbedder

AND, OR, NOT = FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT
Op = FilterOperator

# Chunk i has METADATA[i]: numbers, numeric strings, booleans, lists, a string where a list
# is elsewhere, nulls, empty values, non-ASCII text, numbers beyond 2**53.
METADATA: list[dict[str, Any]] = [
    {"year": 2020, "topic": "birds", "labels": ["wet", "cold"], "name": "Heron"},
    {"year": 2022, "topic": "fish", "labels": ["wet"], "name": "Salmon run"},
    {"year": 2021.5, "topic": "birds", "labels": [], "name": "heron colony"},
    {"year": "2023", "topic": "mammals", "labels": ["dry"], "draft": ""},
    {"year": 2024, "topic": "Birds", "labels": "wet", "flag": True, "name": "ÉCOLE"},
    {"topic": None, "flag": 1, "draft": None},
    {"year": True, "labels": [1, 2], "name": "école", "big": 2.0**70},
    {"name": "ΟΔΟΣ", "big": 2**70},
]
EVERY = set(range(len(METADATA)))


def leaf(key: str, operator: FilterOperator, value: Any = None) -> MetadataFilter:
    return MetadataFilter(key, operator, tuple(value) if isinstance(value, list) else value)


CASES: list[tuple[str, FilterExpression, set[int]]] = [
    ("eq int", leaf("year", Op.EQ, 2020), {0}),
    ("eq float", leaf("year", Op.EQ, 2021.5), {2}),
    ("eq bool is not a number", leaf("flag", Op.EQ, True), {4}),
    ("eq number is not a bool", leaf("flag", Op.EQ, 1), {5}),
    ("eq string is not a number", leaf("year", Op.EQ, "2023"), {3}),
    ("ne, absent included", leaf("year", Op.NE, 2020), EVERY - {0}),
    ("gt numbers only", leaf("year", Op.GT, 2021), {1, 2, 4}),
    ("gte", leaf("year", Op.GTE, 2022), {1, 4}),
    ("lt", leaf("year", Op.LT, 2021), {0}),
    ("lte float", leaf("year", Op.LTE, 2021.5), {0, 2}),
    ("gt strings by code point", leaf("name", Op.GT, "Salmon"), {1, 2, 4, 6, 7}),
    ("in", leaf("topic", Op.IN, ["birds", "fish"]), {0, 1, 2}),
    ("in nothing", leaf("topic", Op.IN, []), set()),
    ("nin, absent included", leaf("topic", Op.NIN, ["birds", "fish"]), {3, 4, 5, 6, 7}),
    ("contains (a list only)", leaf("labels", Op.CONTAINS, "wet"), {0, 1}),
    ("contains a number", leaf("labels", Op.CONTAINS, 1), {6}),
    ("any", leaf("labels", Op.ANY, ["cold", "dry"]), {0, 3}),
    ("all", leaf("labels", Op.ALL, ["wet", "cold"]), {0}),
    ("all of none: every list", leaf("labels", Op.ALL, []), {0, 1, 2, 3, 6}),
    ("text_match", leaf("name", Op.TEXT_MATCH, "heron"), {2}),
    ("text_match_insensitive", leaf("name", Op.TEXT_MATCH_INSENSITIVE, "HERON"), {0, 2}),
    ("text_match_insensitive non-ASCII", leaf("name", Op.TEXT_MATCH_INSENSITIVE, "école"), {4, 6}),
    # Lowercased letter by letter, as PostgreSQL does: no final sigma.
    ("text_match_insensitive sigma", leaf("name", Op.TEXT_MATCH_INSENSITIVE, "οδοσ"), {7}),
    # Floats compare as the decimals a JSON document holds (2.0**70 is 1.1805916207174113e21).
    ("eq float beyond 2**53", leaf("big", Op.EQ, 2.0**70), {6}),
    ("eq int beyond 2**53", leaf("big", Op.EQ, 2**70), {7}),
    ("lt int beyond 2**53", leaf("big", Op.LT, 2**70), {6}),
    ("is_empty: absent, null, [] or ''", leaf("labels", Op.IS_EMPTY), {2, 5, 7}),
    ("is_empty null and ''", leaf("draft", Op.IS_EMPTY), EVERY),
    ("or", FilterGroup(OR, (leaf("topic", Op.EQ, "fish"), leaf("year", Op.GT, 2023))), {1, 4}),
    ("not", FilterGroup(NOT, (leaf("topic", Op.EQ, "birds"),)), EVERY - {0, 2}),
    (
        "nested",
        FilterGroup(
            AND,
            (
                leaf("topic", Op.IN, ["birds", "Birds"]),
                FilterGroup(OR, (leaf("labels", Op.CONTAINS, "wet"), leaf("year", Op.LT, 2021))),
            ),
        ),
        {0},
    ),
    (
        "not of or",
        FilterGroup(NOT, (leaf("year", Op.GTE, 2022), leaf("labels", Op.IS_EMPTY))),
        {0, 3, 6},
    ),
    ("empty and", FilterGroup(AND, ()), EVERY),
    ("empty or", FilterGroup(OR, ()), set()),
]


_T = TypeVar("_T")


class CountingContext(SearchContext):
    """A search context that lists every key it computes a value for."""

    __slots__ = ("computed",)

    def __init__(self, expression: FilterExpression | None) -> None:
        super().__init__(expression)
        self.computed: list[Hashable] = []

    def once(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        def counted() -> _T:
            self.computed.append(key)
            return compute()

        return super().once(key, counted)


def _kept_by_each_leg(
    store: Store,
    embedder: FakeEmbedder,
    collection: CollectionInfo,
    filters: FilterExpression | SearchContext,
) -> dict[str, list[str]]:
    """The sorted ids each leg keeps for "heron" under ``filters``, every chunk asked for."""
    n = len(METADATA)
    return {
        leg: sorted(hit.chunk.id for hit in hits)
        for leg, hits in (
            ("dense", store.dense(collection, embedder.embed_query("heron"), n, filters)),
            ("bm25", store.bm25(collection, "heron", n, filters)),
            ("fuzzy", store.fuzzy(collection, "heron", n, filters)),
        )
    }


class FilterContract:
    """Every operator and condition keeps the same chunks in every leg of every store."""

    @pytest.fixture
    def labelled(self, store: Store, embedder: FakeEmbedder) -> tuple[CollectionInfo, str]:
        collection = store.create_collection(
            "labelled", dimensions=embedder.dimensions, embedding_model="m"
        )
        chunks, start = [], 0
        for number, metadata in enumerate(METADATA):
            text = f"heron chunk{number}"
            vector = embedder.embed_query(text)
            chunks.append(ChunkInput(number, text, start, start + len(text), vector, metadata))
            start += len(text) + 1
        document = store.upsert_document(collection, DocumentInput(source="s"), chunks)
        return collection, document.id

    @pytest.mark.parametrize(("name", "expression", "kept"), CASES, ids=[c[0] for c in CASES])
    def test_each_operator_keeps_the_same_chunks_in_every_leg(
        self,
        store: Store,
        embedder: FakeEmbedder,
        labelled: tuple[CollectionInfo, str],
        name: str,
        expression: FilterExpression,
        kept: set[int],
    ) -> None:
        collection, document = labelled
        expected = sorted(f"{document}_{i}" for i in kept)
        for leg, found in _kept_by_each_leg(store, embedder, collection, expression).items():
            assert found == expected, (name, leg)

    @pytest.mark.parametrize(("name", "expression", "kept"), CASES, ids=[c[0] for c in CASES])
    def test_the_legs_of_one_search_share_what_they_work_out(
        self,
        store: Store,
        embedder: FakeEmbedder,
        labelled: tuple[CollectionInfo, str],
        name: str,
        expression: FilterExpression,
        kept: set[int],
    ) -> None:
        """As the engine's hybrid search runs them: one context for the three legs, in which
        the filter's compiled form and matching ids are each worked out once."""
        collection, document = labelled
        context = CountingContext(as_expression(expression))
        expected = sorted(f"{document}_{i}" for i in kept)
        for leg, found in _kept_by_each_leg(store, embedder, collection, context).items():
            assert found == expected, (name, leg)
        assert len(context.computed) == len(set(context.computed)), context.computed

    def test_k_results_come_back_when_k_match(
        self, store: Store, embedder: FakeEmbedder, labelled: tuple[CollectionInfo, str]
    ) -> None:
        collection, _ = labelled
        expression = leaf("labels", Op.IS_EMPTY)  # three chunks
        assert len(store.dense(collection, embedder.embed_query("x"), 2, expression)) == 2
        assert len(store.bm25(collection, "heron", 2, expression)) == 2
        assert len(store.fuzzy(collection, "heron", 2, expression)) == 2

    def test_the_json_form_means_the_same(
        self, store: Store, embedder: FakeEmbedder, labelled: tuple[CollectionInfo, str]
    ) -> None:
        collection, document = labelled
        expression = filters_from_json(
            {
                "condition": "or",
                "filters": [
                    {"key": "year", "operator": ">", "value": 2023},
                    {"key": "topic", "operator": "in", "value": ["fish"]},
                    {"filters": [{"key": "name", "operator": "text_match", "value": "colony"}]},
                ],
            }
        )
        hits = store.bm25(collection, "heron", 10, expression)
        assert sorted(hit.chunk.id for hit in hits) == [f"{document}_{i}" for i in (1, 2, 4)]

    @pytest.mark.parametrize(
        "expression",
        [
            leaf("year", Op.GT, True),
            leaf("year", Op.EQ, ["a"]),
            leaf("year", Op.IN, "a"),
            leaf("name", Op.TEXT_MATCH, 3),
            leaf("year", Op.EQ, float("inf")),
            leaf("year", Op.EQ, "a\x00b"),
            leaf("", Op.EQ, 1),
            leaf("draft", Op.IS_EMPTY, "x"),
            leaf("name", Op.EQ, "lone \ud800 surrogate"),
            leaf("name\udc00", Op.EQ, "x"),
        ],
    )
    def test_bad_filters_are_refused_by_every_leg(
        self,
        store: Store,
        embedder: FakeEmbedder,
        labelled: tuple[CollectionInfo, str],
        expression: FilterExpression,
    ) -> None:
        collection, _ = labelled
        with pytest.raises(InvalidInputError):
            store.dense(collection, embedder.embed_query("x"), 2, expression)
        with pytest.raises(InvalidInputError):
            store.bm25(collection, "heron", 2, expression)
        with pytest.raises(InvalidInputError):
            store.fuzzy(collection, "heron", 2, expression)
