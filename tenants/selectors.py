"""Reads on tenant data (run inside the tenant's schema)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from tenants.models import ApiTokenGeneration, RagSource


def rag_source_enabled(*, name: str) -> bool:
    """True only if the allowlist has an enabled entry for ``name`` (default deny)."""
    return RagSource.objects.filter(name=name, enabled=True).exists()


def enabled_rag_sources() -> set[str]:
    """The names of every enabled allowlist entry."""
    return set(RagSource.objects.filter(enabled=True).values_list("name", flat=True))


def tenant_admins() -> list[str]:
    """Who a user asks to allow a source: the tenant's active admins, by name and address."""
    admins = get_user_model().objects.filter(is_staff=True, is_active=True).order_by("username")
    return [
        f"{admin.get_username()} <{admin.email}>" if admin.email else admin.get_username()
        for admin in admins
    ]


def api_token_generation(*, user_id: int) -> int:
    """The user's current API token generation: how many times its tokens were revoked."""
    generation = (
        ApiTokenGeneration.objects.filter(user_id=user_id)
        .values_list("generation", flat=True)
        .first()
    )
    return generation or 0
