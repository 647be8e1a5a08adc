"""Request guards that run before any other work."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from rest_framework.throttling import BaseThrottle

from portal.api.errors import json_error
from portal.rag import audit

UPLOAD_PATHS = frozenset({"/api/rag/files", "/admin/rag/upload/", "/upload/"})
"""Routes that take files (the API's, the admin's and the workspace's): their limit is
``RAG_FILES['MAX_UPLOAD_BYTES']``, and they need a Content-Length (an upload streamed without
one could not be refused before it is read)."""


class BodySizeLimitMiddleware:
    """Answer 413 to a request whose declared body exceeds ``RAG_API['MAX_BODY_BYTES']`` (or
    ``RAG_FILES['MAX_UPLOAD_BYTES']`` on an upload route).

    It runs first, before the tenant lookup, so an oversized upload costs no database work.
    Bodies sent without a Content-Length are capped by ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (the
    same limit), which the API's exception handler also turns into 413; an upload without one
    is refused (411).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        upload = request.path in UPLOAD_PATHS and request.method == "POST"
        if upload:
            limit, setting = int(settings.RAG_FILES["MAX_UPLOAD_BYTES"]), "RAG_MAX_UPLOAD_BYTES"
        else:
            limit, setting = int(settings.RAG_API["MAX_BODY_BYTES"]), "RAG_MAX_BODY_BYTES"
        declared = request.META.get("CONTENT_LENGTH") or ""
        if upload and not declared:
            return json_error(
                "Send the upload's size in a Content-Length header.", "LENGTH_REQUIRED", 411
            )
        try:
            size = int(declared or "0")
        except ValueError:
            return json_error("Content-Length must be an integer.", "INVALID_INPUT", 400)
        if size > limit:
            return json_error(
                f"Request body is {size} bytes; the limit is {limit} bytes ({setting}).",
                "PAYLOAD_TOO_LARGE",
                413,
            )
        return self.get_response(request)


class RequestIdMiddleware:
    """Give every request an id: ``request.request_id``, sent back as ``X-Request-ID``.

    A server error's body carries it too, and the server's log line for the error names it,
    so a client's report leads to the log line. Made here, never taken from the client: a
    client-chosen id could be made to collide with someone else's.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = uuid.uuid4().hex
        request.request_id = request_id  # type: ignore[attr-defined]
        # The audit log's events of this request carry its id and the client's address (the
        # throttles' address: the connection's, or RAG_TRUSTED_PROXIES' pick).
        address = BaseThrottle().get_ident(request)  # type: ignore[arg-type]  # reads META only
        with audit.request_context(request_id, address or None):
            response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response


class UrlTextMiddleware:
    """Answer 400 to a URL whose path or query string holds a NUL character.

    PostgreSQL text cannot hold one, so a NUL in ``/documents/<id>`` or ``?collection=`` would
    otherwise reach the database as an error. Decoded UTF-8 cannot hold an unpaired surrogate
    (Django re-quotes a URL's bytes that are not UTF-8), so NUL is the one character to refuse.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return json_error(
                "The URL path must not contain a NUL character.", "INVALID_INPUT", 400
            )
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                name = key.replace("\x00", "\\0")
                return json_error(
                    f"{name}: query parameters must not contain a NUL character.",
                    "INVALID_INPUT",
                    400,
                )
        return self.get_response(request)
