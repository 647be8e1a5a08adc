"""Metadata filters as Qdrant conditions, with the rules of :mod:`rag_plugin.filters` exactly.

Qdrant's own matching differs from ours: a list payload matches a scalar ``MatchValue``, a
boolean may pass a numeric range, and it compares numbers as doubles. So each chunk point also
carries its metadata's scalars split by JSON type, under keys Qdrant cannot confuse
(:func:`typed_payload`): ``fs`` strings, ``fn`` numbers, ``fb`` booleans, and ``ls`` / ``ln`` /
``lb`` the string, number and boolean elements of list values. ``==`` on a string becomes a
``MatchValue`` on ``fs.key``, a number a closed ``Range`` on ``fn.key``, ``contains`` the same
on the list keys, and groups become ``must`` / ``should`` / ``must_not``.

What has no exact Qdrant form is evaluated in Python over the collection's chunk payloads and
joins the rest as the ids it keeps (``HasIdCondition``): ordering of strings,
``text_match``, ``text_match_insensitive``, an empty ``any`` / ``all``, a key that is not a
plain identifier (a Qdrant key path would read its dots), and integers beyond ±2**53 (a double
cannot hold them, and JSON equality tells ``2**70`` from ``2.0**70``). A stored integer beyond
that range is left out of ``fn`` / ``ln`` and its key listed under ``fx``; a numeric filter on
such a key also keeps the chunks listed there that Python finds matching.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from qdrant_client import models

from rag_plugin.filters import (
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    MetadataFilter,
)

__all__ = ["NOTHING", "to_qdrant", "typed_payload"]

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXACT = 2**53
_ORDERING = {
    FilterOperator.GT: "gt",
    FilterOperator.GTE: "gte",
    FilterOperator.LT: "lt",
    FilterOperator.LTE: "lte",
}

NOTHING = models.Filter(
    must=[models.HasIdCondition(has_id=["00000000-0000-0000-0000-000000000000"])]
)
"""A filter no chunk point passes (no point has the nil UUID: ids are uuid5 names)."""

Fallback = Callable[[FilterExpression, models.Filter | None], models.Filter]
"""``(expression, among)``: a condition keeping the chunks Python finds matching
``expression``, among those ``among`` selects (None: every chunk of the collection)."""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _double_exact(value: object) -> bool:
    """A number a double holds as JSON means it (every float; integers up to ±2**53)."""
    return isinstance(value, float) or abs(int(value)) <= _EXACT  # type: ignore[call-overload]


def typed_payload(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The type-split copies of ``metadata``'s scalar values (see the module docstring)."""
    typed: dict[str, dict[str, Any]] = {name: {} for name in ("fs", "fn", "fb", "ls", "ln", "lb")}
    inexact: list[str] = []
    for key, value in metadata.items():
        if not _KEY.fullmatch(key):
            continue
        if isinstance(value, list):
            strings = [v for v in value if isinstance(v, str)]
            numbers = [v for v in value if _number(v)]
            flags = [v for v in value if isinstance(v, bool)]
            if strings:
                typed["ls"][key] = strings
            if any(not _double_exact(v) for v in numbers):
                inexact.append(key)
            numbers = [float(v) for v in numbers if _double_exact(v)]
            if numbers:
                typed["ln"][key] = numbers
            if flags:
                typed["lb"][key] = flags
        elif isinstance(value, bool):
            typed["fb"][key] = value
        elif isinstance(value, str):
            typed["fs"][key] = value
        elif _number(value):
            if _double_exact(value):
                typed["fn"][key] = float(value)
            else:
                inexact.append(key)
    payload: dict[str, Any] = {name: fields for name, fields in typed.items() if fields}
    if inexact:
        payload["fx"] = inexact
    return payload


def to_qdrant(expression: FilterExpression, fallback: Fallback) -> models.Filter:
    """``expression`` as one Qdrant filter; ``fallback`` supplies what has no exact form."""
    if isinstance(expression, FilterGroup):
        parts = [to_qdrant(child, fallback) for child in expression.filters]
        if expression.condition is FilterCondition.AND:
            return models.Filter(must=parts)  # type: ignore[arg-type]
        if expression.condition is FilterCondition.NOT:
            return models.Filter(must_not=parts)  # type: ignore[arg-type]
        return models.Filter(should=parts) if parts else NOTHING  # type: ignore[arg-type]
    native = _leaf(expression)
    if native is None:
        return fallback(expression, None)
    if expression.operator in (FilterOperator.NE, FilterOperator.NIN):
        # "not equal" keeps absent keys too: the negation of the positive form.
        positive = MetadataFilter(
            expression.key,
            FilterOperator.EQ if expression.operator is FilterOperator.NE else FilterOperator.IN,
            expression.value,
        )
        return models.Filter(must_not=[_with_inexact(positive, native, fallback)])
    return _with_inexact(expression, native, fallback)


def _with_inexact(
    expression: MetadataFilter, native: models.Filter, fallback: Fallback
) -> models.Filter:
    """``native``, plus the chunks whose numbers under the key no double holds, when the
    filter compares numbers (Python decides those)."""
    if not any(_number(value) for value in _values(expression)):
        return native
    listed = models.Filter(
        must=[models.FieldCondition(key="fx", match=models.MatchValue(value=expression.key))]
    )
    return models.Filter(should=[native, fallback(expression, listed)])


def _values(expression: MetadataFilter) -> tuple[Any, ...]:
    value = expression.value
    return value if isinstance(value, tuple) else (value,)


def _leaf(expression: MetadataFilter) -> models.Filter | None:
    """The exact Qdrant form of one filter (``!=`` and ``nin`` as their positive forms), or
    None when it has none."""
    key, operator, value = expression.key, expression.operator, expression.value
    if not _KEY.fullmatch(key):
        return None
    if operator is FilterOperator.IS_EMPTY:
        return models.Filter(
            should=[
                models.IsEmptyCondition(is_empty=models.PayloadField(key=f"metadata.{key}")),
                models.FieldCondition(key=f"fs.{key}", match=models.MatchValue(value="")),
            ]
        )
    if operator in _ORDERING:
        if not _number(value) or not _double_exact(value):
            return None
        bound = {_ORDERING[operator]: float(value)}  # type: ignore[arg-type]
        return models.Filter(
            must=[models.FieldCondition(key=f"fn.{key}", range=models.Range(**bound))]
        )
    if operator in (FilterOperator.EQ, FilterOperator.NE):
        return _scalar(key, value, ("fs", "fn", "fb"))
    if operator in (FilterOperator.IN, FilterOperator.NIN):
        values = value if isinstance(value, tuple) else ()
        parts = [_scalar(key, item, ("fs", "fn", "fb")) for item in values]
        if any(part is None for part in parts):
            return None
        return models.Filter(should=parts) if parts else NOTHING  # type: ignore[arg-type]
    if operator is FilterOperator.CONTAINS:
        return _scalar(key, value, ("ls", "ln", "lb"))
    if operator in (FilterOperator.ANY, FilterOperator.ALL):
        values = value if isinstance(value, tuple) else ()
        parts = [_scalar(key, item, ("ls", "ln", "lb")) for item in values]
        if not parts or any(part is None for part in parts):
            return None
        if operator is FilterOperator.ANY:
            return models.Filter(should=parts)  # type: ignore[arg-type]
        return models.Filter(must=parts)  # type: ignore[arg-type]
    return None  # text_match, text_match_insensitive


def _scalar(key: str, value: object, fields: tuple[str, str, str]) -> models.Filter | None:
    """The stored scalar (or list element) under ``key`` equals ``value``."""
    strings, numbers, flags = fields
    if isinstance(value, bool):
        condition = models.FieldCondition(
            key=f"{flags}.{key}", match=models.MatchValue(value=value)
        )
    elif isinstance(value, str):
        condition = models.FieldCondition(
            key=f"{strings}.{key}", match=models.MatchValue(value=value)
        )
    elif _number(value) and _double_exact(value):
        number = float(value)  # type: ignore[arg-type]
        condition = models.FieldCondition(
            key=f"{numbers}.{key}", range=models.Range(gte=number, lte=number)
        )
    else:
        return None
    return models.Filter(must=[condition])
