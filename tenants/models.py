"""Tenant and Domain: the public-schema records that route a host name to a schema."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django_tenants.models import DomainMixin, TenantMixin


class Tenant(TenantMixin):  # type: ignore[misc]
    """One customer organisation; its data lives in the PostgreSQL schema ``schema_name``."""

    name = models.CharField(max_length=100)
    created_on = models.DateTimeField(auto_now_add=True)

    # Creating a tenant creates and migrates its schema in the same call.
    auto_create_schema = True
    auto_drop_schema = True

    def __str__(self) -> str:
        return f"{self.name} ({self.schema_name})"


class Domain(DomainMixin):  # type: ignore[misc]
    """A host name (e.g. ``acme.localhost``) that routes requests to its tenant."""

    def __str__(self) -> str:
        return str(self.domain)


class RagSource(models.Model):
    """One entry of a tenant's RAG source allowlist (SPEC T3).

    The allowlist denies by default: a source (a collection name as users see it) may be
    ingested into, searched or deleted only while an entry for it exists and is enabled.
    """

    name = models.CharField(
        max_length=63,
        unique=True,
        help_text="The collection name users see, e.g. 'docs'.",
        validators=[
            RegexValidator(
                r"^[A-Za-z_][A-Za-z0-9_]*$",
                "Use letters, digits and underscores, starting with a letter or underscore.",
            )
        ],
    )
    enabled = models.BooleanField(default=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=150, blank=True, editable=False)

    class Meta:
        ordering = ("name",)
        verbose_name = "RAG source"
        verbose_name_plural = "RAG source allowlist"

    def __str__(self) -> str:
        return f"{self.name} ({'enabled' if self.enabled else 'disabled'})"
