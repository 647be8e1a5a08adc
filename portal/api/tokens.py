"""Bearer tokens: signed, expiring, bound to one tenant and to the user's current password.

A token is ``django.core.signing`` output over ``{"uid": ..., "pv": ..., "tv": ...}`` with a
salt that names the tenant's schema, so a token minted by one tenant fails the signature check
on every other tenant (user 1 of acme is not user 1 of globex). ``pv`` is a digest of the user's
password hash: changing the password revokes every token issued before. ``tv`` is the user's
token generation (``tenants.models.ApiTokenGeneration``), which a tenant admin's "revoke API
tokens" bumps. No token is stored server-side, so any number of app processes accept the same
tokens; checking one is the single user query it always was (the generation is joined in).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing
from django.core.exceptions import ObjectDoesNotExist

from tenants.selectors import api_token_generation

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


def _joined_token_generation(user: AbstractBaseUser) -> int:
    """The generation ``select_related("api_token_generation")`` loaded with the user."""
    try:
        return int(user.api_token_generation.generation)  # type: ignore[attr-defined]
    except ObjectDoesNotExist:  # never revoked
        return 0


def token_ttl_seconds() -> int:
    return int(settings.RAG_API["TOKEN_TTL_SECONDS"])


def issue_token(*, user: AbstractBaseUser, schema_name: str) -> IssuedToken:
    """Mint a token for ``user`` of the tenant whose schema is ``schema_name``."""
    generation = api_token_generation(user_id=user.pk)
    payload = {"uid": user.pk, "pv": _password_version(user), "tv": generation}
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
    users = get_user_model().objects.select_related("api_token_generation")
    user = users.filter(pk=uid, is_active=True).first()
    if user is None or payload.get("pv") != _password_version(user):
        return None
    if payload.get("tv", 0) != _joined_token_generation(user):  # revoked by a tenant admin
        return None
    return user
