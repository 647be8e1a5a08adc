"""Schemathesis hooks for ``test_schema_fuzz``: rules the schema cannot state in JSON Schema.

Loaded by schemathesis through ``SCHEMATHESIS_HOOKS`` (never by pytest: the module name does
not start with ``test_``).
"""

from __future__ import annotations

from typing import Any

import schemathesis


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    """Drop the bodies the server refuses for a rule JSON Schema cannot state."""
    return _collections_listed_once(body) and _last_message_is_the_question(body)


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
