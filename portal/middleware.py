"""Request guards that run before any other work."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from portal.api.errors import json_error


class BodySizeLimitMiddleware:
    """Answer 413 to a request whose declared body exceeds ``RAG_API['MAX_BODY_BYTES']``.

    It runs first, before the tenant lookup, so an oversized upload costs no database work.
    Bodies sent without a Content-Length are capped by ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (the
    same limit), which the API's exception handler also turns into 413.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = int(settings.RAG_API["MAX_BODY_BYTES"])
        declared = request.META.get("CONTENT_LENGTH") or "0"
        try:
            size = int(declared)
        except ValueError:
            return json_error("Content-Length must be an integer.", "INVALID_INPUT", 400)
        if size > limit:
            return json_error(
                f"Request body is {size} bytes; the limit is {limit} bytes.",
                "PAYLOAD_TOO_LARGE",
                413,
            )
        return self.get_response(request)
