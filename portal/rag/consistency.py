"""Reads on standbys with read-your-writes across requests and processes
(``DATABASE_REPLICA_URLS``).

The stores read on standbys (``rag_plugin.stores.postgres.replicas``) and wait for the WAL
position their context carries; Django's reads go to a standby only inside :func:`on_standby`
(the job listings), through :class:`ReplicaRouter`. A user's writes happen in one request,
or in a worker's job, and their reads in the next requests, in any process: so the position
travels through the primary, as one row per user (:class:`tenants.models.WriteMark`), read
once per request that reads RAG data or jobs, and raised after each request that may have
written (any method but GET, HEAD, OPTIONS) and each job. After a user's write their next
reads never see an older state, whichever client they use; other users' reads may be up to
``RAG_REPLICA_MAX_LAG_S`` behind.

Without standbys, nothing here touches the database.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections
from django.db.models import Model
from django.http import HttpRequest, HttpResponseBase

from portal.rag.errors import database_unavailable
from portal.rag.runtime import replica_set, replicas_configured
from rag_plugin.stores.consistency import on_primary, raise_read_after, read_after, read_context
from tenants.models import WriteMark

__all__ = [
    "ReadYourWritesMiddleware",
    "ReplicaRouter",
    "follow_user",
    "mark_writes",
    "on_standby",
    "user_reads",
]

T = TypeVar("T")

logger = logging.getLogger(__name__)

# The user whose reads the request's context follows, and the mark they came with.
_followed: ContextVar[tuple[int, int] | None] = ContextVar("rag_followed_user", default=None)


def follow_user(user: AbstractBaseUser) -> None:
    """Make this context's reads see ``user``'s last write (once per request or job: every
    access to RAG data calls it, through ``scope_for``, and so do the job listings)."""
    if not replicas_configured() or user.pk is None:
        return
    followed = _followed.get()
    if followed is not None and followed[0] == user.pk:
        return
    mark = WriteMark.objects.filter(user_id=user.pk).values_list("lsn", flat=True).first() or 0
    _followed.set((user.pk, mark))
    raise_read_after(mark)


def mark_writes(user_id: int) -> None:
    """Raise ``user_id``'s mark to where the primary's WAL is now (and at least to this
    context's read-after position): what they wrote so far is then what their next reads see.
    One statement on the primary; none without standbys."""
    if not replicas_configured():
        return
    with connection.cursor() as cursor:
        # The table is WriteMark's (its Meta names it), in the tenant's schema.
        cursor.execute(
            "INSERT INTO tenants_writemark (user_id, lsn, updated_at) VALUES"
            " (%s, GREATEST(%s, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint), now())"
            " ON CONFLICT (user_id) DO UPDATE"
            " SET lsn = GREATEST(tenants_writemark.lsn, EXCLUDED.lsn), updated_at = now()"
            " RETURNING lsn",
            [user_id, read_after()],
        )
        (mark,) = cursor.fetchone()
    followed = _followed.get()
    if followed is not None and followed[0] == user_id:
        _followed.set((user_id, mark))
    raise_read_after(mark)


@contextmanager
def user_reads() -> Iterator[None]:
    """One request's or job's read consistency: it starts from nothing, whatever this thread
    served before."""
    with read_context():
        token = _followed.set(None)
        try:
            yield
        finally:
            _followed.reset(token)


class ReadYourWritesMiddleware:
    """Each request in :func:`user_reads`; after one that may have written, its user's mark
    is raised (nothing to do without standbys)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not replicas_configured():
            return self.get_response(request)
        with user_reads():
            response = self.get_response(request)
            if request.method not in ("GET", "HEAD", "OPTIONS"):
                # DRF hands the user it authenticated to the Django request too.
                user = getattr(request, "user", None)
                if user is not None and user.is_authenticated:
                    try:
                        mark_writes(user.pk)
                    except DatabaseError as exc:
                        # The primary is gone after the response was made (whose own write,
                        # if any, then likely failed too): the response stands; their next
                        # request reads wherever the database serves it.
                        if not database_unavailable(exc):
                            raise
                        logger.warning("write mark of user %s not raised: %s", user.pk, exc)
            return response


# -- Django's reads on standbys ---------------------------------------------------------

_standby_reads: ContextVar[bool] = ContextVar("rag_django_standby_reads", default=False)
# The standbys (by position) this context's Django reads went to, for on_standby's retry.
_standbys_used: ContextVar[tuple[int, ...]] = ContextVar("rag_standbys_used", default=())


def replica_alias(position: int) -> str:
    """The Django database alias of the standby at ``position`` in DATABASE_REPLICA_URLS."""
    return f"replica_{position}"


def on_standby(read: Callable[[], T]) -> T:
    """``read()`` with its Django queries (``read`` must evaluate them) on a standby in
    rotation that has replayed this context's read-after position, else on the primary; if a
    standby fails under it, ``read()`` runs again on the primary. Only for reads that decide
    no write (a listing shown to the user)."""
    replicas = replica_set()
    if replicas is None or on_primary() or connections["default"].in_atomic_block:
        return read()
    standby, used = _standby_reads.set(True), _standbys_used.set(())
    try:
        return read()
    except (OperationalError, InterfaceError) as exc:
        positions = _standbys_used.get()
        if not positions:
            raise  # the primary failed: nothing to fall back to
        for position in positions:
            replicas.failed_at(position, exc)
            connections[replica_alias(position)].close()
        _standby_reads.set(False)
        return read()
    finally:
        _standbys_used.reset(used)
        _standby_reads.reset(standby)


class ReplicaRouter:
    """Django's reads inside :func:`on_standby` go to a standby's alias (``replica_<n>``,
    made from DATABASE_REPLICA_URLS in settings) with the tenant's schema of the default
    connection; everything else, writes and migrations included, to the primary."""

    def db_for_read(self, model: type[Model], **hints: Any) -> str | None:
        if not _standby_reads.get():
            return None
        replicas = replica_set()
        position = replicas.replayed(read_after()) if replicas is not None else None
        if position is None:
            return None
        alias = replica_alias(position)
        _same_schema(connections["default"], connections[alias])
        _standbys_used.set((*_standbys_used.get(), position))
        return alias

    def db_for_write(self, model: type[Model], **hints: Any) -> str | None:
        return None

    def allow_relation(self, first: Model, second: Model, **hints: Any) -> bool | None:
        return None

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return False if db.startswith("replica_") else None


def _same_schema(default: Any, standby: Any) -> None:
    """Point the standby's connection at the default connection's tenant schema (django-tenants
    sets the tenant on the default connection only)."""
    if (standby.schema_name, standby.include_public_schema) != (
        default.schema_name,
        default.include_public_schema,
    ):
        standby.set_tenant(default.tenant, default.include_public_schema)
