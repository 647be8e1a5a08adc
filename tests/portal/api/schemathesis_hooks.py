"""Schemathesis hooks for ``test_schema_fuzz``: rules the schema cannot state in JSON Schema.

Loaded by schemathesis through ``SCHEMATHESIS_HOOKS`` (never by pytest: the module name does
not start with ``test_``).
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis

from portal.api.fields import MAX_METADATA_BYTES, MAX_METADATA_DEPTH
from rag_plugin.filters import MAX_DEPTH, MAX_FILTERS


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    """Drop the bodies the server refuses for a rule JSON Schema cannot state."""
    return (
        _collections_listed_once(body)
        and _last_message_is_the_question(body)
        and _filters_within_limits(body)
        and _metadata_within_limits(body)
    )


def _collections_listed_once(body: Any) -> bool:
    """Each collection once: the server refuses a body that lists one twice with 400 (the
    schema's description says so), and JSON Schema's ``uniqueItems`` compares whole items,
    not the (``name``, ``shared``) pair that names a collection."""
    collections = body.get("collections") if isinstance(body, dict) else None
    if not isinstance(collections, list):
        return True
    keys = [
        (item.get("name"), item.get("shared", False))
        for item in collections
        if isinstance(item, dict)
    ]
    return len(keys) == len(set(keys))


def _last_message_is_the_question(body: Any) -> bool:
    """A chat's last message is the user's: the server refuses another with 400 (the field's
    description says so), and JSON Schema has no rule for an array's last item."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return True
    return messages[-1].get("role") == "user"


def _filters_within_limits(body: Any) -> bool:
    """At most MAX_FILTERS conditions in all and groups nested at most MAX_DEPTH deep: the
    server refuses more with 400 (the filter grammar's description says so), and JSON Schema
    can bound one array, not a count over a recursive structure. ``{key: value}`` equality
    filters are a group of one condition per key, as the parser reads them."""
    filters = body.get("filters") if isinstance(body, dict) else None
    if not isinstance(filters, dict) or not filters:
        return True
    conditions, depth = _size(filters)
    return conditions <= MAX_FILTERS and depth <= MAX_DEPTH


def _size(node: Any) -> tuple[int, int]:
    """Conditions in ``node`` and how deep its groups nest (0 for one condition)."""
    if not isinstance(node, dict):
        return 1, 0
    if "filters" in node and set(node) <= {"condition", "filters"}:
        children = node["filters"] if isinstance(node["filters"], list) else []
        sizes = [_size(child) for child in children]
        return sum(n for n, _ in sizes), 1 + max((d for _, d in sizes), default=0)
    if "key" in node and set(node) <= {"key", "operator", "value"}:
        return 1, 0
    return len(node), 1


def _metadata_within_limits(body: Any) -> bool:
    """Metadata of at most MAX_METADATA_BYTES as JSON, nested at most MAX_METADATA_DEPTH
    deep (the object itself the first level, a scalar in it the second): the server refuses
    more with 400 (the field's description says so); JSON Schema cannot count bytes or bound
    the depth of a recursive value."""
    if not isinstance(body, dict):
        return True
    documents = body.get("documents")
    objects = [body.get("metadata")] + (
        [d.get("metadata") for d in documents if isinstance(d, dict)]
        if isinstance(documents, list)
        else []
    )
    return all(
        _levels(value) <= MAX_METADATA_DEPTH and _json_bytes(value) <= MAX_METADATA_BYTES
        for value in objects
        if isinstance(value, dict)
    )


def _levels(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_levels, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_levels, value), default=0)
    return 1


def _json_bytes(value: Any) -> int:
    # surrogatepass: a lone surrogate (which the server refuses) must not crash the hook.
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
