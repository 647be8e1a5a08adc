"""The filter expression's JSON form and validation (the stores' behaviour is in the store
contract's ``filter_contract.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from rag_plugin.exceptions import InvalidInputError
from rag_plugin.filters import (
    MAX_FILTERS,
    FilterCondition,
    FilterGroup,
    FilterOperator,
    MetadataFilter,
    as_expression,
    filters_from_json,
    matches,
)


def test_a_mapping_is_equality_filters() -> None:
    assert as_expression({"a": 1, "b": "x"}) == FilterGroup(
        FilterCondition.AND,
        (MetadataFilter("a", FilterOperator.EQ, 1), MetadataFilter("b", FilterOperator.EQ, "x")),
    )
    assert as_expression({}) is None
    assert as_expression(None) is None


def test_json_operators_by_symbol_or_name() -> None:
    for spelling in (">=", "gte", "GTE"):
        assert filters_from_json({"key": "year", "operator": spelling, "value": 2021}) == (
            MetadataFilter("year", FilterOperator.GTE, 2021)
        )
    assert filters_from_json({"key": "t", "value": "x"}) == MetadataFilter(
        "t", FilterOperator.EQ, "x"
    )
    assert filters_from_json({"key": "t", "operator": "in", "value": ["x", "y"]}) == (
        MetadataFilter("t", FilterOperator.IN, ("x", "y"))
    )
    assert filters_from_json({"filters": []}) == FilterGroup(FilterCondition.AND, ())
    assert filters_from_json(None) is None


def nested(depth: int) -> dict[str, Any]:
    data: dict[str, Any] = {"key": "a", "value": 1}
    for _ in range(depth):
        data = {"condition": "and", "filters": [data]}
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"key": "a", "operator": "~", "value": 1}, "unknown operator '~'"),
        ({"condition": "xor", "filters": []}, "condition must be 'and', 'or' or 'not'"),
        ({"filters": "a"}, "filters must be a list"),
        ([1], "must be a JSON object"),
        ({"key": "a", "operator": ">", "value": [1]}, "use a string, integer"),
        ({"key": "a", "operator": ">", "value": False}, "not a boolean"),
        ({"key": "a", "operator": "text_match", "value": 1}, "needs a string"),
        ({"key": "a", "operator": "in", "value": 1}, "needs a list"),
        ({"key": "a", "operator": "is_empty", "value": 1}, "takes no value"),
        ({"key": "a", "value": {"b": 1}}, "use a string, integer"),
        ({"key": 3, "value": 1}, "must be a non-empty string"),
        (nested(9), "deeper than 8"),
        ({"filters": [{"key": "a", "value": 1}] * (MAX_FILTERS + 1)}, "more than 100"),
    ],
)
def test_bad_json_filters_name_the_problem(data: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        filters_from_json(data)


def test_eight_levels_are_allowed() -> None:
    expression = filters_from_json(nested(8))
    assert expression is not None
    assert matches(expression, {"a": 1.0})
    assert not matches(expression, {"a": True})
