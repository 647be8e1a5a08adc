"""``POST /api/rag/search``: one collection of the caller, any strategy (SPEC A3)."""

from __future__ import annotations

import time
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import ERRORS, caller
from portal.api.fields import (
    FilterField,
    InputSerializer,
    LengthField,
    NameField,
    QueryField,
    RerankField,
    StrictBooleanField,
    StrictFloatField,
    StrictIntegerField,
)
from portal.api.serializers import MAX_QUERY_CHARS, MAX_QUERY_WORDS, CollectionField
from portal.rag import selectors
from portal.throttling import SearchRateThrottle
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.rerank import RerankMode
from rag_plugin.search import DEFAULT_STRATEGY, SearchStrategy
from rag_plugin.stores.records import ChunkRecord


class ChunkMetadataOutput(serializers.Serializer):  # type: ignore[type-arg]
    """The fields below, and every key of the document's metadata and of the chunk's own: a
    file's chunks carry ``page_number`` (where the chunk starts), ``page_end``, ``has_image``
    and, under a heading, ``section``."""

    # What the store copies from the document onto each chunk (absent from a bare store's).
    title = serializers.CharField(source="metadata.title", default="", read_only=True)
    source = serializers.CharField(  # type: ignore[assignment]
        source="metadata.source", default="", read_only=True
    )
    created_at = serializers.CharField(source="metadata.created_at", default="", read_only=True)
    tags = serializers.ListField(
        child=serializers.CharField(), source="metadata.tags", default=list, read_only=True
    )
    document_id = serializers.CharField()
    chunk_index = serializers.IntegerField(source="index")
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()

    def to_representation(self, instance: ChunkRecord) -> dict[str, Any]:
        return {**instance.metadata, **super().to_representation(instance)}


class SearchResultOutput(serializers.Serializer):  # type: ignore[type-arg]
    # Renders a SearchHit.
    id = serializers.CharField(source="chunk.id")
    content = serializers.CharField(source="chunk.content")
    score = serializers.FloatField()
    normalized_score = serializers.FloatField(allow_null=True)
    rerank = serializers.DictField(
        source="rerank.as_dict",
        allow_null=True,
        help_text="What the reranker computed for this result; null if off.",
    )
    metadata = ChunkMetadataOutput(source="chunk")


class CorrectionOutput(serializers.Serializer):  # type: ignore[type-arg]
    original = serializers.CharField()
    corrected = serializers.CharField()
    distance = serializers.IntegerField()


class SearchView(APIView):
    """Search one collection of the caller with any strategy (SPEC A3)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (SearchRateThrottle,)

    class Input(InputSerializer):
        collection = CollectionField()
        query = QueryField(max_length=MAX_QUERY_CHARS, max_words=MAX_QUERY_WORDS)
        limit = StrictIntegerField(required=False, default=10, min_value=1, max_value=1000)
        strategy = NameField(
            names=SearchStrategy.names(), required=False, allow_null=True, default=None
        )
        threshold = StrictFloatField(required=False, default=0.0)
        rerank = RerankField(required=False, default=RerankMode.OFF)
        correct_typos = StrictBooleanField(required=False, default=False)
        shared = StrictBooleanField(required=False, default=False)
        filters = FilterField(required=False, allow_null=True, default=None)

        def validate_strategy(self, value: str | None) -> SearchStrategy:
            try:
                return SearchStrategy.parse(value) if value is not None else DEFAULT_STRATEGY
            except InvalidInputError as exc:
                raise serializers.ValidationError(str(exc)) from None

    class Output(serializers.Serializer):  # type: ignore[type-arg]
        # Renders the SearchOutcome, the rerank mode asked for and the duration.
        results = SearchResultOutput(many=True, source="outcome.hits")
        total = LengthField(source="outcome.hits")
        strategy = serializers.CharField(source="outcome.strategy")
        reranked = serializers.BooleanField()
        rerank = serializers.CharField(
            help_text="The rerank mode asked for: lexical, cross-encoder or off."
        )
        duration_ms = serializers.FloatField()
        corrected_query = serializers.CharField(source="outcome.corrected_query", allow_null=True)
        corrections = CorrectionOutput(many=True, source="outcome.corrections")

    @extend_schema(request=Input, responses={200: Output, **ERRORS})
    def post(self, request: Request) -> Response:
        started = time.perf_counter()
        body = self.Input(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        outcome = selectors.rag_search(user=caller(request), **data)
        searched = {
            "outcome": outcome,
            "reranked": any(hit.rerank is not None for hit in outcome.hits),
            "rerank": data["rerank"],
            "duration_ms": round((time.perf_counter() - started) * 1000, 2),
        }
        return Response(self.Output(searched).data)
