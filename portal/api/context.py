"""``POST /api/rag/context`` and ``/api/rag/answer``: numbered context and sources from a
profile or several collections, and an answer citing them (SPEC A7, R4, R5).

The request and the context's output are shared with the chat endpoint (``portal.api.chat``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import ERRORS, caller
from portal.api.fields import (
    BoundedListField,
    FilterField,
    InputSerializer,
    QueryField,
    RerankField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)
from portal.api.serializers import (
    MAX_CONTEXT_COLLECTIONS,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    CollectionField,
)
from portal.rag.context_retrieval import RequestedCollection, profile_answer, profile_context
from portal.throttling import ChatRateThrottle, SearchRateThrottle


class CollectionRefInput(InputSerializer):
    name = CollectionField()
    weight = StrictFloatField(required=False, default=1.0, min_value=0.0)
    priority = StrictIntegerField(required=False, default=0)
    shared = StrictBooleanField(required=False, default=False)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A profile",
            value={"profile": "support", "query": "How do I reset my password?"},
            request_only=True,
        ),
        OpenApiExample(
            "Collections with weights and a filter",
            value={
                "collections": [{"name": "docs", "weight": 2.0}, {"name": "faq", "shared": True}],
                "query": "How do I reset my password?",
                "k": 5,
                "filters": {"key": "topic", "operator": "in", "value": ["accounts", "billing"]},
            },
            request_only=True,
        ),
    ]
)
class ContextInput(InputSerializer):
    profile = StrictCharField(required=False, max_length=63)
    collections = BoundedListField(
        child=CollectionRefInput(),
        required=False,
        min_length=1,
        max_length=MAX_CONTEXT_COLLECTIONS,
        help_text="The collections to search, each (name, shared) pair at most once.",
        too_long=(
            "{length} collections; the limit is {max_length} per request "
            "(RAG_MAX_CONTEXT_COLLECTIONS)."
        ),
    )
    query = QueryField(max_length=MAX_QUERY_CHARS, max_words=MAX_QUERY_WORDS)
    k = StrictIntegerField(required=False, min_value=1, max_value=100)
    min_relevance = StrictFloatField(required=False, min_value=0.0, max_value=1.0)
    rerank = RerankField(required=False)
    filters = FilterField(required=False, allow_null=True)

    one_of = ("profile", "collections")

    def validate_collections(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen: dict[tuple[str, bool], int] = {}
        for position, ref in enumerate(value):
            key = (ref["name"], ref["shared"])
            if key in seen:
                raise serializers.ValidationError(
                    f"collections[{position}] repeats collections[{seen[key]}] "
                    f"('{ref['name']}'); list each collection once."
                )
            seen[key] = position
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("profile" in attrs) == ("collections" in attrs):
            raise serializers.ValidationError(
                {"profile": ["Give either a profile or a list of collections, not both."]}
            )
        return attrs


OVERRIDES = (
    ("k", "retrieval_k"),
    ("min_relevance", "min_relevance"),
    ("rerank", "rerank"),
    ("filters", "filters"),
)
"""A context request's settings that override its profile's: (request key, profile field)."""


def retrieval_request(data: dict[str, Any]) -> dict[str, Any]:
    """The profile or collections and the overrides a validated context (or chat) request
    names, as ``portal.rag.context_retrieval`` takes them: plain values."""
    return {
        "profile": data.get("profile"),
        "collections": [RequestedCollection(**c) for c in data.get("collections", [])],
        "overrides": {field: data[key] for key, field in OVERRIDES if key in data},
    }


class SourceOutput(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a rag_plugin.citations.Source.
    footnote_id = serializers.IntegerField()
    chunk_id = serializers.CharField()
    document_id = serializers.CharField()
    title = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    collection = serializers.CharField()
    relevance = serializers.FloatField()
    rerank = serializers.DictField(allow_null=True)
    chunk_index = serializers.IntegerField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    excerpt = serializers.CharField()
    has_image = serializers.BooleanField()
    page_number = serializers.IntegerField(
        allow_null=True, help_text="The page of its file the passage starts on; null if none."
    )
    page_end = serializers.IntegerField(
        allow_null=True, help_text="The page it ends on (page_number for a one-page passage)."
    )
    citation = serializers.CharField(
        help_text='How to refer to it: "<title>, p. 3", "<title>, pp. 3–4", or the title.'
    )
    metadata = serializers.DictField(help_text="The chunk's metadata, the document's included.")


class ContextOutput(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a ProfileContext. A subclass whose instance holds one in an attribute (an
    # answer's "found") names the attribute in context_at.
    context_at = ""

    context = serializers.CharField(source="context.context")  # type: ignore[assignment]
    sources = SourceOutput(many=True)
    profile = serializers.CharField(allow_null=True)
    relevance_fallback = serializers.BooleanField()
    skipped_collections = serializers.ListField(child=serializers.CharField(), source="skipped")

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        fields = super().get_fields()
        if self.context_at:
            for name, declared in ContextOutput._declared_fields.items():
                if self._declared_fields[name] is declared:  # not redeclared by the subclass
                    field = fields[name]
                    field.source = f"{self.context_at}.{field.source or name}"
        return fields


class AnswerOutput(ContextOutput):
    # Renders a ProfileAnswer: its retrieval, and what the LLM wrote from it.
    context_at = "found"

    answer = serializers.CharField(allow_null=True)
    cited = serializers.ListField(child=serializers.IntegerField())
    message = serializers.CharField(allow_null=True)


class ContextView(APIView):
    """Numbered context and sources from several collections or a profile (SPEC A7, R4)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (SearchRateThrottle,)

    @extend_schema(request=ContextInput, responses={200: ContextOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = ContextInput(data=request.data)
        body.is_valid(raise_exception=True)
        found = profile_context(
            user=caller(request),
            query=body.validated_data["query"],
            **retrieval_request(body.validated_data),
        )
        return Response(ContextOutput(found).data)


class AnswerView(APIView):
    """An answer with [N] citations from the deployment's LLM, or the context alone (R5)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (ChatRateThrottle,)

    @extend_schema(request=ContextInput, responses={200: AnswerOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = ContextInput(data=request.data)
        body.is_valid(raise_exception=True)
        result = profile_answer(
            user=caller(request),
            query=body.validated_data["query"],
            **retrieval_request(body.validated_data),
        )
        return Response(AnswerOutput(result).data)
