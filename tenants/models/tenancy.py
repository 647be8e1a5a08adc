"""Tenant and Domain: the public-schema records that route a host name to a schema, and the
limits (SPEC O7) on what a tenant and each of its users keep."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django_tenants.models import DomainMixin, TenantMixin


class Limits(models.Model):
    """What a holder may keep (SPEC O7); empty is no limit. The platform admin sets a
    tenant's, a tenant admin each user's within them (:mod:`portal.rag.quotas`)."""

    max_documents = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Documents stored. Empty: no limit."
    )
    max_chunks = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Chunks stored. Empty: no limit."
    )
    max_text_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes of chunk text stored (UTF-8). Empty: no limit."
    )
    max_file_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes of uploaded originals kept. Empty: no limit."
    )
    max_queued_jobs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Ingestion jobs queued or running. Empty: no limit."
    )

    LIMIT_FIELDS = (
        "max_documents",
        "max_chunks",
        "max_text_bytes",
        "max_file_bytes",
        "max_queued_jobs",
    )

    class Meta:
        abstract = True


class Tenant(TenantMixin, Limits):  # type: ignore[misc,django-manager-missing]
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


class UserQuota(Limits):
    """One user's limits, within the tenant's (SPEC O7); a user without a row has only the
    tenant's."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="quota"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user quota"

    def __str__(self) -> str:
        return f"quota of {self.user}"
