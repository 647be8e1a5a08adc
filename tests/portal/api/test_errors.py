"""The exception handler in process: server-side errors are logged, never shown."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from rest_framework import exceptions as drf

from portal.api.errors import api_exception_handler, rag_status
from portal.embedded_db import PROJECT_ROOT
from portal.rag import errors as portal_errors
from portal.rag.errors import LlmError, QueueFullError
from rag_plugin import exceptions as rag

README = (PROJECT_ROOT / "README.md").read_text()

CONTEXT = {"request": SimpleNamespace(request_id="f" * 32), "view": None}


@pytest.mark.parametrize(
    ("exc", "status", "code", "message"),
    [
        (
            rag.StoreError("database error in schema 'acme': bigint out of range"),
            500,
            "DATABASE_ERROR",
            "Internal error",
        ),
        (
            rag.ConfigurationError("extension vector missing in acme"),
            500,
            "CONFIGURATION_ERROR",
            "Internal error",
        ),
        (
            rag.EmbeddingError("upstream said: key sk-123 invalid"),
            502,
            "EXTERNAL_SERVICE_ERROR",
            "An upstream service failed.",
        ),
        (
            LlmError("The LLM service failed: 401 from https://llm.internal"),
            502,
            "EXTERNAL_SERVICE_ERROR",
            "An upstream service failed.",
        ),
        (ZeroDivisionError("division by zero"), 500, "INTERNAL_ERROR", "Internal error"),
    ],
)
def test_a_server_error_shows_a_fixed_message_and_logs_the_text_with_the_request_id(
    caplog: pytest.LogCaptureFixture, exc: Exception, status: int, code: str, message: str
) -> None:
    with caplog.at_level(logging.ERROR, logger="portal.api.errors"):
        response = api_exception_handler(exc, CONTEXT)
    assert response is not None
    assert response.status_code == status
    assert response.data == {"error": message, "code": code, "request_id": "f" * 32}
    (record,) = caplog.records
    assert str(exc) in record.getMessage()
    assert record.request_id == "f" * 32  # type: ignore[attr-defined]


def test_a_client_error_keeps_its_message() -> None:
    response = api_exception_handler(rag.InvalidInputError("limit: too big"), CONTEXT)
    assert response is not None
    assert (response.status_code, response.data) == (
        400,
        {"error": "limit: too big", "code": "INVALID_INPUT"},
    )
    throttled = api_exception_handler(drf.Throttled(wait=3), CONTEXT)
    assert throttled is not None
    assert throttled.status_code == 429


def test_djangos_permission_denied_is_a_403() -> None:
    from django.core.exceptions import PermissionDenied

    response = api_exception_handler(PermissionDenied("Not yours."), CONTEXT)
    assert response is not None
    assert (response.status_code, response.data) == (
        403,
        {"error": "Not yours.", "code": "FORBIDDEN"},
    )


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (rag.FileTooLargeError("The file has 60 bytes, more than the limit of 50."), 413),
        (rag.TooManyPagesError("The PDF has 3000 pages, more than the limit of 2000."), 413),
        (rag.UnsupportedFileTypeError("The file is a PNG image."), 422),
        (rag.EncryptedDocumentError("The PDF is encrypted."), 422),
        (rag.DecompressionBombError("The DOCX would decompress to 300 MB."), 422),
        (rag.CorruptDocumentError("The PDF is damaged."), 422),
        (rag.ExtractionTimeoutError("Extracting took longer than 120 s."), 422),
    ],
)
def test_a_file_that_cannot_be_extracted_is_a_client_error_with_the_errors_own_code(
    exc: rag.RagError, status: int
) -> None:
    response = api_exception_handler(exc, CONTEXT)
    assert response is not None
    # The job runner records exc.code; the API must answer with the same one.
    assert (response.status_code, response.data) == (status, {"error": str(exc), "code": exc.code})


def _library_errors() -> list[type[rag.RagError]]:
    """Every error class of rag_plugin.exceptions and the portal's own refusals."""
    found, todo = [], [rag.RagError]
    while todo:
        cls = todo.pop()
        if cls.__module__ in (rag.__name__, portal_errors.__name__):
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(set(found), key=lambda cls: cls.__name__)


def _instance(cls: type[rag.RagError]) -> rag.RagError:
    if issubclass(cls, rag.DimensionMismatchError):
        return cls(384, 768)
    if issubclass(cls, QueueFullError):
        return cls("tenant", 5, 5, 1)
    if issubclass(cls, rag.QuotaExceededError):
        return cls("tenant", "documents", 5, 5, 1)
    return cls("x")


@pytest.mark.parametrize("cls", _library_errors(), ids=lambda cls: cls.__name__)
def test_every_library_error_is_answered_with_its_own_code_which_the_readme_lists(
    cls: type[rag.RagError],
) -> None:
    response = api_exception_handler(_instance(cls), CONTEXT)
    assert response is not None
    # One table: the status by class, the code the error's own (the job runner's too).
    assert response.data["code"] == cls.code
    assert response.status_code == rag_status(_instance(cls))
    assert f"`{cls.code}`" in README, f"README does not document {cls.code}"


def test_the_embedding_service_refusing_our_key_is_no_client_authentication_failure() -> None:
    response = api_exception_handler(rag.EmbeddingAuthError("401 from the service"), CONTEXT)
    assert response is not None
    assert (response.status_code, response.data["code"]) == (502, "EXTERNAL_SERVICE_ERROR")
    conflict = api_exception_handler(rag.CollectionExistsError("docs"), CONTEXT)
    assert conflict is not None
    assert (conflict.status_code, conflict.data["code"]) == (409, "CONFLICT")
