"""Schemathesis hooks for ``test_schema_fuzz``: rules the schema cannot state in JSON Schema.

Loaded by schemathesis through ``SCHEMATHESIS_HOOKS`` (never by pytest: the module name does
not start with ``test_``).
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    """Drop bodies that list one collection twice: the server refuses them with 400 (each
    collection once; the schema's description says so), and JSON Schema's ``uniqueItems``
    compares whole items, not the (``name``, ``shared``) pair that names a collection."""
    collections = body.get("collections") if isinstance(body, dict) else None
    if not isinstance(collections, list):
        return True
    keys = [
        (item.get("name"), item.get("shared", False))
        for item in collections
        if isinstance(item, dict)
    ]
    return len(keys) == len(set(keys))
