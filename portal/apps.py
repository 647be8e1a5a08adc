from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_delete


class PortalConfig(AppConfig):
    """The portal as an app: its management commands (bootstrap_demo), admin pages, start-up
    checks, and the tenant's RAG data outside its schema deleted with the tenant."""

    name = "portal"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from portal.checks import embedding_settings, rag_store_settings, replica_settings

        checks.register(rag_store_settings)
        checks.register(replica_settings)
        checks.register(embedding_settings)
        post_delete.connect(_tenant_deleted, sender="tenants.Tenant", weak=False)


def _tenant_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    from portal.rag.runtime import drop_tenant_data

    drop_tenant_data(instance.schema_name)
