"""File uploads (SPEC F3): ``POST /api/rag/files`` and ``GET /api/rag/documents/<id>/file``.

An upload is ``multipart/form-data``: one or more ``file`` parts and the ingest options as
form fields. Its size is checked from ``Content-Length`` before the body is read (413, by
:class:`portal.middleware.BodySizeLimitMiddleware`), so an oversized upload costs the server
nothing; each file becomes a job (202).
"""

from __future__ import annotations

import json
from typing import Any, cast

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpResponse, QueryDict
from django.utils.http import content_disposition_header
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import serializers as s
from portal.api.common import DOCUMENT_ID_PARAM, ERRORS, SHARED_PARAM, shared_flag
from portal.api.fields import (
    RESERVED_METADATA_KEYS,
    BoundedListField,
    InputSerializer,
    MetadataField,
    NameField,
    QueryBooleanField,
    QueryInput,
    StrictCharField,
    metadata_schema,
)
from portal.api.job_outputs import JobOutput
from portal.rag import files
from portal.rag.jobs import Upload, document_reindex, file_jobs_submit
from portal.throttling import IngestRateThrottle
from rag_plugin.chunking import ChunkingStrategy
from rag_plugin.files import SUPPORTED_MEDIA_TYPES
from tenants.models import StoredFile


@extend_schema_field(
    metadata_schema(
        RESERVED_METADATA_KEYS | files.FILE_METADATA_KEYS, {"topic": "billing", "reviewed": True}
    )
)
class UploadMetadataField(MetadataField):
    """The ``metadata`` form field: a JSON object, as text (a form field has no JSON type)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a JSON object, sent as text.")
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise serializers.ValidationError(f"Not JSON: {exc}.") from None
        checked = super().to_internal_value(value)
        for key in checked:
            if key in files.FILE_METADATA_KEYS:
                raise serializers.ValidationError(f"{key!r} is set from the file; use another key.")
        return checked


@extend_schema_field({"type": "string", "format": "binary", "minLength": 1})
class UploadedFileField(serializers.FileField):
    """One uploaded file, not empty: a part of the multipart body, its bytes (a response's
    file field would be a URL, which is what the schema said of this one)."""


class FileUploadInput(QueryInput):
    """The form fields of an upload (each at most once, but ``tags``)."""

    unknown_key = "Unknown form field"

    collection = s.CollectionField()
    shared = QueryBooleanField(required=False, default=False)
    chunking_strategy = NameField(names=ChunkingStrategy.names(), required=False, default=None)
    metadata = UploadMetadataField(required=False, default=dict)
    tags = BoundedListField(
        child=StrictCharField(max_length=100), required=False, max_length=s.MAX_TAGS, default=list
    )
    source = StrictCharField(  # type: ignore[assignment]
        required=False,
        allow_blank=True,
        max_length=1000,
        default="",
        help_text="The document's source (one file only); the file's name by default.",
    )
    title = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=500,
        default="",
        help_text="The document's title (one file only); the file's own by default.",
    )
    file = serializers.ListField(
        child=UploadedFileField(),
        min_length=1,
        help_text="The files (one part each): "
        + ", ".join(SUPPORTED_MEDIA_TYPES)
        + ", told from their content.",
    )


class FileJobOutput(serializers.Serializer):  # type: ignore[type-arg]
    filename = serializers.CharField()
    media_type = serializers.CharField(help_text="Detected from the content.")
    job_id = serializers.CharField()
    status_url = serializers.CharField(help_text="GET it for the job's state.")
    state = serializers.CharField()


class FilesAcceptedOutput(serializers.Serializer):  # type: ignore[type-arg]
    jobs = FileJobOutput(many=True, help_text="One job per file, in the upload's order.")


class FileUploadView(APIView):
    """Upload files to ingest into a collection of the caller: PDF, DOCX, HTML, Markdown,
    text or JSON(L), each parsed and ingested by a background job (202)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (IngestRateThrottle,)
    parser_classes = (MultiPartParser,)

    @extend_schema(
        request={"multipart/form-data": FileUploadInput},
        responses={
            202: FilesAcceptedOutput,
            **ERRORS,
            411: OpenApiResponse(s.ErrorOutput, description="No Content-Length header."),
            422: OpenApiResponse(s.ErrorOutput, description="A file of an unsupported type."),
        },
    )
    def post(self, request: Request) -> Response:
        form: dict[str, Any] = {}
        parts = cast(QueryDict, request.data)  # the multipart parser's fields and files
        for key in parts:
            values = parts.getlist(key)
            if key in ("file", "tags"):
                form[key] = values
            elif len(values) > 1:
                raise exceptions.ValidationError({key: ["Send this field once."]})
            else:
                form[key] = values[0]
        body = FileUploadInput(data=form)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        uploads = data["file"]
        for key in ("source", "title"):
            if data[key] and len(uploads) > 1:
                raise exceptions.ValidationError(
                    {key: [f"Give a {key} only when uploading one file."]}
                )
        jobs = file_jobs_submit(
            user=cast(AbstractBaseUser, request.user),
            collection=data["collection"],
            shared=data["shared"],
            chunking_strategy=data["chunking_strategy"],
            uploads=[
                Upload(
                    filename=upload.name or "upload",
                    data=upload.read(),
                    source=data["source"],
                    title=data["title"],
                    tags=data["tags"],
                    metadata=data["metadata"],
                )
                for upload in uploads
            ],
        )
        return Response(
            {
                "jobs": [
                    {
                        "filename": job.file.filename if job.file else "",
                        "media_type": job.file.media_type if job.file else "",
                        "job_id": str(job.id),
                        "status_url": f"/api/rag/jobs/{job.id}",
                        "state": job.state,
                    }
                    for job in jobs
                ]
            },
            status=202,
        )


class DocumentFileView(APIView):
    """Download the uploaded original of a document of the caller."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        parameters=[DOCUMENT_ID_PARAM, SHARED_PARAM],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                description="The file as it was uploaded, with its media type."
            ),
            **ERRORS,
        },
    )
    def get(self, request: Request, document_id: str) -> HttpResponse:
        stored = files.file_of_document(
            user=cast(AbstractBaseUser, request.user),
            document_id=document_id,
            shared=shared_flag(request),
        )
        return download(stored)


def download(stored: StoredFile) -> HttpResponse:
    """An uploaded original as it was sent, with its media type, always as an attachment: an
    uploaded HTML page must not run as one of the portal's own pages (API or admin)."""
    response = HttpResponse(bytes(stored.data), content_type=stored.media_type)
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=stored.filename
    )
    return response


class ReindexInput(InputSerializer):
    chunking_strategy = NameField(
        names=ChunkingStrategy.names(),
        required=False,
        default=None,
        help_text="Chunk it this way from now on; as it was chunked when left out.",
    )


class DocumentReindexView(APIView):
    """Parse a document's uploaded original again and ingest it over the document, as a job
    (202): after OCR was installed, a limit raised, or to chunk it another way."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (IngestRateThrottle,)

    @extend_schema(
        request=ReindexInput,
        parameters=[DOCUMENT_ID_PARAM, SHARED_PARAM],
        responses={202: JobOutput, **ERRORS},
    )
    def post(self, request: Request, document_id: str) -> Response:
        data = request.data
        # No body at all (the parsers' empty QueryDict) is no options; JSON must be an object.
        body = ReindexInput(data={} if isinstance(data, QueryDict) and not data else data)
        body.is_valid(raise_exception=True)
        job = document_reindex(
            user=cast(AbstractBaseUser, request.user),
            document_id=document_id,
            shared=shared_flag(request),
            chunking_strategy=body.validated_data["chunking_strategy"],
        )
        return Response(JobOutput(job).data, status=202)
