"""Bearer tokens: signed, expiring, bound to one tenant and to the user's current password.

A token is ``django.core.signing`` output over ``{"uid": ..., "pv": ...}`` with a salt that
names the tenant's schema, so a token minted by one tenant fails the signature check on every
other tenant (user 1 of acme is not user 1 of globex). ``pv`` is a digest of the user's password
hash: changing the password revokes every token issued before. Nothing is stored server-side,
so any number of app processes accept the same tokens.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing

TOKEN_TYPE = "Bearer"  # noqa: S105 - the auth scheme name, not a secret


@dataclass(frozen=True)
class IssuedToken:
    access_token: str
    token_type: str
    expires_in: int


def _salt(schema_name: str) -> str:
    return f"portal.api.token:{schema_name}"


def _password_version(user: AbstractBaseUser) -> str:
    return hashlib.sha256(user.password.encode()).hexdigest()[:16]


def token_ttl_seconds() -> int:
    return int(settings.RAG_API["TOKEN_TTL_SECONDS"])


def issue_token(*, user: AbstractBaseUser, schema_name: str) -> IssuedToken:
    """Mint a token for ``user`` of the tenant whose schema is ``schema_name``."""
    payload = {"uid": user.pk, "pv": _password_version(user)}
    token = signing.dumps(payload, salt=_salt(schema_name), compress=True)
    return IssuedToken(token, TOKEN_TYPE, token_ttl_seconds())


def user_for_token(*, token: str, schema_name: str) -> AbstractBaseUser | None:
    """Return the active user the token was issued to on this tenant, or None if invalid."""
    try:
        payload = signing.loads(token, salt=_salt(schema_name), max_age=token_ttl_seconds())
    except signing.BadSignature:  # includes SignatureExpired
        return None
    uid = payload.get("uid") if isinstance(payload, dict) else None
    if not isinstance(uid, int):
        return None
    user = get_user_model().objects.filter(pk=uid, is_active=True).first()
    if user is None or payload.get("pv") != _password_version(user):
        return None
    return user
