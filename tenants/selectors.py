"""Reads on tenant data (run inside the tenant's schema)."""

from __future__ import annotations

from tenants.models import RagSource


def rag_source_enabled(*, name: str) -> bool:
    """True only if the allowlist has an enabled entry for ``name`` (default deny)."""
    return RagSource.objects.filter(name=name, enabled=True).exists()


def enabled_rag_sources() -> set[str]:
    """The names of every enabled allowlist entry."""
    return set(RagSource.objects.filter(enabled=True).values_list("name", flat=True))
