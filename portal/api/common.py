"""What the API's views share: who calls, the error responses and path parameters they
document, and the Server-Sent Events that chat answers and job progress stream."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, cast

from django.contrib.auth.models import AbstractBaseUser
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from portal.api.serializers import COLLECTION_NAME_PATTERN, ErrorOutput, SharedQuery
from rag_plugin.stores.base import MAX_COLLECTION_NAME_LENGTH


def caller(request: Request) -> AbstractBaseUser:
    """The authenticated user (the view's ``IsAuthenticated`` has run: a real account of this
    tenant)."""
    return cast(AbstractBaseUser, request.user)


def shared_flag(request: Request) -> bool:
    """The ``shared`` query-string flag: act on the tenant-shared collections."""
    query = SharedQuery(data=request.query_params.dict())
    query.is_valid(raise_exception=True)
    return bool(query.validated_data["shared"])


ERRORS = dict.fromkeys((400, 401, 403, 404, 413, 429), ErrorOutput)
"""The error responses every operation documents (``portal.api.errors`` writes them)."""

SHARED_PARAM = OpenApiParameter(
    "shared", bool, description="List the tenant-shared collections instead of your own."
)
COLLECTION_PARAM = OpenApiParameter(
    "collection",
    {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_COLLECTION_NAME_LENGTH,
        "pattern": COLLECTION_NAME_PATTERN,
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


# -- Server-Sent Events ---------------------------------------------------------------------


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
    **{(status, "application/json"): ErrorOutput for status in ERRORS},
    **{(status, "text/event-stream"): ERROR_EVENT for status in ERRORS},
}
"""The error responses of an endpoint that streams events: JSON, or an ``error`` event for a
client that accepts only ``text/event-stream``."""


def event(name: str, data: Mapping[str, Any]) -> bytes:
    """One Server-Sent Event whose data is ``data`` as JSON."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def event_stream(events: Iterator[bytes]) -> StreamingHttpResponse:
    """A ``text/event-stream`` response that proxies pass on event by event."""
    response = StreamingHttpResponse(events, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy passes each event on at once
    return response


class EventStreamRenderer(BaseRenderer):
    """``text/event-stream``: a view's streamed events; anything else rendered for a client
    that asked for events (an error response) is one ``error`` event with the JSON body."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        return event("error", data if isinstance(data, dict) else {"error": str(data)})
