"""``manage.py rag_audit_prune [--days N]``: the audit log's retention (SPEC O6)."""

from __future__ import annotations

import argparse
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django_tenants.utils import get_public_schema_name, get_tenant_model, schema_context

from portal.rag import audit


class Command(BaseCommand):
    help = (
        "Delete every tenant's audit events older than the retention (RAG_AUDIT_RETENTION_DAYS, "
        "or --days): the only deletion the audit table allows."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="keep this many days")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"] if options["days"] is not None else settings.RAG_AUDIT_RETENTION_DAYS
        if days < 1:
            raise CommandError(f"--days must be at least 1, got {days}.")
        tenants = get_tenant_model().objects.exclude(schema_name=get_public_schema_name())
        for tenant in tenants.order_by("schema_name"):
            with schema_context(tenant.schema_name):
                deleted = audit.prune(days)
            self.stdout.write(f"{tenant.schema_name}: {deleted} event(s) older than {days} days")
