"""Tenant and Domain: the public-schema records that route a host name to a schema."""

from __future__ import annotations

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
