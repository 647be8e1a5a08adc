"""Metadata filters compiled to SQL over a chunk's ``metadata`` (jsonb), parameters only.

The condition names ``c.metadata``: both ``rag_chunks`` and ``rag_chunk_filters`` (the narrow
copy of each chunk's metadata that the legs read matching ids from) have that column. The
rules are :mod:`rag_plugin.filters`' (the memory store evaluates the same expression in
Python; the contract suite holds both to one answer). Keys and values only ever travel as
parameters. Equality-like operators (``==``, ``!=``, ``in``, ``nin``, ``contains``, ``any``,
``all``) are jsonb containment, which the ``jsonb_path_ops`` GIN index on
``rag_chunk_filters.metadata`` serves; the others read the value under the key and check its
JSON type first, so a string never compares with a number and a missing key is never an
error. Every leaf is two-valued (never NULL), so ``not`` negates it exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql

from rag_plugin.filters import (
    FilterCondition,
    FilterExpression,
    FilterGroup,
    FilterOperator,
    MetadataFilter,
    Scalar,
)
from rag_plugin.stores.context import SearchContext

__all__ = ["SqlFilter", "compile_filter", "sql_filter"]


@dataclass(frozen=True)
class SqlFilter:
    """A compiled filter: a boolean SQL condition on ``{alias}.metadata`` and its named
    parameters (``f0``, ``f1``, ...: merge them into the statement's own), and the context of
    the search it belongs to, where the legs keep what they share (the matching ids)."""

    condition: sql.Composable
    params: dict[str, Any] = field(default_factory=dict)
    context: SearchContext = field(default_factory=SearchContext)


def sql_filter(context: SearchContext) -> SqlFilter | None:
    """The search's filter compiled to SQL, once for all its legs; None without a filter."""
    expression = context.expression
    if expression is None:
        return None

    def compiled() -> SqlFilter:
        found = compile_filter(expression)
        return SqlFilter(found.condition, found.params, context)

    return context.once("sql_filter", compiled)


def compile_filter(expression: FilterExpression, alias: str = "c") -> SqlFilter:
    """``expression`` (validated by ``as_expression``) as SQL on ``alias``'s metadata."""
    params: dict[str, Any] = {}
    metadata = sql.Identifier(alias, "metadata")

    def param(value: Any) -> sql.Composable:
        name = f"f{len(params)}"
        params[name] = value
        return sql.Placeholder(name)

    def contains(document: object) -> sql.Composable:
        return sql.SQL("({} @> {}::jsonb)").format(metadata, param(json.dumps(document)))

    def contains_any(documents: list[object]) -> sql.Composable:
        if not documents:
            return sql.SQL("false")
        return sql.SQL("({} @> ANY({}::jsonb[]))").format(
            metadata, param([json.dumps(document) for document in documents])
        )

    def typed(key: str, kind: str, test: str, value: object) -> sql.Composable:
        """``test`` on the value under ``key`` when it is a JSON ``kind``; else false."""
        stored = sql.SQL("({} -> {})").format(metadata, param(key))
        if kind == "number":
            left = sql.SQL("{}::numeric").format(stored)
            right = sql.SQL("{}::numeric").format(param(str(value)))
        else:
            left = sql.SQL("({} #>> '{{}}')").format(stored)
            right = sql.SQL("{}::text").format(param(value))
        # CASE: the test runs only on a value of that type (AND does not promise an order);
        # coalesce: a missing key gives NULL, and a leaf must be true or false.
        return sql.SQL(
            "coalesce(CASE WHEN jsonb_typeof({}) = {} THEN {} ELSE false END, false)"
        ).format(stored, sql.Literal(kind), sql.SQL(test).format(left=left, right=right))

    def leaf(node: MetadataFilter) -> sql.Composable:
        key, operator, value = node.key, node.operator, node.value
        values: tuple[Scalar, ...] = value if isinstance(value, tuple) else ()
        if operator is FilterOperator.EQ:
            return contains({key: value})
        if operator is FilterOperator.NE:
            return sql.SQL("NOT {}").format(contains({key: value}))
        if operator in (FilterOperator.IN, FilterOperator.NIN):
            found = contains_any([{key: item} for item in values])
            return found if operator is FilterOperator.IN else sql.SQL("NOT {}").format(found)
        if operator is FilterOperator.CONTAINS:
            return contains({key: [value]})
        if operator is FilterOperator.ALL:
            return contains({key: list(values)})
        if operator is FilterOperator.ANY:
            return contains_any([{key: [item]} for item in values])
        if operator is FilterOperator.IS_EMPTY:
            return sql.SQL(
                "coalesce(({} -> {}) IN ('null'::jsonb, '\"\"'::jsonb, '[]'::jsonb), true)"
            ).format(metadata, param(key))
        if operator in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
            test = (
                "strpos({left}, {right}) > 0"
                if operator is FilterOperator.TEXT_MATCH
                else "strpos(lower({left}), lower({right})) > 0"
            )
            return typed(key, "string", test, value)
        comparison = {
            FilterOperator.GT: ">",
            FilterOperator.GTE: ">=",
            FilterOperator.LT: "<",
            FilterOperator.LTE: "<=",
        }[operator]
        if isinstance(value, str):  # by code point, as Python compares
            return typed(key, "string", '{left} COLLATE "C" ' + comparison + " {right}", value)
        return typed(key, "number", "{left} " + comparison + " {right}", value)

    def node(expression: FilterExpression) -> sql.Composable:
        if isinstance(expression, MetadataFilter):
            return leaf(expression)
        return group(expression)

    def group(expression: FilterGroup) -> sql.Composable:
        children = [node(child) for child in expression.filters]
        if expression.condition is FilterCondition.AND:
            if not children:
                return sql.SQL("true")
            return sql.SQL("({})").format(sql.SQL(" AND ").join(children))
        either = (
            sql.SQL("({})").format(sql.SQL(" OR ").join(children)) if children else sql.SQL("false")
        )
        if expression.condition is FilterCondition.OR:
            return either
        return sql.SQL("NOT {}").format(either)

    return SqlFilter(node(expression), params)
