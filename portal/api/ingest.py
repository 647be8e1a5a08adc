"""``POST /api/rag/ingest`` and ``/api/rag/ingest/batch``: chunk, embed and store documents
in a collection of the caller (SPEC A2), now or as a background job (SPEC J1)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import ERRORS, caller
from portal.api.errors import PayloadTooLarge
from portal.api.fields import (
    BoundedListField,
    InputSerializer,
    LengthField,
    MetadataField,
    NameField,
    StrictBooleanField,
    StrictCharField,
)
from portal.api.job_outputs import JobAcceptedOutput, accepted
from portal.api.serializers import MAX_BATCH_DOCUMENTS, MAX_TAGS, CollectionField
from portal.rag import jobs, services
from portal.throttling import IngestRateThrottle
from rag_plugin.chunking import ChunkingStrategy
from rag_plugin.exceptions import InvalidInputError
from rag_plugin.stores.base import DocumentInput, check_distinct_sources

MAX_SOURCE_BYTES = 2000
"""A source's UTF-8 bytes: it is a unique-index key, and PostgreSQL's B-tree entries hold at
most ≈ 2,700 bytes."""

UNCHANGED_HELP = "The same source already held this text and description: nothing was redone."


class DocumentFields(InputSerializer):
    """What describes one document to ingest (SPEC A2's fields)."""

    content = StrictCharField(trim_whitespace=False)
    title = StrictCharField(required=False, allow_blank=True, max_length=500, default="")
    # DRF collects declared fields, so a field may be named like Field.source.
    source = StrictCharField(  # type: ignore[assignment]
        required=False, allow_blank=True, max_length=1000, default=""
    )
    tags = BoundedListField(
        child=StrictCharField(max_length=100), required=False, max_length=MAX_TAGS, default=list
    )
    metadata = MetadataField(required=False, default=dict)

    def validate_source(self, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > MAX_SOURCE_BYTES:
            raise serializers.ValidationError(
                f"The source is {size} bytes in UTF-8; the limit is {MAX_SOURCE_BYTES}."
            )
        return value


class IngestOptions(InputSerializer):
    """Where and how documents are ingested, for one document or a batch."""

    collection = CollectionField()
    chunking_strategy = NameField(
        names=ChunkingStrategy.names(), required=False, allow_null=True, default=None
    )
    shared = StrictBooleanField(required=False, default=False)

    def get_fields(self) -> dict[str, serializers.Field]:  # type: ignore[type-arg]
        fields = super().get_fields()
        # "async" is a Python keyword, so it cannot be declared as a class attribute.
        fields["async"] = StrictBooleanField(
            required=False,
            default=False,
            help_text="Ingest in the background: 202 with a job id to follow at "
            "/api/rag/jobs/{id}. Content over the deployment's limit (RAG_JOB_SYNC_MAX_BYTES) "
            "is a job either way.",
        )
        return fields

    def validate_chunking_strategy(self, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return str(ChunkingStrategy.parse(value))
        except InvalidInputError as exc:
            raise serializers.ValidationError(str(exc)) from None


def _job_reason(run_async: bool, documents: list[services.NewDocument]) -> str | None:
    """Why an ingest runs as a job (``requested``, ``size``), or None to run it now."""
    if run_async:
        return "requested"
    if jobs.content_bytes(documents) > jobs.sync_max_bytes():
        return "size"
    return None


class IngestView(APIView):
    """Chunk, embed and store one document in a collection of the caller (SPEC A2); as a
    background job (202) when asked (``async``) or when the content is large (SPEC J1)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (IngestRateThrottle,)

    class Input(IngestOptions, DocumentFields):
        pass

    class Output(serializers.Serializer):  # type: ignore[type-arg]
        # Renders a DocumentIngested.
        chunks_created = LengthField(source="result.chunks")
        document_ids = serializers.ListField(
            child=serializers.CharField(), source="result.chunk_ids"
        )
        document_id = serializers.CharField(source="result.document.id")
        collection = serializers.CharField()
        unchanged = serializers.BooleanField(source="result.unchanged", help_text=UNCHANGED_HELP)

    @extend_schema(request=Input, responses={200: Output, 202: JobAcceptedOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = self.Input(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        run_async = data.pop("async")
        options = {k: data.pop(k) for k in ("collection", "chunking_strategy", "shared")}
        document = services.NewDocument(**data)
        reason = _job_reason(run_async, [document])
        if reason:
            job = jobs.job_submit(
                user=caller(request), documents=[document], kind="document", **options
            )
            return accepted(job, reason)
        ingested = services.document_ingest(user=caller(request), **data, **options)
        return Response(self.Output(ingested).data)


class IngestedDocumentOutput(serializers.Serializer):  # type: ignore[type-arg]
    # Renders an IngestResult.
    document_id = serializers.CharField(source="document.id")
    source = serializers.CharField(source="document.source")  # type: ignore[assignment]
    chunks_created = LengthField(source="chunks")
    document_ids = serializers.ListField(
        child=serializers.CharField(),
        source="chunk_ids",
        help_text="The document's chunk ids, as in /rag/ingest.",
    )
    unchanged = serializers.BooleanField(help_text=UNCHANGED_HELP)


class IngestDocumentInput(DocumentFields):
    """One document of a batch: the fields of /rag/ingest that describe a document."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["Each document must be a JSON object."]}
            )
        return super().to_internal_value(data)


class IngestBatchView(APIView):
    """Chunk, embed and store several documents in a collection of the caller, in one write:
    all the changed documents or none (a bad one is named, e.g. ``documents[2].content``); as
    a background job (202) when asked (``async``) or when the content is large."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (IngestRateThrottle,)

    class Input(IngestOptions):
        documents = BoundedListField(
            child=IngestDocumentInput(),
            min_length=1,
            max_length=MAX_BATCH_DOCUMENTS,
            too_long=(
                "{length} documents; the limit is {max_length} per batch (RAG_MAX_BATCH_DOCUMENTS)."
            ),
        )

        def validate_documents(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
            limit = int(settings.RAG_API["MAX_BATCH_CONTENT_BYTES"])
            size = sum(len(d["content"].encode("utf-8")) for d in value)
            if size > limit:
                raise PayloadTooLarge(
                    f"documents: {size} bytes of content; the limit is {limit} per batch "
                    "(RAG_MAX_BATCH_CONTENT_BYTES)."
                )
            try:
                check_distinct_sources([(DocumentInput(source=d["source"]), None) for d in value])
            except InvalidInputError as exc:
                raise serializers.ValidationError(str(exc)) from None
            return value

    class Output(serializers.Serializer):  # type: ignore[type-arg]
        # Renders a DocumentsIngested.
        collection = serializers.CharField()
        chunks_created = serializers.IntegerField(
            source="chunk_count", help_text="Chunks of all the documents."
        )
        documents = IngestedDocumentOutput(
            many=True, source="results", help_text="One entry per document, in order."
        )

    @extend_schema(request=Input, responses={200: Output, 202: JobAcceptedOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = self.Input(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        run_async = data.pop("async")
        documents = [services.NewDocument(**document) for document in data.pop("documents")]
        reason = _job_reason(run_async, documents)
        if reason:
            job = jobs.job_submit(user=caller(request), documents=documents, kind="batch", **data)
            return accepted(job, reason)
        ingested = services.documents_ingest(user=caller(request), documents=documents, **data)
        return Response(self.Output(ingested).data)
