"""Metadata filters: one typed expression, the vocabulary of LlamaIndex's ``MetadataFilters``.

A filter is a :class:`MetadataFilter` (``key``, ``operator``, ``value``) or a
:class:`FilterGroup` of filters under ``and`` / ``or`` / ``not``, nested at most
:data:`MAX_DEPTH` deep. Every store applies it inside every leg, before ranking; the memory store
evaluates :func:`matches` per chunk and PostgreSQL compiles the same rules to SQL
(``stores/postgres/filters.py``), and the contract suite checks that both agree.

What each operator means for a chunk's ``metadata`` (``stored``: the value under ``key``; a
missing key and JSON ``null`` are *absent*). Values compare as JSON does: numbers by value
(``1`` equals ``1.0``; a float as its shortest decimal, which is what a JSON document and
PostgreSQL hold), a boolean is never a number, a list never equals a scalar.

- ``==`` / ``!=``: stored equals the value / does not (an absent key is "not equal").
- ``>`` ``>=`` ``<`` ``<=``: stored and value are both numbers, or both strings (compared by
  code point); otherwise no match.
- ``in`` / ``nin``: stored equals one of the values (a list) / none of them (absent matches).
- ``contains``: stored is a list holding the value; ``any`` / ``all``: a list holding at least
  one / every one of the values.
- ``text_match`` / ``text_match_insensitive``: stored is a string holding the value as a
  substring (the second after lowercasing both, one character at a time as PostgreSQL's
  ``lower()`` does; on a database whose character type is ``C`` only ASCII letters lower, so
  non-ASCII text then matches case-sensitively there).
- ``is_empty``: absent, ``""`` or ``[]``.
- Groups: ``and`` (every filter), ``or`` (at least one), ``not`` (none of them, as LlamaIndex
  reads it). An empty ``and`` or ``not`` matches everything, an empty ``or`` nothing.

A plain mapping ``{key: value}`` (the older form, still accepted everywhere) is the ``and`` of
``==`` filters. In the JSON form an object with ``key`` is one filter and one with ``filters``
a group, so equality on metadata keys named ``key``, ``operator``, ``value``, ``condition`` or
``filters`` needs the explicit form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any, TypeAlias

from rag_plugin.exceptions import InvalidInputError

__all__ = [
    "LIST_OPERATORS",
    "MAX_DEPTH",
    "MAX_FILTERS",
    "MAX_KEY_LENGTH",
    "MAX_VALUES",
    "ORDERING_OPERATORS",
    "TEXT_OPERATORS",
    "FilterCondition",
    "FilterExpression",
    "FilterGroup",
    "FilterOperator",
    "Filters",
    "MetadataFilter",
    "Scalar",
    "as_expression",
    "filters_from_json",
    "matches",
]

Scalar: TypeAlias = str | int | float | bool

MAX_DEPTH = 8
"""Groups nest at most this deep (the top group is depth 1)."""

MAX_FILTERS = 100
"""Filters (leaves) in one expression at most."""

MAX_VALUES = 1000
"""Values of one ``in`` / ``nin`` / ``any`` / ``all`` filter at most."""

MAX_KEY_LENGTH = 256


class FilterOperator(StrEnum):
    """The operators, spelled as LlamaIndex's ``FilterOperator`` values."""

    EQ = "=="
    NE = "!="
    GT = ">"
    GTE = ">="
    LT = "<"
    LTE = "<="
    IN = "in"
    NIN = "nin"
    ANY = "any"
    ALL = "all"
    CONTAINS = "contains"
    TEXT_MATCH = "text_match"
    TEXT_MATCH_INSENSITIVE = "text_match_insensitive"
    IS_EMPTY = "is_empty"


class FilterCondition(StrEnum):
    """How a group combines its filters."""

    AND = "and"
    OR = "or"
    NOT = "not"


# Operator families, by the value each takes (the rest compare one scalar of any type).
LIST_OPERATORS = frozenset(
    {FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY, FilterOperator.ALL}
)
ORDERING_OPERATORS = frozenset(
    {FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE}
)
TEXT_OPERATORS = frozenset({FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE})


@dataclass(frozen=True, slots=True)
class MetadataFilter:
    """One condition on one metadata key; build it with :func:`as_expression` (or the JSON
    parser), which validates it."""

    key: str
    operator: FilterOperator
    value: Scalar | tuple[Scalar, ...] | None


@dataclass(frozen=True, slots=True)
class FilterGroup:
    """Filters combined by ``condition``."""

    condition: FilterCondition
    filters: tuple[FilterExpression, ...]


FilterExpression: TypeAlias = MetadataFilter | FilterGroup
Filters: TypeAlias = FilterExpression | Mapping[str, Scalar]
"""What the store legs accept: an expression, or ``{key: value}`` equality filters (the legs
of one search share them as a :class:`~rag_plugin.stores.context.SearchContext`)."""


# -- building and validating -------------------------------------------------------------


def as_expression(filters: Filters | None) -> FilterExpression | None:
    """``filters`` validated as an expression; None (or an empty mapping) for no filter.

    Raises :class:`InvalidInputError` naming the problem: an unknown operator or condition,
    a value of the wrong type for its operator, a non-finite number, groups nested deeper
    than :data:`MAX_DEPTH`, more than :data:`MAX_FILTERS` filters.
    """
    if filters is None:
        return None
    if isinstance(filters, MetadataFilter | FilterGroup):
        expression = filters
    elif isinstance(filters, Mapping):
        if not filters:
            return None
        expression = FilterGroup(
            FilterCondition.AND,
            tuple(MetadataFilter(key, FilterOperator.EQ, value) for key, value in filters.items()),
        )
    else:
        raise InvalidInputError(
            f"filters must be a mapping of key to value or a filter expression, "
            f"got {type(filters).__name__}."
        )
    count = _check(expression, 1)
    if count > MAX_FILTERS:
        raise InvalidInputError(f"filters hold {count} conditions; the limit is {MAX_FILTERS}.")
    return expression


def _check(expression: FilterExpression, depth: int) -> int:
    """Validate ``expression``; return how many filters it holds."""
    if isinstance(expression, FilterGroup):
        if depth > MAX_DEPTH:
            raise InvalidInputError(f"filters nest deeper than {MAX_DEPTH} groups.")
        if not isinstance(expression.condition, FilterCondition):
            raise InvalidInputError(f"unknown filter condition {expression.condition!r}.")
        return sum(_check(child, depth + 1) for child in expression.filters)
    if not isinstance(expression, MetadataFilter):
        raise InvalidInputError(
            f"a filter must be a MetadataFilter or FilterGroup, got {expression!r}."
        )
    key, operator, value = expression.key, expression.operator, expression.value
    if (
        not isinstance(key, str)
        or not key
        or len(key) > MAX_KEY_LENGTH
        or "\x00" in key
        or not _encodable(key)
    ):
        raise InvalidInputError(
            f"filter key {key!r} must be a non-empty string of at most {MAX_KEY_LENGTH} "
            "characters of valid Unicode without NUL."
        )
    if not isinstance(operator, FilterOperator):
        raise InvalidInputError(f"filter {key!r}: unknown operator {operator!r}.")
    where = f"filter {key!r} ({operator.value})"
    if operator is FilterOperator.IS_EMPTY:
        if value is not None:
            raise InvalidInputError(f"{where} takes no value.")
    elif operator in LIST_OPERATORS:
        if not isinstance(value, tuple) or len(value) > MAX_VALUES:
            raise InvalidInputError(f"{where} needs a list of at most {MAX_VALUES} values.")
        for item in value:
            _check_scalar(where, item)
    else:
        _check_scalar(where, value)
        if operator in ORDERING_OPERATORS and isinstance(value, bool):
            raise InvalidInputError(f"{where} needs a number or a string, not a boolean.")
        if operator in TEXT_OPERATORS and not isinstance(value, str):
            raise InvalidInputError(f"{where} needs a string.")
    return 1


def _check_scalar(where: str, value: object) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInputError(f"{where}: a value must not contain NUL.")
        if not _encodable(value):
            raise InvalidInputError(f"{where}: a value must be valid Unicode (found a surrogate).")
        return
    if isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{where}: {value!r} is not a finite number.")
        return
    raise InvalidInputError(
        f"{where} has value {value!r}; use a string, integer, finite float or boolean."
    )


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _operator(name: object, where: str) -> FilterOperator:
    """An operator from its symbol (``">="``) or its name (``"gte"``, any case)."""
    if isinstance(name, str):
        for operator in FilterOperator:
            if name == operator.value or name.upper() == operator.name:
                return operator
    known = ", ".join(operator.value for operator in FilterOperator)
    raise InvalidInputError(f"{where}: unknown operator {name!r}; use one of {known}.")


def filters_from_json(data: object, *, where: str = "filters") -> FilterExpression | None:
    """An expression from its JSON form, validated (None for ``null`` or ``{}``).

    A group is ``{"condition": "and" | "or" | "not", "filters": [...]}`` (``condition``
    defaults to ``and``), a filter ``{"key": ..., "operator": ..., "value": ...}`` (``operator``
    defaults to ``==``; a symbol or a name such as ``"gte"``). Any other object is
    ``{key: value}`` equality filters.
    """
    if data is None or (isinstance(data, Mapping) and not data):
        return None
    expression = _from_json(data, where, 1)
    return as_expression(expression)


def _from_json(data: object, where: str, depth: int) -> FilterExpression:
    if depth > MAX_DEPTH + 1:
        raise InvalidInputError(f"{where}: filters nest deeper than {MAX_DEPTH} groups.")
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"{where} must be a JSON object, got {type(data).__name__}.")
    if "filters" in data and set(data) <= {"condition", "filters"}:
        condition = data.get("condition", "and")
        if not isinstance(condition, str) or condition.lower() not in set(FilterCondition):
            raise InvalidInputError(
                f"{where}.condition must be 'and', 'or' or 'not', got {condition!r}."
            )
        children = data["filters"]
        if not isinstance(children, list):
            raise InvalidInputError(f"{where}.filters must be a list.")
        if len(children) > MAX_FILTERS:
            raise InvalidInputError(f"{where}.filters holds more than {MAX_FILTERS} filters.")
        return FilterGroup(
            FilterCondition(condition.lower()),
            tuple(
                _from_json(child, f"{where}.filters[{i}]", depth + 1)
                for i, child in enumerate(children)
            ),
        )
    if "key" in data and set(data) <= {"key", "operator", "value"}:
        operator = _operator(data.get("operator", "=="), where)
        value = data.get("value")
        if isinstance(value, list):
            value = tuple(value)
        return MetadataFilter(data["key"], operator, value)
    if len(data) > MAX_FILTERS:
        raise InvalidInputError(f"{where} holds more than {MAX_FILTERS} filters.")
    return FilterGroup(
        FilterCondition.AND,
        tuple(MetadataFilter(key, FilterOperator.EQ, value) for key, value in data.items()),
    )


# -- evaluation ------------------------------------------------------------------------


def matches(expression: FilterExpression, metadata: Mapping[str, Any]) -> bool:
    """Whether a chunk with ``metadata`` passes ``expression`` (the module's rules)."""
    if isinstance(expression, FilterGroup):
        results = (matches(child, metadata) for child in expression.filters)
        if expression.condition is FilterCondition.AND:
            return all(results)
        if expression.condition is FilterCondition.OR:
            return any(results)
        return not any(results)
    stored = metadata.get(expression.key)
    operator, value = expression.operator, expression.value
    if operator is FilterOperator.IS_EMPTY:
        return stored is None or stored == "" or stored == []
    if operator is FilterOperator.NE:
        return not _equal(stored, value)
    if operator is FilterOperator.NIN:
        return not any(_equal(stored, item) for item in _values(value))
    if stored is None:
        return False
    if operator is FilterOperator.EQ:
        return _equal(stored, value)
    if operator is FilterOperator.IN:
        return any(_equal(stored, item) for item in _values(value))
    if operator in ORDERING_OPERATORS:
        return _ordered(operator, stored, value)
    if operator in TEXT_OPERATORS:
        if not isinstance(stored, str) or not isinstance(value, str):
            return False
        if operator is FilterOperator.TEXT_MATCH_INSENSITIVE:
            return _lower(value) in _lower(stored)
        return value in stored
    if not isinstance(stored, list):
        return False
    if operator is FilterOperator.CONTAINS:
        return any(_equal(item, value) for item in stored)
    held = [any(_equal(item, wanted) for item in stored) for wanted in _values(value)]
    return all(held) if operator is FilterOperator.ALL else any(held)


def _lower(text: str) -> str:
    """Lowercased one character at a time (no final-sigma rule; a character whose lowercase
    is longer stays), as PostgreSQL's ``lower()`` maps characters."""
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)


def _number(value: int | float) -> Decimal:
    """A number as the decimal a JSON document holds: a float as its shortest repr."""
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _values(value: object) -> Sequence[object]:
    return value if isinstance(value, tuple) else ()


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(stored: object, value: object) -> bool:
    """JSON equality of a stored value and a scalar: a boolean is never a number."""
    if stored is None or isinstance(stored, list | dict):
        return False
    if isinstance(stored, bool) or isinstance(value, bool):
        return stored is value
    if _is_number(stored) and _is_number(value):
        return _number(stored) == _number(value)  # type: ignore[arg-type]
    return bool(stored == value)


def _ordered(operator: FilterOperator, stored: object, value: object) -> bool:
    left: Any
    right: Any
    if _is_number(stored) and _is_number(value):
        left, right = _number(stored), _number(value)  # type: ignore[arg-type]
    elif isinstance(stored, str) and isinstance(value, str):
        left, right = stored, value
    else:
        return False
    if operator is FilterOperator.GT:
        return bool(left > right)
    if operator is FilterOperator.GTE:
        return bool(left >= right)
    if operator is FilterOperator.LT:
        return bool(left < right)
    return bool(left <= right)
