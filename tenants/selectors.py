"""Reads on tenant data (run inside the tenant's schema)."""

from __future__ import annotations

from tenants.models import ApiTokenGeneration, RagSource


def rag_source_enabled(*, name: str) -> bool:
    """True only if the allowlist has an enabled entry for ``name`` (default deny)."""
    return RagSource.objects.filter(name=name, enabled=True).exists()


def enabled_rag_sources() -> set[str]:
    """The names of every enabled allowlist entry."""
    return set(RagSource.objects.filter(enabled=True).values_list("name", flat=True))


def api_token_generation(*, user_id: int) -> int:
    """The user's current API token generation: how many times its tokens were revoked."""
    generation = (
        ApiTokenGeneration.objects.filter(user_id=user_id)
        .values_list("generation", flat=True)
        .first()
    )
    return generation or 0
