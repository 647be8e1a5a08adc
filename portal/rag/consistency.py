"""Read-your-writes across requests and processes, with ``DATABASE_REPLICA_URLS``.

The stores read on standbys (``rag_plugin.stores.postgres.replicas``) and wait for the WAL
position their context carries. A user's writes happen in one request, or in a worker's job,
and their reads in the next requests, in any process: so the position travels through the
primary, as one row per user (:class:`tenants.models.WriteMark`), read once per request that
reaches RAG data and raised after each request or job that wrote. After a user's write their
next reads never see an older state, whichever client they use; other users' reads may be up
to ``RAG_REPLICA_MAX_LAG_S`` behind.

Without standbys, nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.http import HttpRequest, HttpResponseBase

from portal.rag.runtime import replicas_configured
from rag_plugin.stores.consistency import raise_read_after, read_after, read_context
from tenants.models import WriteMark

__all__ = ["ReadYourWritesMiddleware", "follow_user", "user_reads", "user_wrote"]

# The user whose reads the request's context follows, and the mark they came with.
_followed: ContextVar[tuple[int, int] | None] = ContextVar("rag_followed_user", default=None)


def follow_user(user: AbstractBaseUser) -> None:
    """Make this context's reads see ``user``'s last write (once per request or job: every
    access to RAG data calls it, through ``scope_for``)."""
    if not replicas_configured() or user.pk is None:
        return
    followed = _followed.get()
    if followed is not None and followed[0] == user.pk:
        return
    mark = WriteMark.objects.filter(user_id=user.pk).values_list("lsn", flat=True).first() or 0
    _followed.set((user.pk, mark))
    raise_read_after(mark)


def user_wrote() -> None:
    """Keep the position this context's writes reached as its user's mark, if it is past the
    one they came with (the end of a request or a job)."""
    followed = _followed.get()
    if followed is None:
        return
    user_id, mark = followed
    reached = read_after()
    if reached <= mark:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tenants_writemark (user_id, lsn, updated_at) VALUES (%s, %s, now())"
            " ON CONFLICT (user_id) DO UPDATE"
            " SET lsn = GREATEST(tenants_writemark.lsn, EXCLUDED.lsn), updated_at = now()",
            [user_id, reached],
        )
    _followed.set((user_id, reached))


@contextmanager
def user_reads() -> Iterator[None]:
    """One request's or job's read consistency: it starts from nothing (whatever this thread
    served before) and keeps its user's mark when it ends."""
    with read_context():
        token = _followed.set(None)
        try:
            yield
            user_wrote()
        finally:
            _followed.reset(token)


class ReadYourWritesMiddleware:
    """Each request in :func:`user_reads` (nothing to do without standbys)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not replicas_configured():
            return self.get_response(request)
        with user_reads():
            return self.get_response(request)
