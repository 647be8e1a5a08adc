"""The error contract (SPEC A5): every error is JSON ``{"error": message, "code": CODE}``.

One DRF exception handler maps both DRF's exceptions and the ``rag_plugin`` error tree to a
status and a code, from the tables below, so the mapping lives in exactly one place.

A server-side error (5xx) never shows its own text: a database error names the schema and the
SQL, an upstream one repeats what the service said. Its full text is logged with the
request's id (:class:`portal.middleware.RequestIdMiddleware`), and the client gets the code,
a fixed message for its status and the same ``request_id`` to quote — whatever ``DEBUG`` is.
Exceptions no table knows become the same 500 instead of Django's HTML error page.

A database that cannot be reached (down, restarting, refusing or dropping connections, or a
connection pool with none to give) is not a fault of the request: it answers 503
``DATABASE_UNAVAILABLE`` with a ``Retry-After`` header, from here and from Django's
``handler500`` (:func:`portal.views.server_error`) alike, so a client knows to try again.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.rag.errors import (
    ConflictError,
    ForbiddenError,
    LlmError,
    QueueFullError,
    database_unavailable,
)
from rag_plugin import exceptions as rag

logger = logging.getLogger(__name__)


class PayloadTooLarge(drf.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body is too large."
    default_code = "PAYLOAD_TOO_LARGE"


# rag_plugin errors, most specific first: (class, HTTP status). The API code is the error's
# own ``code`` (rag_plugin.exceptions), which the job runner records too.
RAG_STATUSES: tuple[tuple[type[rag.RagError], int], ...] = (
    (ForbiddenError, 403),
    (ConflictError, 409),
    # Over a quota (SPEC O7): a full queue empties by itself (429), stored data does not.
    (QueueFullError, 429),
    (rag.QuotaExceededError, 413),
    (LlmError, 502),
    (rag.CollectionExistsError, 409),
    (rag.EmbeddingRateLimitedError, 503),
    (rag.EmbeddingError, 502),
    # Files that cannot be extracted (SPEC F2): the file's fault, never a 5xx.
    (rag.FileTooLargeError, 413),
    (rag.TooManyPagesError, 413),
    (rag.UnsupportedFileTypeError, 422),
    (rag.EncryptedDocumentError, 422),
    (rag.CorruptDocumentError, 422),
    (rag.ExtractionTimeoutError, 422),
    (rag.InvalidInputError, 400),
    (rag.NotFoundError, 404),
    (rag.RagError, 500),
)


def rag_status(exc: rag.RagError) -> int:
    """The HTTP status of a ``rag_plugin`` error (the first row of ``RAG_STATUSES`` it is)."""
    return next(status for cls, status in RAG_STATUSES if isinstance(exc, cls))


# DRF errors: (class, API code); the status is the exception's own.
DRF_CODES: tuple[tuple[type[drf.APIException], str], ...] = (
    (PayloadTooLarge, "PAYLOAD_TOO_LARGE"),
    (drf.NotAuthenticated, "AUTHENTICATION_FAILED"),
    (drf.AuthenticationFailed, "AUTHENTICATION_FAILED"),
    (drf.PermissionDenied, "FORBIDDEN"),
    (drf.Throttled, "RATE_LIMITED"),
    (drf.NotFound, "NOT_FOUND"),
    (drf.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (drf.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (drf.NotAcceptable, "NOT_ACCEPTABLE"),
    (drf.ParseError, "INVALID_INPUT"),
    (drf.ValidationError, "INVALID_INPUT"),
)


# What a client reads for a server-side error, by status: nothing of the error's own text.
_SERVER_MESSAGES = {
    500: "Internal error",
    502: "An upstream service failed.",
    503: "An upstream service is unavailable; try again later.",
}


DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
_UNAVAILABLE_MESSAGE = "The database is unavailable; try again later."


def retry_after_seconds() -> int:
    """The ``Retry-After`` of a 503 ``DATABASE_UNAVAILABLE``."""
    return int(settings.RAG_API["DATABASE_RETRY_AFTER_S"])


def database_unavailable_body(exc: BaseException, request_id: str, where: str) -> dict[str, str]:
    """Log one line (no traceback: an outage repeats it for every request) under
    ``request_id``; the body of the 503 that says the database is unavailable."""
    logger.warning(
        "database unavailable on %s: %s: %s",
        where,
        type(exc).__name__,
        exc,
        extra={"event": "api.database_unavailable", "request_id": request_id},
    )
    return {**error_body(_UNAVAILABLE_MESSAGE, DATABASE_UNAVAILABLE), "request_id": request_id}


def error_body(message: str, code: str) -> dict[str, str]:
    return {"error": message, "code": code}


def request_id_of(context: dict[str, Any]) -> str:
    """The id the request was given by the middleware (a new one if it has none)."""
    request = context.get("request")
    found = getattr(getattr(request, "_request", request), "request_id", None)
    return str(found) if found else uuid.uuid4().hex


def server_error(
    exc: BaseException, status_code: int, code: str, context: dict[str, Any]
) -> Response:
    """Log ``exc`` in full under the request's id; answer without its text."""
    where = type(context.get("view")).__name__
    body = server_error_body(exc, status_code, code, request_id_of(context), where)
    return Response(body, status=status_code)


def server_error_body(
    exc: BaseException, status_code: int, code: str, request_id: str, where: str
) -> dict[str, str]:
    """Log ``exc`` in full under ``request_id``; the body that says what failed, not how (also
    the ``error`` event of a stream that has started)."""
    logger.error(
        "server error %s on %s: %s",
        code,
        where,
        exc,
        exc_info=exc,
        extra={"event": "api.server_error", "request_id": request_id, "code": code},
    )
    message = _SERVER_MESSAGES.get(status_code, _SERVER_MESSAGES[500])
    return {**error_body(message, code), "request_id": request_id}


def _first_message(detail: Any, path: str = "") -> str:
    """Flatten DRF's nested validation detail into one sentence naming the field."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int):  # DRF keys list items' errors by position
                return _first_message(value, f"{path}[{key}]")
            field = key if key != "non_field_errors" else ""
            return _first_message(value, f"{path}.{field}" if path and field else path or field)
        return "Invalid input."
    if isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, dict | list) and path:
                if not value:
                    continue  # a list serializer's entry for a valid item
                return _first_message(value, f"{path}[{index}]")
            return _first_message(value, path)
        return "Invalid input."
    text = str(detail)
    return f"{path}: {text}" if path else text


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every API error as ``{"error", "code"}`` with the contract's status."""
    if database_unavailable(exc):
        where = type(context.get("view")).__name__
        body = database_unavailable_body(exc, request_id_of(context), where)
        return Response(body, status=503, headers={"Retry-After": str(retry_after_seconds())})
    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    if isinstance(exc, Http404):
        exc = drf.NotFound(str(exc) or "Not found.")
    if isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied(str(exc) or None)
    if isinstance(exc, rag.RagError):
        status_code = rag_status(exc)
        if status_code >= 500:
            return server_error(exc, status_code, exc.code, context)
        return Response(error_body(str(exc), exc.code), status=status_code)
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, drf.APIException):
        return server_error(exc, 500, "INTERNAL_ERROR", context)
    code = next((c for cls, c in DRF_CODES if isinstance(exc, cls)), "INTERNAL_ERROR")
    if response.status_code >= 500:
        return server_error(exc, response.status_code, code, context)
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        message = f"Unauthorized: {exc.detail}"
    else:
        message = _first_message(exc.detail)
    response.data = error_body(message, code)
    return response


def json_error(message: str, code: str, status_code: int) -> JsonResponse:
    """The same body for errors raised outside DRF (middleware, Django's handlers)."""
    return JsonResponse(error_body(message, code), status=status_code)


def json_server_error(exc: BaseException | None, request_id: str, where: str) -> JsonResponse:
    """What Django's ``handler500`` answers for ``exc`` outside DRF: 503
    ``DATABASE_UNAVAILABLE`` with ``Retry-After``, else the 500 body of the API."""
    if exc is not None and database_unavailable(exc):
        return JsonResponse(
            database_unavailable_body(exc, request_id, where),
            status=503,
            headers={"Retry-After": str(retry_after_seconds())},
        )
    if exc is None:
        exc = RuntimeError("handler500 was called with no exception in flight")
    return JsonResponse(
        server_error_body(exc, 500, "INTERNAL_ERROR", request_id, where), status=500
    )
