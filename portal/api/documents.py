"""The caller's collections and documents: list, read and delete them (SPEC A4)."""

from __future__ import annotations

import dataclasses
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.common import (
    COLLECTION_PARAM,
    DOCUMENT_ID_PARAM,
    ERRORS,
    SHARED_PARAM,
    caller,
    shared_flag,
)
from portal.api.fields import InputSerializer, StrictBooleanField
from portal.api.serializers import CollectionField, PageInput
from portal.rag import selectors, services


class CollectionOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A collection with its counts (``CollectionInfo``)."""

    name = serializers.CharField()
    document_count = serializers.IntegerField()
    chunk_count = serializers.IntegerField()
    dimensions = serializers.IntegerField()


class DocumentOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A stored document (``DocumentRecord``)."""

    id = serializers.CharField()
    collection = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    title = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    content_hash = serializers.CharField()
    created_at = serializers.DateTimeField()
    chunk_count = serializers.IntegerField()
    metadata = serializers.DictField(
        help_text="The metadata it was ingested with, how it was chunked, and for a file its "
        "filename, media_type, page_count (and author, created where the file says)."
    )


STORE_FIELDS = frozenset({"title", "source", "created_at", "tags"})
"""What the store copies from the document onto each chunk's metadata: shown with the
document (or named in a hit's metadata), not repeated among the chunk's own."""


class ChunkOutput(serializers.Serializer):  # type: ignore[type-arg]
    """A stored chunk (``ChunkRecord``), without the document's fields the store copied onto
    its metadata."""

    id = serializers.CharField()
    index = serializers.IntegerField()
    content = serializers.CharField()
    start_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()
    metadata = serializers.DictField(
        help_text="The document's metadata and the chunk's own: a file's chunks carry "
        "page_number (where the chunk starts), page_end, has_image and, under a heading, "
        "section."
    )

    def to_representation(self, instance: Any) -> dict[str, Any]:
        shown: dict[str, Any] = super().to_representation(instance)
        shown["metadata"] = {k: v for k, v in shown["metadata"].items() if k not in STORE_FIELDS}
        return shown


class CollectionListView(APIView):
    """The caller's collections whose source is enabled (SPEC A4)."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        parameters=[SHARED_PARAM], responses={200: CollectionOutput(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        collections = selectors.collection_list(user=caller(request), shared=shared_flag(request))
        return Response(CollectionOutput(collections, many=True).data)


class CollectionDeleteView(APIView):
    """Delete a collection of the caller with all its documents (SPEC A4)."""

    permission_classes = (IsAuthenticated,)
    delete_takes_body = True  # {collection, shared}, as the seed API (see portal.api.schema)

    class Input(InputSerializer):
        collection = CollectionField()
        shared = StrictBooleanField(required=False, default=False)

    class Output(serializers.Serializer):  # type: ignore[type-arg]
        success = serializers.BooleanField()
        collection = serializers.CharField()
        documents_deleted = serializers.IntegerField()

    @extend_schema(request=Input, responses={200: Output, **ERRORS})
    def delete(self, request: Request) -> Response:
        body = self.Input(data=request.data)
        body.is_valid(raise_exception=True)
        deleted = services.collection_delete(user=caller(request), **body.validated_data)
        done = {
            "success": True,
            "collection": body.validated_data["collection"],
            "documents_deleted": deleted,
        }
        return Response(self.Output(done).data)


class DocumentListView(APIView):
    """The documents of one collection, newest first."""

    permission_classes = (IsAuthenticated,)

    class Output(serializers.Serializer):  # type: ignore[type-arg]
        collection = serializers.CharField()
        documents = DocumentOutput(many=True)
        limit = serializers.IntegerField()
        offset = serializers.IntegerField()

    @extend_schema(
        # shared, limit (1-1000) and offset, with their bounds
        parameters=[COLLECTION_PARAM, PageInput],
        responses={200: Output, **ERRORS},
    )
    def get(self, request: Request, collection: str) -> Response:
        page = PageInput(data=request.query_params.dict())
        page.is_valid(raise_exception=True)
        documents = selectors.document_list(
            user=caller(request), collection=collection, **page.validated_data
        )
        listed = {"collection": collection, "documents": documents, **page.validated_data}
        return Response(self.Output(listed).data)


class DocumentView(APIView):
    """One document of the caller, with its chunks; or its deletion."""

    # Two operations on one resource, so one view: REST puts them at one URL.
    permission_classes = (IsAuthenticated,)

    class DetailOutput(DocumentOutput):
        """A document (``DocumentRecord``'s fields) and its chunks, from a mapping of both."""

        chunks = ChunkOutput(many=True)

    class DeleteOutput(serializers.Serializer):  # type: ignore[type-arg]
        success = serializers.BooleanField()
        document_id = serializers.CharField()
        collection = serializers.CharField()

    @extend_schema(
        parameters=[DOCUMENT_ID_PARAM, SHARED_PARAM],
        responses={200: DetailOutput, **ERRORS},
    )
    def get(self, request: Request, document_id: str) -> Response:
        found = selectors.document_find(
            user=caller(request), document_id=document_id, shared=shared_flag(request)
        )
        chunks = selectors.document_chunks(found=found)
        document = found.document
        fields = {f.name: getattr(document, f.name) for f in dataclasses.fields(document)}
        return Response(self.DetailOutput({**fields, "chunks": chunks}).data)

    @extend_schema(
        parameters=[DOCUMENT_ID_PARAM, SHARED_PARAM],
        responses={200: DeleteOutput, **ERRORS},
    )
    def delete(self, request: Request, document_id: str) -> Response:
        collection = services.document_delete(
            user=caller(request), document_id=document_id, shared=shared_flag(request)
        )
        done = {"success": True, "document_id": document_id, "collection": collection}
        return Response(self.DeleteOutput(done).data)
