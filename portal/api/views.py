"""Thin API views: parse the body, call one service or selector, render the result."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, cast

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import serializers as s
from portal.api.job_outputs import JobAcceptedOutput, accepted
from portal.api.tokens import issue_token
from portal.login_guard import FailedLogins
from portal.rag import jobs, selectors, services
from portal.rag.context_retrieval import (
    ProfileContext,
    RequestedCollection,
    profile_answer,
    profile_context,
)
from portal.throttling import (
    ChatRateThrottle,
    IngestRateThrottle,
    LoginRateThrottle,
    SearchRateThrottle,
)
from rag_plugin.engine import SearchHit
from rag_plugin.stores.base import MAX_COLLECTION_NAME_LENGTH


def _caller(request: Request) -> AbstractBaseUser:
    # IsAuthenticated has run: the user is a real account of this tenant.
    return cast(AbstractBaseUser, request.user)


def _shared(request: Request) -> bool:
    query = s.SharedQuery(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    return bool(query.validated_data["shared"])


ERRORS = dict.fromkeys((400, 401, 403, 404, 413, 429), s.ErrorOutput)


def event_schema(*names: str) -> dict[str, Any]:
    """The schema of one Server-Sent Event named one of ``names`` whose data is JSON (before
    OpenAPI 3.2, an event stream's ``schema`` describes each event)."""
    return {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {"type": "string", "enum": list(names)},
            "data": {"type": "string", "contentMediaType": "application/json"},
        },
    }


ERROR_EVENT = {
    **event_schema("error"),
    "description": "The error body of a JSON error response, as one `error` event.",
}
STREAM_ERRORS: dict[Any, Any] = {
    **{(status, "application/json"): s.ErrorOutput for status in ERRORS},
    **{(status, "text/event-stream"): ERROR_EVENT for status in ERRORS},
}
"""The error responses of an endpoint that streams events: JSON, or an ``error`` event for a
client that accepts only ``text/event-stream``."""


def _record_fields(record: Any) -> dict[str, Any]:
    """A record dataclass's fields by name (an output serializer reads a mapping's keys as it
    reads an object's attributes), to add what the record lacks."""
    return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}


def _hit(hit: SearchHit) -> dict[str, Any]:
    chunk = hit.chunk
    metadata = {
        **chunk.metadata,  # what the document was given and the chunk's own (a file's pages)
        "title": chunk.metadata.get("title", ""),
        "source": chunk.metadata.get("source", ""),
        "created_at": chunk.metadata.get("created_at", ""),
        "tags": list(chunk.metadata.get("tags", [])),
        "document_id": chunk.document_id,
        "chunk_index": chunk.index,
        "start_offset": chunk.start_offset,
        "end_offset": chunk.end_offset,
    }
    return {
        "id": chunk.id,
        "content": chunk.content,
        "score": hit.score,
        "normalized_score": hit.normalized_score,
        "rerank": hit.rerank.as_dict() if hit.rerank is not None else None,
        "metadata": metadata,
    }


class LoginView(APIView):
    """Exchange a tenant user's credentials for a bearer token (SPEC A1)."""

    permission_classes = (AllowAny,)
    authentication_classes = ()
    throttle_classes = (LoginRateThrottle,)

    def get_authenticate_header(self, request: Request) -> str:
        # Without an authentication class DRF would turn a failed login into 403.
        return "Bearer"

    @extend_schema(request=s.LoginInput, responses={200: s.LoginOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        body = s.LoginInput(data=request.data)
        body.is_valid(raise_exception=True)
        username = body.validated_data.get("username")
        if not username:
            match = (
                get_user_model()
                .objects.filter(email__iexact=body.validated_data["email"])
                .order_by("pk")
                .first()
            )
            username = match.get_username() if match else None
        # Failures count per account (the name as given), so guesses spread over many
        # addresses still stop; the per-address throttle above counts every attempt.
        failures = FailedLogins(str(username or body.validated_data.get("email", "")))
        wait = failures.attempt()  # counted as a failure until the password proves otherwise
        if wait is not None:
            raise Throttled(wait, "Too many failed logins for this account.")
        user = (
            authenticate(request, username=username, password=body.validated_data["password"])
            if username
            else None
        )
        if user is None:
            raise AuthenticationFailed("Invalid username or password.")
        failures.succeeded()
        token = issue_token(user=user, schema_name=connection.schema_name)  # type: ignore[attr-defined]
        return Response(s.LoginOutput(token).data)


class IngestView(APIView):
    """Chunk, embed and store one document in a collection of the caller (SPEC A2); as a
    background job (202) when asked (``async``) or when the content is large (SPEC J1)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (IngestRateThrottle,)

    @extend_schema(
        request=s.IngestInput,
        responses={200: s.IngestOutput, 202: JobAcceptedOutput, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = s.IngestInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        run_async = data.pop("async")
        options = {k: data.pop(k) for k in ("collection", "chunking_strategy", "shared")}
        document = services.NewDocument(**data)
        reason = _job_reason(run_async, [document])
        if reason:
            job = jobs.job_submit(
                user=_caller(request), documents=[document], kind="document", **options
            )
            return accepted(job, reason)
        ingested = services.document_ingest(user=_caller(request), **data, **options)
        result = ingested.result
        # Built directly (IngestOutput documents it): serialising five plain values through
        # the DRF serializer cost ~0.5 ms, a tenth of re-ingesting an unchanged document.
        return Response(
            {
                "chunks_created": len(result.chunks),
                "document_ids": result.chunk_ids,
                "document_id": result.document.id,
                "collection": ingested.collection,
                "unchanged": result.unchanged,
            }
        )


def _job_reason(run_async: bool, documents: list[services.NewDocument]) -> str | None:
    """Why an ingest runs as a job (``requested``, ``size``), or None to run it now."""
    if run_async:
        return "requested"
    if jobs.content_bytes(documents) > jobs.sync_max_bytes():
        return "size"
    return None


class IngestBatchView(APIView):
    """Chunk, embed and store several documents in a collection of the caller, in one write:
    all the changed documents or none (a bad one is named, e.g. ``documents[2].content``); as
    a background job (202) when asked (``async``) or when the content is large."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (IngestRateThrottle,)

    @extend_schema(
        request=s.IngestBatchInput,
        responses={200: s.IngestBatchOutput, 202: JobAcceptedOutput, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        body = s.IngestBatchInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        run_async = data.pop("async")
        documents = [services.NewDocument(**document) for document in data.pop("documents")]
        reason = _job_reason(run_async, documents)
        if reason:
            job = jobs.job_submit(user=_caller(request), documents=documents, kind="batch", **data)
            return accepted(job, reason)
        ingested = services.documents_ingest(user=_caller(request), documents=documents, **data)
        return Response(
            {
                "collection": ingested.collection,
                "chunks_created": sum(len(result.chunks) for result in ingested.results),
                "documents": [
                    {
                        "document_id": result.document.id,
                        "source": result.document.source,
                        "chunks_created": len(result.chunks),
                        "document_ids": result.chunk_ids,
                        "unchanged": result.unchanged,
                    }
                    for result in ingested.results
                ],
            }
        )


class SearchView(APIView):
    """Search one collection of the caller with any strategy (SPEC A3)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (SearchRateThrottle,)

    @extend_schema(request=s.SearchInput, responses={200: s.SearchOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        started = time.perf_counter()
        body = s.SearchInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        outcome = selectors.rag_search(user=_caller(request), **data)
        results = [_hit(hit) for hit in outcome.hits]
        return Response(
            {
                "results": results,
                "total": len(results),
                "strategy": str(outcome.strategy),
                "reranked": any(hit.rerank is not None for hit in outcome.hits),
                "rerank": str(data["rerank"]),
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "corrected_query": outcome.corrected_query,
                "corrections": [
                    {"original": c.original, "corrected": c.corrected, "distance": c.distance}
                    for c in outcome.corrections
                ],
            }
        )


SHARED_PARAM = OpenApiParameter(
    "shared", bool, description="List the tenant-shared collections instead of your own."
)
COLLECTION_PARAM = OpenApiParameter(
    "collection",
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_COLLECTION_NAME_LENGTH,
        "pattern": s.COLLECTION_NAME_PATTERN,
    },
    OpenApiParameter.PATH,
    description="The collection's name.",
)
DOCUMENT_ID_PARAM = OpenApiParameter(
    "document_id",
    # Any text but NUL (refused with 400 by portal.middleware.UrlTextMiddleware).
    {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]*$"},
    OpenApiParameter.PATH,
    description="The document's id, as ingest returned it.",
)


class CollectionListView(APIView):
    """The caller's collections whose source is enabled (SPEC A4)."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        parameters=[SHARED_PARAM], responses={200: s.CollectionOutput(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        shared = _shared(request)
        collections = selectors.collection_list(user=_caller(request), shared=shared)
        return Response(s.CollectionOutput(collections, many=True).data)


class CollectionDeleteView(APIView):
    """Delete a collection of the caller with all its documents (SPEC A4)."""

    permission_classes = (IsAuthenticated,)
    delete_takes_body = True  # {collection, shared}, as the seed API (see portal.api.schema)

    @extend_schema(
        request=s.CollectionDeleteInput, responses={200: s.CollectionDeleteOutput, **ERRORS}
    )
    def delete(self, request: Request) -> Response:
        body = s.CollectionDeleteInput(data=request.data)
        body.is_valid(raise_exception=True)
        deleted = services.collection_delete(user=_caller(request), **body.validated_data)
        return Response(
            {
                "success": True,
                "collection": body.validated_data["collection"],
                "documents_deleted": deleted,
            }
        )


class DocumentListView(APIView):
    """The documents of one collection, newest first."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        # shared, limit (1-1000) and offset, with their bounds
        parameters=[COLLECTION_PARAM, s.PageInput],
        responses={200: s.DocumentListOutput, **ERRORS},
    )
    def get(self, request: Request, collection: str) -> Response:
        page = s.PageInput(data=request.query_params.dict())
        page.is_valid(raise_exception=True)
        documents = selectors.document_list(
            user=_caller(request), collection=collection, **page.validated_data
        )
        listed = {"collection": collection, "documents": documents, **page.validated_data}
        return Response(s.DocumentListOutput(listed).data)


class DocumentView(APIView):
    """One document of the caller, with its chunks; or its deletion."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        parameters=[DOCUMENT_ID_PARAM, SHARED_PARAM],
        responses={200: s.DocumentDetailOutput, **ERRORS},
    )
    def get(self, request: Request, document_id: str) -> Response:
        shared = _shared(request)
        found = selectors.document_find(
            user=_caller(request), document_id=document_id, shared=shared
        )
        chunks = selectors.document_chunks(found=found)
        detail = {**_record_fields(found.document), "chunks": chunks}
        return Response(s.DocumentDetailOutput(detail).data)

    @extend_schema(
        parameters=[DOCUMENT_ID_PARAM, SHARED_PARAM],
        responses={200: s.DocumentDeleteOutput, **ERRORS},
    )
    def delete(self, request: Request, document_id: str) -> Response:
        shared = _shared(request)
        collection = services.document_delete(
            user=_caller(request), document_id=document_id, shared=shared
        )
        return Response({"success": True, "document_id": document_id, "collection": collection})


def _profile_overrides(data: dict[str, Any]) -> dict[str, Any]:
    """A context request's settings that override its profile's (``RetrievalProfile`` names)."""
    return {
        field: data[key]
        for key, field in (
            ("k", "retrieval_k"),
            ("min_relevance", "min_relevance"),
            ("rerank", "rerank"),
            ("filters", "filters"),
        )
        if key in data
    }


def profile_request(request: Request, data: dict[str, Any]) -> dict[str, Any]:
    """Who asks, for which profile or collections, with which overrides: the arguments of
    ``portal.rag.context_retrieval`` that a validated context (or chat) request names."""
    return {
        "user": _caller(request),
        "profile": data.get("profile"),
        "collections": [RequestedCollection(**c) for c in data.get("collections", [])],
        "overrides": _profile_overrides(data),
    }


def _profile_request(request: Request) -> dict[str, Any]:
    body = s.ContextInput(data=request.data)
    body.is_valid(raise_exception=True)
    return {**profile_request(request, body.validated_data), "query": body.validated_data["query"]}


def context_body(found: ProfileContext) -> dict[str, Any]:
    return {
        "context": found.context.context,
        "sources": [source.as_dict() for source in found.context.sources]
        if found.include_sources
        else [],
        "profile": found.profile,
        "relevance_fallback": found.retrieval.relevance_fallback,
        "skipped_collections": list(found.skipped),
    }


class ContextView(APIView):
    """Numbered context and sources from several collections or a profile (SPEC A7, R4)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (SearchRateThrottle,)

    @extend_schema(request=s.ContextInput, responses={200: s.ContextOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        return Response(context_body(profile_context(**_profile_request(request))))


class AnswerView(APIView):
    """An answer with [N] citations from the deployment's LLM, or the context alone (R5)."""

    permission_classes = (IsAuthenticated,)
    throttle_classes = (ChatRateThrottle,)

    @extend_schema(request=s.ContextInput, responses={200: s.AnswerOutput, **ERRORS})
    def post(self, request: Request) -> Response:
        result = profile_answer(**_profile_request(request))
        return Response(
            {
                **context_body(result.found),
                "answer": result.answer,
                "cited": list(result.cited),
                "message": result.message,
            }
        )
