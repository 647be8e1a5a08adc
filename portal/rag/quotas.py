"""Quotas (SPEC O7): what a tenant and each of its users may keep, and what they keep now.

Four things are limited, each per tenant (the platform admin's ``Tenant`` fields) and per
user (a tenant admin's :class:`~tenants.models.UserQuota`, within the tenant's):

- documents, chunks and bytes of chunk text: checked by the store inside the write's own
  transaction (:class:`rag_plugin.stores.usage.WriteLimits`), so racing writes cannot both
  pass; a user's limits apply to their own collections, the tenant's to everything;
- bytes of uploaded originals, and ingestion jobs queued or running: checked here, inside the
  submission's transaction, after a transaction-scoped advisory lock per user and per tenant,
  so two submissions take turns between the count and their commit.

A refusal is ``QuotaExceededError`` (413: stored data stays until it is deleted) or, for a
full queue, ``QueueFullError`` (429: it empties by itself); nothing of the request is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Q, Sum
from django_tenants.utils import get_public_schema_name, schema_context

from portal.rag.errors import QueueFullError
from portal.rag.runtime import store_for
from portal.rag.scope import owner_for
from rag_plugin.exceptions import QuotaExceededError
from rag_plugin.stores.usage import Usage, UsageLimits, WriteLimits
from tenants.models import IngestJob, Limits, StoredFile, Tenant, UserQuota

_ACTIVE = (IngestJob.State.QUEUED, IngestJob.State.RUNNING)


@dataclass(frozen=True)
class Quota:
    """One holder's limits (None: no limit)."""

    documents: int | None = None
    chunks: int | None = None
    text_bytes: int | None = None
    file_bytes: int | None = None
    queued_jobs: int | None = None

    @classmethod
    def of(cls, limits: Limits | None) -> Quota:
        if limits is None:
            return cls()
        return cls(
            limits.max_documents,
            limits.max_chunks,
            limits.max_text_bytes,
            limits.max_file_bytes,
            limits.max_queued_jobs,
        )

    def store_limits(self) -> UsageLimits:
        return UsageLimits(self.documents, self.chunks, self.text_bytes)


@dataclass(frozen=True)
class Held:
    """What a holder keeps now."""

    stored: Usage
    file_bytes: int
    queued_jobs: int


def _schema() -> str:
    return str(connection.schema_name)  # type: ignore[attr-defined]


def tenant_quota(schema_name: str | None = None) -> Quota:
    """The limits the platform admin set for the tenant (the current one by default)."""
    schema_name = schema_name or _schema()
    # The public schema's registry: a tenant schema has a table of the same name.
    with schema_context(get_public_schema_name()):
        tenant = Tenant.objects.filter(schema_name=schema_name).first()
    return Quota.of(tenant)


def user_quota(user: AbstractBaseUser) -> Quota:
    """The limits a tenant admin set for ``user`` (none without a row)."""
    return Quota.of(UserQuota.objects.filter(user_id=user.pk).first())


def _username(user: AbstractBaseUser) -> str:
    return f"user '{user.get_username()}'"


def write_limits(user: AbstractBaseUser, *, shared: bool) -> WriteLimits:
    """The limits of ``user``'s write: theirs on their own collections, the tenant's always
    (a shared collection is the tenant's, whoever writes it)."""
    owner = UsageLimits() if shared else user_quota(user).store_limits()
    return WriteLimits(
        owner=owner,
        store=tenant_quota().store_limits(),
        owner_name=_username(user),
        store_name="tenant",
    )


def _lock(*parts: object) -> None:
    """A lock held until the transaction ends (the caller's ``transaction.atomic``)."""
    name = ":".join(["rag-quota", _schema(), *(str(p) for p in parts)])
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [name])


def check_queued_jobs(user: AbstractBaseUser, adding: int) -> None:
    """Refuse ``adding`` more queued jobs past the user's or the tenant's limit (call inside
    the transaction that queues them)."""
    checks = (
        (_username(user), user_quota(user).queued_jobs, Q(user_id=user.pk)),
        ("tenant", tenant_quota().queued_jobs, Q()),
    )
    for scope, limit, whose in checks:
        if limit is None:
            continue
        _lock("jobs", scope)
        queued = IngestJob.objects.filter(whose, state__in=_ACTIVE).count()
        if queued + adding > limit:
            raise QueueFullError(scope, limit, queued, adding)


def _file_bytes(whose: Q) -> int:
    total = StoredFile.objects.filter(whose).aggregate(total=Sum("size"))["total"]
    return int(total or 0)


def check_file_bytes(user: AbstractBaseUser, *, shared: bool, adding: int) -> None:
    """Refuse keeping ``adding`` more bytes of originals past the user's limit (their own
    collections' files) or the tenant's (all files); call inside the transaction that keeps
    them."""
    checks: list[tuple[str, int | None, Q]] = []
    if not shared:
        mine = Q(user_id=user.pk, shared=False)
        checks.append((_username(user), user_quota(user).file_bytes, mine))
    checks.append(("tenant", tenant_quota().file_bytes, Q()))
    for scope, limit, whose in checks:
        if limit is None:
            continue
        _lock("files", scope)
        kept = _file_bytes(whose)
        if kept + adding > limit:
            raise QuotaExceededError(scope, "bytes of uploaded files", limit, kept, adding)


def user_held(user: AbstractBaseUser) -> Held:
    """What ``user`` keeps: their own collections, their files and their active jobs."""
    return Held(
        store_for(_schema()).usage(owner=owner_for(user)),
        _file_bytes(Q(user_id=user.pk, shared=False)),
        IngestJob.objects.filter(user_id=user.pk, state__in=_ACTIVE).count(),
    )


def tenant_held(schema_name: str | None = None) -> Held:
    """What the tenant keeps in all (run in its schema)."""
    return Held(
        store_for(schema_name or _schema()).usage(everyone=True),
        _file_bytes(Q()),
        IngestJob.objects.filter(state__in=_ACTIVE).count(),
    )
