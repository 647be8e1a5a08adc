"""Writes on tenants and their users (HackSoft style: keyword-only, typed, atomic)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AbstractUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_tenants.utils import get_public_schema_name, schema_context

from portal.rag import audit
from tenants.models import Domain, Tenant


@dataclass(frozen=True)
class Outcome:
    """What an idempotent ``ensure_*`` call found or made."""

    label: str
    created: bool

    def describe(self) -> str:
        return f"{'created' if self.created else 'exists '}  {self.label}"


def tenant_ensure(*, schema_name: str, name: str, domains: list[str]) -> tuple[Tenant, Outcome]:
    """Return the tenant with that schema, creating it (schema, migrations, domains) if absent.

    Domains are added if missing; the first one is the primary domain.
    """
    tenant = Tenant.objects.filter(schema_name=schema_name).first()
    created = tenant is None
    if tenant is None:
        # Saving a new tenant creates and migrates its schema (auto_create_schema).
        tenant = Tenant(schema_name=schema_name, name=name)
        tenant.save()
    for position, host in enumerate(domains):
        Domain.objects.get_or_create(
            domain=host, defaults={"tenant": tenant, "is_primary": position == 0}
        )
    return tenant, Outcome(f"tenant {schema_name} ({', '.join(domains)})", created)


def user_ensure(
    *,
    schema_name: str,
    username: str,
    password: str,
    email: str = "",
    is_admin: bool = False,
) -> Outcome:
    """Create the user in the tenant's schema if absent, or reset its password and role."""
    with schema_context(schema_name), transaction.atomic():
        user_model = get_user_model()
        user: AbstractUser | None = user_model.objects.filter(username=username).first()
        created = user is None
        if user is None:
            user = user_model(username=username)
        user.email = email
        user.is_staff = is_admin
        user.is_superuser = is_admin
        user.is_active = True
        user.set_password(password)
        user.save()
    role = "admin" if is_admin else "user"
    where = "platform" if schema_name == get_public_schema_name() else schema_name
    return Outcome(f"{role:5} {username} in {where}", created)


def rag_source_set(
    *, schema_name: str, name: str, enabled: bool, note: str = "", actor: str = ""
) -> Outcome:
    """Create or update an allowlist entry of the tenant (what the admin form does)."""
    from tenants.models import RagSource

    with schema_context(schema_name), transaction.atomic():
        source, created = RagSource.objects.get_or_create(
            name=name, defaults={"enabled": enabled, "note": note, "created_by": actor}
        )
        source.enabled = enabled
        if note:
            source.note = note
        source.updated_by = actor
        source.full_clean()
        source.save()
    state = "enabled" if enabled else "disabled"
    return Outcome(f"source {name} {state} in {schema_name}", created)


def api_tokens_revoke(*, user: AbstractBaseUser, actor: str = "") -> int:
    """End every API token issued to ``user`` so far; return the user's new token generation.

    Runs in the current schema (the admin's tenant). The account and its password are left as
    they are: the user can log in again and get a new token.
    """
    from tenants.models import ApiTokenGeneration

    with transaction.atomic():
        ApiTokenGeneration.objects.get_or_create(user_id=user.pk)
        ApiTokenGeneration.objects.filter(user_id=user.pk).update(
            generation=F("generation") + 1, revoked_at=timezone.now(), revoked_by=actor
        )
        generation = ApiTokenGeneration.objects.get(user_id=user.pk).generation
        audit.record(
            "user.tokens_revoke",
            actor=_by_name(actor),
            object_type="user",
            object_id=str(user.pk),
            after={"username": user.get_username(), "generation": generation},
        )
        return generation


def _by_name(username: str) -> AbstractBaseUser | None:
    """The acting user named ``username`` in this schema, if there is one."""
    return get_user_model().objects.filter(username=username).first() if username else None
