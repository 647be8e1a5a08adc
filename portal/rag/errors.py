"""The portal's own refusals, in the library's error tree (:mod:`rag_plugin.exceptions`).

The business layer (``portal.rag``: scope, services, jobs, files, profiles) raises these and
the library's errors, never HTTP exceptions, so an admin page, a worker and the REST API can
all call it; each error carries the ``code`` a client reads, and the API's one table
(``portal.api.errors``) adds the HTTP status.

:func:`database_unavailable` tells a database that cannot be reached from a statement that
failed: the API answers the first with 503, a job tries it again.
"""

from __future__ import annotations

import psycopg
from django.db import InterfaceError as DjangoInterfaceError
from psycopg_pool import PoolTimeout

from rag_plugin.exceptions import QuotaExceededError, RagError

__all__ = [
    "ConflictError",
    "ForbiddenError",
    "LlmError",
    "QueueFullError",
    "SourceNotAllowedError",
    "database_unavailable",
]


class ForbiddenError(RagError):
    """The caller may not do this (e.g. write a shared collection without being an admin)."""

    code = "FORBIDDEN"


class SourceNotAllowedError(ForbiddenError):
    """The tenant's allowlist has no enabled entry for this RAG source (SPEC T3)."""

    def __init__(self, source: str) -> None:
        super().__init__(
            f"RAG source '{source}' is not allowed for this tenant; a tenant admin enables it "
            "in the RAG source allowlist."
        )
        self.source = source


class ConflictError(RagError):
    """The request does not fit the object's state (e.g. cancelling a job that has ended)."""

    code = "CONFLICT"


class QueueFullError(QuotaExceededError):
    """A user or the tenant has as many ingestion jobs queued or running as it may (SPEC O7);
    unlike a full store it passes by itself, as jobs end."""

    def __init__(self, scope: str, limit: int, usage: int, adding: int) -> None:
        RagError.__init__(
            self,
            f"Quota exceeded: the {scope} may have at most {limit} ingestion jobs queued or "
            f"running; {usage} are and this request adds {adding}. Try again when some have "
            "ended, or ask an admin to raise the limit.",
        )
        self.scope = scope
        self.resource = "queued jobs"
        self.limit = limit
        self.usage = usage
        self.adding = adding


class LlmError(RagError):
    """The LLM service failed (connection, HTTP error, timeout, a reply that does not parse)."""

    code = "EXTERNAL_SERVICE_ERROR"


# SQLSTATE classes and codes that say the server cannot serve, not that a statement failed:
# connection exceptions (08), insufficient resources such as too many connections (53),
# and a server that is shutting down, crashed or still starting (57P01-57P04).
_UNAVAILABLE_SQLSTATES = ("08", "53", "57P")


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc``, or an error it was raised from, says the database cannot be reached.

    That is a lost or refused connection (psycopg's ``OperationalError`` with no SQLSTATE or
    one of ``_UNAVAILABLE_SQLSTATES``, Django's wrapper of it, or its ``InterfaceError`` for a
    closed connection) or a pool that found no connection in time. A deadlock, a cancelled
    statement or bad SQL is the statement's own failure.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PoolTimeout | DjangoInterfaceError):
            return True
        if isinstance(current, psycopg.OperationalError):
            state = current.sqlstate
            return state is None or state.startswith(_UNAVAILABLE_SQLSTATES)
        current = current.__cause__
    return False
