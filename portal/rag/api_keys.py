"""API keys (SPEC O8): long-lived credentials for pipelines, scoped to named collections.

A key is ``rk_<prefix>_<secret>``: the prefix finds its row (:class:`tenants.models.ApiKey`,
in the tenant's schema, so a key of one tenant is unknown on every other), the secret is
checked against the SHA-256 kept there. A request signed in with a key acts as the key's user
narrowed to its :class:`~portal.rag.scope.Grant`, which every scope check applies.

A user makes keys for their own collections; a tenant admin for any user of the tenant (a
service account, say). Only a person makes keys: a request signed in with a key cannot.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from portal.rag import audit
from portal.rag.errors import ForbiddenError, SourceNotAllowedError
from portal.rag.scope import Grant, grant_of, grant_user
from rag_plugin.exceptions import InvalidInputError, NotFoundError
from rag_plugin.stores.base import validate_collection_name
from tenants.models import ApiKey
from tenants.selectors import rag_source_enabled

KEY_PREFIX = "rk_"
_PREFIX_CHARS = 12
# A key's use is recorded at most this often: a write per request would cost every search.
_LAST_USED_EVERY = timedelta(seconds=60)


@dataclass(frozen=True)
class KeyCollection:
    """One collection a key reaches: the user's own ``name``, or the tenant's shared one."""

    name: str
    shared: bool = False


@dataclass(frozen=True)
class MadeKey:
    key: ApiKey
    secret: str  # the whole ``rk_...`` string, shown once


def max_days() -> int:
    return int(settings.RAG_API["API_KEY_MAX_DAYS"])


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_create(
    *,
    actor: AbstractBaseUser,
    user: AbstractBaseUser,
    label: str,
    collections: Sequence[KeyCollection],
    access: str,
    expires_at: datetime,
) -> MadeKey:
    """Make a key for ``user`` (the actor themselves, or any user when a tenant admin makes
    it) after checking every collection against the allowlist and the user's rights."""
    if grant_of(actor) is not None:
        raise ForbiddenError("An API key cannot make API keys; sign in as a person to do so.")
    if actor.pk != user.pk and not getattr(actor, "is_staff", False):
        raise ForbiddenError("Only tenant admins may make API keys for other users.")
    label = label.strip()
    if not label or len(label) > 100:
        raise InvalidInputError("label must be 1 to 100 characters, e.g. 'nightly import'.")
    if access not in ApiKey.Access.values:
        raise InvalidInputError(f"access must be 'read' or 'read_write', got {access!r}.")
    wanted = _checked_collections(user, collections, write=access == ApiKey.Access.READ_WRITE)
    now = timezone.now()
    if expires_at <= now:
        raise InvalidInputError("expires_at must be in the future.")
    if expires_at > now + timedelta(days=max_days()):
        raise InvalidInputError(
            f"An API key may live at most {max_days()} days; choose an earlier expires_at."
        )
    prefix = secrets.token_hex(_PREFIX_CHARS // 2)
    secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        key = ApiKey.objects.create(
            user_id=user.pk,
            label=label,
            prefix=prefix,
            secret_hash=_digest(secret),
            access=access,
            collections=[{"name": c.name, "shared": c.shared} for c in wanted],
            expires_at=expires_at,
            created_by=actor.get_username(),
        )
        audit.record(
            "api_key.create",
            actor=actor,
            object_type="api_key",
            object_id=str(key.pk),
            after=_described(key),
        )
    return MadeKey(key, secret)


def _checked_collections(
    user: AbstractBaseUser, collections: Sequence[KeyCollection], *, write: bool
) -> list[KeyCollection]:
    if not collections:
        raise InvalidInputError("Name at least one collection the key may reach.")
    unique = list(dict.fromkeys(collections))
    for item in unique:
        validate_collection_name(item.name)
        if not rag_source_enabled(name=item.name):
            raise SourceNotAllowedError(item.name)
        if item.shared and write and not getattr(user, "is_staff", False):
            raise ForbiddenError(
                f"'{user.get_username()}' may not write the shared collection '{item.name}', "
                "so a read_write key of theirs cannot either; make it read-only."
            )
    return unique


def api_key_revoke(*, actor: AbstractBaseUser, key_id: int | str) -> ApiKey:
    """Revoke one of the actor's keys (any key of the tenant for a tenant admin); revoking
    a revoked key changes nothing. Any other id, or one that is no number, is not found."""
    number = int(key_id) if str(key_id).isascii() and str(key_id).isdigit() else None
    with transaction.atomic():
        key = (
            visible_keys(actor).select_for_update(of=("self",)).filter(pk=number).first()
            if number is not None and number < 2**63
            else None
        )
        if key is None:
            raise NotFoundError(f"API key {key_id} not found among your keys.")
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.revoked_by = actor.get_username()
            key.save(update_fields=["revoked_at", "revoked_by"])
            audit.record(
                "api_key.revoke",
                actor=actor,
                object_type="api_key",
                object_id=str(key.pk),
                before={"label": key.label, "user": key.user.get_username()},
            )
    return key


def visible_keys(actor: AbstractBaseUser) -> QuerySet[ApiKey]:
    """The keys ``actor`` may see: their own, or the tenant's for a tenant admin (never under
    an API key: keys do not manage keys)."""
    keys = ApiKey.objects.select_related("user")
    if grant_of(actor) is not None:
        return keys.none()
    return keys if getattr(actor, "is_staff", False) else keys.filter(user_id=actor.pk)


def is_api_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


def user_for_api_key(token: str) -> AbstractBaseUser | None:
    """The active user a valid key acts as, narrowed to its grant; None for a key that is
    unknown on this tenant, wrong, revoked or expired."""
    prefix, _, rest = token.removeprefix(KEY_PREFIX).partition("_")
    if len(prefix) != _PREFIX_CHARS or not rest:
        return None
    key = ApiKey.objects.select_related("user").filter(prefix=prefix).first()
    if key is None or not hmac.compare_digest(key.secret_hash, _digest(token)):
        return None
    now = timezone.now()
    if key.revoked_at is not None or key.expires_at <= now or not key.user.is_active:
        return None
    if key.last_used_at is None or now - key.last_used_at >= _LAST_USED_EVERY:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    grant = Grant(
        frozenset((str(c["name"]), bool(c["shared"])) for c in key.collections),
        write=key.access == ApiKey.Access.READ_WRITE,
    )
    return grant_user(key.user, grant)


def _described(key: ApiKey) -> dict[str, object]:
    return {
        "label": key.label,
        "user": key.user.get_username(),
        "access": key.access,
        "collections": key.collections,
        "expires_at": key.expires_at.isoformat(),
    }
