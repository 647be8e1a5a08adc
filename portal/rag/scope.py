"""Who may touch which collection: user scoping and the tenant's source allowlist (T3, T4).

A user's collection ``docs`` is stored under the owner ``user:<id>`` inside the tenant's
schema, so two users' ``docs`` never meet; tenant-shared collections have no owner and are
written by tenant admins, read by every user of the tenant. The API only ever shows the
unscoped name. Every request names its source (the unscoped collection name), which must have
an enabled allowlist entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from portal.rag.errors import ForbiddenError, SourceNotAllowedError
from portal.rag.runtime import store_for
from rag_plugin.stores.base import Store, validate_collection_name
from tenants.selectors import rag_source_enabled


def owner_for(user: AbstractBaseUser) -> str:
    """The store owner of a user's private collections."""
    return f"user:{user.pk}"


@dataclass(frozen=True)
class Scope:
    """A request's view of the tenant's RAG data: its store and the caller's owner key."""

    store: Store
    schema_name: str
    owner: str | None
    user: AbstractBaseUser


def scope_for(
    *, user: AbstractBaseUser, collection: str | None, shared: bool = False, write: bool = False
) -> Scope:
    """Check the collection name and the allowlist, then return the caller's scope.

    ``shared`` selects the tenant-shared collections: anyone may read them, only tenant
    admins (staff) may write them.
    """
    if collection is not None:
        validate_collection_name(collection)
        if not rag_source_enabled(name=collection):
            raise SourceNotAllowedError(collection)
    if shared and write and not getattr(user, "is_staff", False):
        raise ForbiddenError("Only tenant admins may change shared collections.")
    schema_name = connection.schema_name  # type: ignore[attr-defined]
    return Scope(
        store=store_for(schema_name),
        schema_name=schema_name,
        owner=None if shared else owner_for(user),
        user=user,
    )
