"""Who may touch which collection: user scoping and the tenant's source allowlist (T3, T4).

A user's collection ``docs`` is stored under the owner ``user:<id>`` inside the tenant's
schema, so two users' ``docs`` never meet; tenant-shared collections have no owner and are
written by tenant admins, read by every user of the tenant. The API only ever shows the
unscoped name. Every request names its source (the unscoped collection name), which must have
an enabled allowlist entry.

A request authenticated by an API key (SPEC O8) acts as the key's user, narrowed to the key's
:class:`Grant`: the authentication attaches it to the user object it returns
(:func:`grant_user`), so every check here sees it wherever the user goes, and a user loaded
any other way (a session, a login token, a worker) has none.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection

from portal.rag.consistency import follow_user
from portal.rag.errors import ForbiddenError, SourceNotAllowedError
from portal.rag.runtime import store_for
from rag_plugin.stores.base import Store, validate_collection_name
from tenants.selectors import rag_source_enabled


@dataclass(frozen=True)
class Grant:
    """What an API key may reach: the collections it names, ``(name, shared)``, and whether
    it may write them."""

    collections: frozenset[tuple[str, bool]]
    write: bool

    def reaches(self, collection: str, shared: bool) -> bool:
        return (collection, shared) in self.collections


_GRANT_ATTRIBUTE = "_rag_api_key_grant"


def grant_user(user: AbstractBaseUser, grant: Grant) -> AbstractBaseUser:
    """``user`` narrowed to ``grant`` for the rest of the request (the object is the request's
    own: authentication loads a fresh one per request)."""
    setattr(user, _GRANT_ATTRIBUTE, grant)
    return user


def grant_of(user: AbstractBaseUser) -> Grant | None:
    """The API key's grant the user acts under, or None (every other way of signing in)."""
    grant = getattr(user, _GRANT_ATTRIBUTE, None)
    return grant if isinstance(grant, Grant) else None


def check_grant(user: AbstractBaseUser, collection: str, shared: bool, write: bool) -> None:
    """Refuse (403) a key that does not name the collection, or writes with a read-only key."""
    grant = grant_of(user)
    if grant is None:
        return
    if not grant.reaches(collection, shared):
        kind = "shared collection" if shared else "collection"
        raise ForbiddenError(
            f"This API key does not reach the {kind} '{collection}'; its owner or a tenant "
            "admin can make a key that does."
        )
    if write and not grant.write:
        raise ForbiddenError("This API key may only read; writing needs a read_write key.")


def reachable(user: AbstractBaseUser, names: Iterable[str], shared: bool) -> list[str]:
    """The collections of ``names`` the caller's credential reaches (all, without a key)."""
    grant = grant_of(user)
    return [n for n in names if grant is None or grant.reaches(n, shared)]


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
    if collection is not None:
        check_grant(user, collection, shared, write)
    elif write and (grant := grant_of(user)) is not None and not grant.write:
        raise ForbiddenError("This API key may only read; writing needs a read_write key.")
    schema_name = connection.schema_name  # type: ignore[attr-defined]
    follow_user(user)  # with standbys: the reads that follow see this user's last write
    return Scope(
        store=store_for(schema_name),
        schema_name=schema_name,
        owner=None if shared else owner_for(user),
        user=user,
    )


def admin_scope(*, actor: AbstractBaseUser, owner: AbstractBaseUser | None) -> Scope:
    """A tenant admin's view of one owner's collections (``owner`` None: the tenant's shared
    ones) for the admin pages, which manage every collection of the tenant whatever the
    allowlist says. Anyone but a tenant admin (a superuser of the tenant) is refused."""
    if not getattr(actor, "is_superuser", False):
        raise ForbiddenError("Only tenant admins manage the tenant's RAG data.")
    schema_name = connection.schema_name  # type: ignore[attr-defined]
    return Scope(
        store=store_for(schema_name),
        schema_name=schema_name,
        owner=None if owner is None else owner_for(owner),
        user=actor,
    )
