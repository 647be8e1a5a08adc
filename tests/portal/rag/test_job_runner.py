"""How a run's error decides a job's fate (portal/rag/job_runner.failure_of): final or retried,
and what its user reads."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from portal.rag.errors import ForbiddenError, SourceNotAllowedError
from portal.rag.job_runner import failure_of
from rag_plugin import exceptions as rag
from tenants.models import IngestJob

JOB = IngestJob(id=uuid.UUID(int=7))


@pytest.mark.parametrize(
    ("exc", "code", "transient"),
    [
        (SourceNotAllowedError("docs"), "FORBIDDEN", False),
        (ForbiddenError("Only tenant admins may change shared collections."), "FORBIDDEN", False),
        (rag.InvalidInputError("Content too small to chunk"), "INVALID_INPUT", False),
        (rag.QuotaExceededError("user 'alice'", "documents", 5, 5, 1), "QUOTA_EXCEEDED", False),
        (rag.CollectionNotFoundError("Collection 'x' not found"), "NOT_FOUND", False),
        (rag.EmbeddingInputError("the service refused a text"), "EXTERNAL_SERVICE_ERROR", False),
        (rag.EmbeddingAuthError("key sk-123 refused"), "EXTERNAL_SERVICE_ERROR", False),
        (rag.EmbeddingRateLimitedError("slow down"), "EXTERNAL_SERVICE_ERROR", True),
        (rag.EmbeddingError("502 from upstream"), "EXTERNAL_SERVICE_ERROR", True),
        (rag.ConfigurationError("model mismatch"), "CONFIGURATION_ERROR", False),
        (PoolTimeout("no connection"), "DATABASE_UNAVAILABLE", True),
        (psycopg.OperationalError("server closed the connection"), "DATABASE_UNAVAILABLE", True),
        (rag.StoreError("database error in schema 'acme'"), "DATABASE_ERROR", True),
        (ZeroDivisionError("division by zero"), "INTERNAL_ERROR", True),
    ],
)
def test_an_error_is_final_or_retried_with_its_code(
    exc: Exception, code: str, transient: bool
) -> None:
    assert failure_of(exc, JOB)[::2] == (code, transient)


@pytest.mark.parametrize(
    "exc",
    [
        rag.StoreError("database error in schema 'acme': bigint out of range"),
        rag.EmbeddingAuthError("upstream said: key sk-123 invalid"),
        ZeroDivisionError("division by zero"),
    ],
)
def test_a_message_that_could_show_internals_is_replaced(exc: Exception) -> None:
    code, message, _ = failure_of(exc, JOB)
    assert str(exc) not in message
    assert "acme" not in message
    assert "sk-123" not in message
    if code != "DATABASE_UNAVAILABLE":
        assert str(JOB.id) in message  # where to look in the worker's log


def test_a_refusal_keeps_its_own_words() -> None:
    assert failure_of(SourceNotAllowedError("docs"), JOB)[1] == (
        "RAG source 'docs' is not allowed for this tenant; a tenant admin enables it in the "
        "RAG source allowlist."
    )
