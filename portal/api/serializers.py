"""Request and response shapes that several operations share (the OpenAPI schema's common
components). Each operation's own shapes are nested in its view (``SearchView.Input``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from rest_framework import serializers

from portal.api.fields import BIGINT_MAX, QueryBooleanField, QueryInput, StrictCharField
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.base import MAX_COLLECTION_NAME_LENGTH, validate_collection_name

MAX_QUERY_CHARS = 10_000
COLLECTION_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""What ``validate_collection_name`` accepts, as the schema's pattern."""
MAX_TAGS = 50

# The limits a deployment may change (portal/settings.py, RAG_API; README "Security").
MAX_QUERY_WORDS = int(settings.RAG_API["MAX_QUERY_WORDS"])
MAX_CONTEXT_COLLECTIONS = int(settings.RAG_API["MAX_CONTEXT_COLLECTIONS"])
MAX_BATCH_DOCUMENTS = int(settings.RAG_API["MAX_BATCH_DOCUMENTS"])
"""Documents per /rag/ingest/batch request; the body limit (RAG_MAX_BODY_BYTES) applies too."""


def _collection_name(value: str) -> None:
    try:
        validate_collection_name(value)
    except InvalidInputError as exc:
        raise serializers.ValidationError(str(exc)) from None


class CollectionField(StrictCharField):
    """A collection name; the schema shows its rule as a pattern (the server's check and its
    message are ``validate_collection_name``'s)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            min_length=1,
            max_length=MAX_COLLECTION_NAME_LENGTH,
            validators=[_collection_name, RegexValidator(COLLECTION_NAME_PATTERN)],
            **kwargs,
        )


class ErrorOutput(serializers.Serializer):  # type: ignore[type-arg]
    error = serializers.CharField()
    code = serializers.CharField()


class SharedQuery(QueryInput):
    """Query-string flag: act on the tenant-shared collections instead of the caller's own."""

    shared = QueryBooleanField(required=False, default=False)


class PageInput(SharedQuery):
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=1000)
    offset = serializers.IntegerField(required=False, default=0, min_value=0, max_value=BIGINT_MAX)
