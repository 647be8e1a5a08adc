"""The tenant's audit log (SPEC O6): every write through the API and every admin change,
recorded append-only in the tenant's schema (:class:`~tenants.models.AuditEvent`).

One table of our own rather than django-auditlog: most of what must be recorded is not a
model change (an ingest, a document deleted from the RAG store, a job cancelled, a token
revoked), and the model changes that are (allowlist, users, profiles, synonyms) are few and
made through the admin, where :class:`AuditedAdmin` records them with before and after.

The request's id and address come from the request being served
(:func:`request_context`, set by :class:`portal.middleware.RequestIdMiddleware`); a worker
or a command records none.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.db.models import Model, QuerySet
from django.forms.models import model_to_dict
from django.utils import timezone

from tenants.models import AuditEvent


@dataclass(frozen=True)
class RequestContext:
    request_id: str
    address: str | None


_REQUEST: ContextVar[RequestContext | None] = ContextVar("rag_audit_request", default=None)


@contextmanager
def request_context(request_id: str, address: str | None) -> Iterator[None]:
    """Events recorded inside the block carry this request's id and address (an address that
    is not one, e.g. from a forged forwarding header, is left out)."""
    try:
        checked = str(ipaddress.ip_address(address)) if address else None
    except ValueError:
        checked = None
    token = _REQUEST.set(RequestContext(request_id, checked))
    try:
        yield
    finally:
        _REQUEST.reset(token)


def record(
    action: str,
    *,
    actor: AbstractBaseUser | None,
    object_type: str,
    object_id: str = "",
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    actor_name: str | None = None,
) -> AuditEvent:
    """Append one event (in the caller's transaction: a write that rolls back leaves none).

    ``actor_name`` names an actor who is no user of this schema (the platform's operator
    changing the tenant's quotas); the event then has no actor id."""
    event = new_event(
        action,
        actor=actor,
        object_type=object_type,
        object_id=object_id,
        before=before,
        after=after,
        actor_name=actor_name,
    )
    event.save()
    return event


def record_all(events: Sequence[AuditEvent]) -> None:
    """Append the events :func:`new_event` made, in one statement (one per document of a
    batch ingest would be a round trip each)."""
    if events:
        AuditEvent.objects.bulk_create(events)


def new_event(
    action: str,
    *,
    actor: AbstractBaseUser | None,
    object_type: str,
    object_id: str = "",
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    actor_name: str | None = None,
) -> AuditEvent:
    """The event :func:`record` appends, not yet saved."""
    context = _REQUEST.get()
    if actor_name is not None:
        actor = None
    return AuditEvent(
        actor_id=getattr(actor, "pk", None),
        actor_name=actor_name
        if actor_name is not None
        else (actor.get_username() if actor is not None else ""),
        action=action,
        object_type=object_type,
        object_id=str(object_id)[:255],
        before=_json(before),
        after=_json(after),
        request_id=context.request_id if context else "",
        address=context.address if context else None,
    )


def snapshot(instance: Model, exclude: tuple[str, ...] = ("password",)) -> dict[str, Any]:
    """A model instance's fields as JSON values (a password hash never)."""
    return _json(model_to_dict(instance, exclude=list(exclude))) or {}


class _Encoder(DjangoJSONEncoder):
    """Dates, decimals and UUIDs as Django writes them; a related object as its primary key
    (a user's groups, a profile's collections)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, Model):
            return o.pk
        return super().default(o)


def _json(value: Mapping[str, Any] | None) -> Any:
    if value is None:
        return None
    return json.loads(json.dumps(dict(value), cls=_Encoder))


def as_json_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    """The events as JSON lines, oldest first (an export for another system)."""
    for event in events.order_by("at", "id").iterator():
        yield (
            json.dumps(
                {
                    "id": event.id,
                    "at": event.at.isoformat(),
                    "tenant": connection.schema_name,  # type: ignore[attr-defined]
                    "actor": event.actor_name,
                    "action": event.action,
                    "object_type": event.object_type,
                    "object_id": event.object_id,
                    "before": event.before,
                    "after": event.after,
                    "request_id": event.request_id,
                    "address": event.address,
                },
                ensure_ascii=False,
            )
            + "\n"
        )


@transaction.atomic
def prune(days: int) -> int:
    """Delete the events older than ``days`` (the retention); return how many. The only
    deletion the table's trigger lets through."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL rag.audit_prune = 'on'")
    deleted, _ = AuditEvent.objects.filter(at__lt=timezone.now() - timedelta(days=days)).delete()
    return deleted
